package io.blobfs.store;

import java.io.IOException;

/**
 * A transaction was aborted because its preconditions no longer held or another
 * transaction touched the same blobs. Nothing of it was applied; retrying may succeed.
 */
public class TransactionConflictException extends IOException {
  private static final long serialVersionUID = 1L;

  public TransactionConflictException(String message) {
    super(message);
  }
}
