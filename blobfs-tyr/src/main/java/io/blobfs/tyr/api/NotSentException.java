package io.blobfs.tyr.api;

/**
 * {@code UNAVAILABLE} before any byte of the call left this client (no connection, or its
 * handshake failed): nothing was done, so the call may be made elsewhere whatever it was.
 * Made by the client only; it never crosses the wire.
 */
public class NotSentException extends TyrException {
  private static final long serialVersionUID = 1L;

  public NotSentException(String message, Throwable cause) {
    super(ErrorCode.UNAVAILABLE, message, cause);
  }
}
