package io.blobfs.locality.crush;

/**
 * The map uses a feature this implementation does not compute (a bucket algorithm other than
 * straw2, weight sets, an object hash other than rjenkins, ...). Raised instead of returning a
 * possibly wrong answer.
 */
public class UnsupportedMapFeatureException extends CrushMapException {
  private static final long serialVersionUID = 1L;

  public UnsupportedMapFeatureException(String message) {
    super(message);
  }
}
