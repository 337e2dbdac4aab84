package io.blobfs.namespace;

import java.io.IOException;

/**
 * A rename over a file outlived its locks and had to take its copy back, and the file it
 * was to replace could not be put back at the destination: that file's lock was taken over
 * meanwhile (a sweeper may have removed its data), its data is no longer whole, or the
 * destination holds something else now. The destination no longer names the replaced
 * file; whatever is left of its data goes to the orphan sweeper. Not a "changed nothing".
 */
public final class ReplacedFileLostException extends IOException {
  private static final long serialVersionUID = 1L;

  public ReplacedFileLostException(String message, Throwable cause) {
    super(message, cause);
  }
}
