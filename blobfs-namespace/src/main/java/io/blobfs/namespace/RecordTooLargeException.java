package io.blobfs.namespace;

import java.io.IOException;

/**
 * A record that would pass the format's header limits ({@link FileRecord#MAX_STORED_HEADER}
 * without a rename's mark, 64 KiB with it): refused before anything is written.
 */
public class RecordTooLargeException extends IOException {
  private static final long serialVersionUID = 1L;

  public RecordTooLargeException(String why) {
    super(why);
  }
}
