package io.blobfs.tyr.protocol;

/** A frame or payload that does not follow the protocol. */
public final class MalformedFrameException extends Exception {
  private static final long serialVersionUID = 1L;

  public MalformedFrameException(String message) {
    super(message);
  }
}
