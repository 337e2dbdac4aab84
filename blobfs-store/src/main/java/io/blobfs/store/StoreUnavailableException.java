package io.blobfs.store;

import java.io.IOException;

/** The store did not answer within its configured timeout, or cannot be reached. */
public class StoreUnavailableException extends IOException {
  private static final long serialVersionUID = 1L;

  public StoreUnavailableException(String message, Throwable cause) {
    super(message, cause);
  }
}
