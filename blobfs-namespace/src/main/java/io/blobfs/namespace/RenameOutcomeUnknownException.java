package io.blobfs.namespace;

import java.io.IOException;

/**
 * A file move without transactions (RADOS: {@link MarkedMove}, {@link MarkedReplace}) that
 * cannot tell whether its commit applied, because its lock was taken by another client
 * before it could tell: the rename stalled past its lease ({@code fs.blob.rename.lease}),
 * and the holder of the lock settled it and may have renamed the file again since. Two
 * causes lead here: a commit that timed out (it may or may not have applied), and a commit
 * answered with a conflict after which the names do not show a settler's fence (a call
 * resent by the store's client may have landed first). What the names hold then no longer
 * tells whether this move happened, so the caller is told neither "renamed" nor "changed
 * nothing". The file is not lost: it is under the old or the new name (unless changed
 * since by other operations), and the holder of its lock settles the move; the move wrote
 * nothing after it lost its lock. Probe both names to learn where the file is; retrying
 * the rename is safe.
 *
 * <p>A file rename ends with it. A directory rename ({@link DirectoryMove}) ends with it
 * at the file move it was on (the names in the message are that file's old and new
 * ones): the directory's intent is kept, and the same rename retried, or the next rename
 * or delete of the tree, finishes it.
 */
public final class RenameOutcomeUnknownException extends IOException {
  private static final long serialVersionUID = 1L;

  public RenameOutcomeUnknownException(String message, Throwable cause) {
    super(message, cause);
  }

  /** The rename {@code what} of {@code src} to {@code dst} lost its lock after {@code cause}. */
  static RenameOutcomeUnknownException lockLost(String what, FsPath src, FsPath dst,
      IOException cause) {
    return new RenameOutcomeUnknownException(what + ": whether its commit applied is unknown"
        + " (" + cause.getMessage() + ") and it stalled past its lease, its lock taken by"
        + " another client before the outcome could be read back, so whether this move of"
        + " the file happened cannot be told. The file is not lost: it is under " + src
        + " or " + dst + " (unless changed since by other operations), and the holder of"
        + " its lock settles the move; this move wrote nothing after it lost its lock (in a"
        + " directory rename, retrying that rename finishes it)", cause);
  }
}
