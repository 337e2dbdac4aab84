package io.blobfs.namespace;

import java.io.IOException;

/**
 * A rename over an existing file found another file at the destination than the one its
 * caller probed (written, replaced or removed since), and changed nothing. The caller
 * probes again and decides anew: the namespace never replaces a file it was not shown.
 */
public final class TargetChangedException extends IOException {
  private static final long serialVersionUID = 1L;

  public TargetChangedException(String message) {
    super(message);
  }
}
