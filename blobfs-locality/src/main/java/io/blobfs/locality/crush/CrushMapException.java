package io.blobfs.locality.crush;

/** A map that this implementation cannot place with certainty: malformed or unsupported. */
public class CrushMapException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  public CrushMapException(String message) {
    super(message);
  }

  public CrushMapException(String message, Throwable cause) {
    super(message, cause);
  }
}
