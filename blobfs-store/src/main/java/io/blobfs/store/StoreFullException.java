package io.blobfs.store;

import java.io.IOException;

/**
 * The store refuses a write for lack of space (a full RADOS pool or quota). Deletes still
 * run, so that space can be freed: the namespace deletes without the lock blobs and
 * intents it would otherwise write first.
 */
public class StoreFullException extends IOException {
  private static final long serialVersionUID = 1L;

  public StoreFullException(String message) {
    super(message);
  }
}
