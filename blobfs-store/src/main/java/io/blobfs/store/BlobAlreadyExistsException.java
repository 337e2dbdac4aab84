package io.blobfs.store;

import java.io.IOException;

/** An exclusive create found the key taken. */
public class BlobAlreadyExistsException extends IOException {
  private static final long serialVersionUID = 1L;

  public BlobAlreadyExistsException(String key) {
    super("blob already exists: " + key);
  }
}
