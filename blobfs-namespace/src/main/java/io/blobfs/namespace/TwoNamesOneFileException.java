package io.blobfs.namespace;

import java.io.IOException;

/**
 * A rename over a file found both names holding one file (one file id), with no
 * interrupted rename in the file's lock to settle: a record copied outside the namespace,
 * or a rename cut off part-way whose lock no longer records it. Replacing one name with
 * the other would remove the data both names share, so nothing is changed, and retrying
 * changes nothing either. Recovery: {@code SweepOrphans -finish-renames}, then check both
 * names; to keep one, copy it to a new name first, since deleting either removes the
 * data of both.
 */
public final class TwoNamesOneFileException extends IOException {
  private static final long serialVersionUID = 1L;

  public TwoNamesOneFileException(String message) {
    super(message);
  }
}
