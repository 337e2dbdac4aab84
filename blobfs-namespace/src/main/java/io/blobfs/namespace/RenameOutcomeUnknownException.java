package io.blobfs.namespace;

import java.io.IOException;

/**
 * A rename without transactions (RADOS: {@link MarkedMove}, {@link MarkedReplace}) whose
 * commit timed out (it may or may not have applied) and whose lock was taken by another
 * client before the answer could be read back: the rename stalled past its lease
 * ({@code fs.blob.rename.lease}), and another client settled it and may have renamed the
 * file again since. What the names hold then no longer tells whether this rename
 * happened, so the caller is told neither "renamed" nor "changed nothing". The file is not
 * lost: it is under the old or the new name (unless changed since by other operations),
 * and the holder of its lock settles the move; the rename wrote nothing after the
 * timeout. Probe both names to learn where the file is; retrying the rename is safe.
 */
public final class RenameOutcomeUnknownException extends IOException {
  private static final long serialVersionUID = 1L;

  public RenameOutcomeUnknownException(String message, Throwable cause) {
    super(message, cause);
  }

  /** The rename {@code what} of {@code src} to {@code dst} lost its lock after {@code cause}. */
  static RenameOutcomeUnknownException lockLost(String what, FsPath src, FsPath dst,
      IOException cause) {
    return new RenameOutcomeUnknownException(what + ": its commit's outcome is unknown ("
        + cause.getMessage() + ") and it stalled past its lease, its lock taken by another"
        + " client before the outcome could be read back, so whether this rename happened"
        + " cannot be told. The file is not lost: it is under " + src + " or " + dst
        + " (unless changed since by other operations), and the holder of its lock settles"
        + " the move; this rename wrote nothing after the timeout", cause);
  }
}
