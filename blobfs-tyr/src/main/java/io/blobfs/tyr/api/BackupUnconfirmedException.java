package io.blobfs.tyr.api;

/**
 * A primary applied a write, at commit {@link #appliedVersion()} of its own, and a backup
 * did not confirm it: {@code UNAVAILABLE}, the outcome unknown to the caller (the write is
 * on the primary and maybe some backups, and the primary repairs the backups that lack
 * it). Typed on the wire by the error reply's detail (the applied version, never 0 for a
 * commit), not by its message: a client tells it from an unreachable primary by type.
 */
public class BackupUnconfirmedException extends TyrException {
  private static final long serialVersionUID = 1L;
  private final long appliedVersion;

  public BackupUnconfirmedException(String message, long appliedVersion, Throwable cause) {
    super(ErrorCode.UNAVAILABLE, message, cause);
    if (appliedVersion <= 0) {
      throw new IllegalArgumentException("applied version " + appliedVersion);
    }
    this.appliedVersion = appliedVersion;
  }

  /** The primary's commit number of the unconfirmed write. */
  public long appliedVersion() {
    return appliedVersion;
  }
}
