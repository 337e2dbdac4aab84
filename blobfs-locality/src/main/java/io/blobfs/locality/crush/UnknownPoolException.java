package io.blobfs.locality.crush;

/** A pool the OSD map does not have (never created, deleted, or a map older than the pool). */
public class UnknownPoolException extends CrushMapException {
  private static final long serialVersionUID = 1L;

  public UnknownPoolException(String message) {
    super(message);
  }
}
