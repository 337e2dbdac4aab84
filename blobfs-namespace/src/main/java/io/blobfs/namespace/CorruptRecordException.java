package io.blobfs.namespace;

import java.io.IOException;

/** A name's record could not be decoded: written by something else, or damaged. */
public class CorruptRecordException extends IOException {
  private static final long serialVersionUID = 1L;

  public CorruptRecordException(String key, String why) {
    super("corrupt BlobFS record at key '" + key + "': " + why);
  }
}
