package io.blobfs.tyr.api;

import java.io.IOException;

/**
 * A Týr call failed with a typed {@link ErrorCode}. Nothing of a failed transaction was
 * applied; {@link #isRetryable()} tells whether trying again may succeed.
 */
public class TyrException extends IOException {
  private static final long serialVersionUID = 1L;
  private final ErrorCode code;

  public TyrException(ErrorCode code, String message) {
    super(message);
    this.code = code;
  }

  public TyrException(ErrorCode code, String message, Throwable cause) {
    super(message, cause);
    this.code = code;
  }

  public ErrorCode code() {
    return code;
  }

  public boolean isRetryable() {
    return code.retryable;
  }
}
