package io.blobfs.store;

import java.io.IOException;

/**
 * A conditional call or a transaction was refused because its preconditions no longer
 * held (the blob is not at the version the caller read) or another transaction touched
 * the same blobs. Nothing of it was applied; re-reading and retrying may succeed.
 */
public class TransactionConflictException extends IOException {
  private static final long serialVersionUID = 1L;

  public TransactionConflictException(String message) {
    super(message);
  }
}
