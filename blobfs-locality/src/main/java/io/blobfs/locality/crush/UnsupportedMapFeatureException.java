package io.blobfs.locality.crush;

/**
 * The map uses a feature this increment does not compute (a bucket algorithm other than
 * straw2, erasure-coded pools, upmap, ...). Raised instead of returning a possibly wrong answer.
 */
public class UnsupportedMapFeatureException extends CrushMapException {
  private static final long serialVersionUID = 1L;

  public UnsupportedMapFeatureException(String message) {
    super(message);
  }
}
