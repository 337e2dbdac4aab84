package io.blobfs.store;

import java.io.FileNotFoundException;

/** The blob a call names does not exist. */
public class BlobNotFoundException extends FileNotFoundException {
  private static final long serialVersionUID = 1L;

  public BlobNotFoundException(String key) {
    super("no such blob: " + key);
  }
}
