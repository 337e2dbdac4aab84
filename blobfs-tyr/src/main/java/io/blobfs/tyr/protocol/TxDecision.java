package io.blobfs.tyr.protocol;

/**
 * The actions of a {@link Request.Decide} and the outcomes its answer carries (as the
 * version of a commit answer, with no values).
 */
public final class TxDecision {
  /** To the coordinator: decide commit (unless a decision stands); the answer is the decision. */
  public static final int DECIDE_COMMIT = 1;
  /** To the coordinator: decide abort (unless a decision stands). */
  public static final int DECIDE_ABORT = 2;
  /**
   * To the coordinator, from a participant whose prepare timed out: the decision, or
   * {@link #PENDING}. A coordinator that never prepared the transaction decides abort.
   */
  public static final int QUERY = 3;
  /** To a participant: apply the decision commit (nothing if it is no longer prepared there). */
  public static final int APPLY_COMMIT = 4;
  /** To a participant: abort its prepared part. */
  public static final int APPLY_ABORT = 5;

  public static final int COMMITTED = 1;
  public static final int ABORTED = 2;
  /** Prepared on the coordinator, not decided, not timed out yet: ask again later. */
  public static final int PENDING = 3;
  /**
   * The answer to {@link #DECIDE_COMMIT} when commit is decided but the coordinator's own
   * part is not applied (or not confirmed by its backups) yet: the transaction is
   * committed, the coordinator retries its part, and the client still tells the others.
   */
  public static final int COMMITTED_NOT_APPLIED = 4;

  private TxDecision() {}

  public static String name(int outcome) {
    return switch (outcome) {
      case COMMITTED -> "committed";
      case ABORTED -> "aborted";
      case PENDING -> "pending";
      case COMMITTED_NOT_APPLIED -> "committed, not applied on the coordinator yet";
      default -> "outcome " + outcome;
    };
  }
}
