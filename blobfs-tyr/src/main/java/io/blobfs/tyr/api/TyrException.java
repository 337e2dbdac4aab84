package io.blobfs.tyr.api;

import java.io.IOException;

/**
 * A Týr call failed with a typed {@link ErrorCode}. Nothing of a failed transaction was
 * applied; {@link #isRetryable()} tells whether trying again may succeed.
 */
public class TyrException extends IOException {
  private static final long serialVersionUID = 1L;
  private final ErrorCode code;

  public TyrException(ErrorCode code, String message) {
    super(message);
    this.code = code;
  }

  public TyrException(ErrorCode code, String message, Throwable cause) {
    super(message, cause);
    this.code = code;
  }

  public ErrorCode code() {
    return code;
  }

  public boolean isRetryable() {
    return code.retryable;
  }

  /** What a node's CONFLICT says when a key is held by a prepared cross-node transaction. */
  public static final String HELD = "is held by a prepared transaction";

  /**
   * Whether {@code e}, or one of its causes, is a node's refusal of a key held by a
   * prepared cross-node transaction: nothing was done, and the key is free again once
   * that transaction is decided, so the same call may simply be made again.
   */
  public static boolean heldByPrepared(Throwable e) {
    for (Throwable c = e; c != null; c = c.getCause()) {
      if (c instanceof TyrException t && t.code == ErrorCode.CONFLICT
          && t.getMessage() != null && t.getMessage().contains(HELD)) {
        return true;
      }
    }
    return false;
  }

  /** What an UNAVAILABLE says when the call never reached the server (no connection). */
  public static final String NOT_CONNECTED = "(nothing was sent)";

  /**
   * What a primary says of a write it applied but a backup did not confirm (the backup a
   * ring behind, or refusing): the primary is reachable, and the outcome is unknown. For
   * people: the type, {@link BackupUnconfirmedException}, is what clients test.
   */
  public static final String BACKUP_UNCONFIRMED = "a backup did not confirm it";

  /**
   * Whether a primary answered that a backup did not confirm a write it applied (a
   * {@link BackupUnconfirmedException} among the causes): the version it applied is
   * {@link #unconfirmedVersion}.
   */
  public static boolean backupUnconfirmed(Throwable e) {
    return unconfirmedVersion(e) > 0;
  }

  /** The primary's version of an unconfirmed write among {@code e}'s causes, else 0. */
  public static long unconfirmedVersion(Throwable e) {
    for (Throwable c = e; c != null; c = c.getCause()) {
      if (c instanceof BackupUnconfirmedException b) {
        return b.appliedVersion();
      }
    }
    return 0;
  }

  /**
   * Whether {@code e}, or one of its causes, failed before any byte of the call left this
   * client (a {@link NotSentException}): nothing was done, so the call may be made
   * elsewhere whatever it was. Not if a primary answered first (a backup it could not
   * reach is its link, not ours).
   */
  public static boolean neverSent(Throwable e) {
    for (Throwable c = e; c != null; c = c.getCause()) {
      if (c instanceof BackupUnconfirmedException) {
        return false;
      }
      if (c instanceof NotSentException) {
        return true;
      }
    }
    return false;
  }
}
