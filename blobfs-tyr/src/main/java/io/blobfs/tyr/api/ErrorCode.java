package io.blobfs.tyr.api;

/**
 * Why a Týr call failed; carried on the wire as its {@link #wire} number, so numbers are
 * never reused or renumbered.
 */
public enum ErrorCode {
  /** The blob does not exist. */
  NOT_FOUND(1, false),
  /** Exclusive create of a blob that exists. */
  EXISTS(2, false),
  /** A transaction read a version that changed, or met a precondition that broke. */
  CONFLICT(3, true),
  /** Compare-and-set found another value; the transaction was not applied. */
  CAS_FAILED(4, false),
  /** Malformed or out-of-range request: the caller's bug, retrying won't help. */
  BAD_REQUEST(5, false),
  /** A frame, key or blob over the server's limits. */
  TOO_LARGE(6, false),
  /** No or wrong shared secret. */
  UNAUTHENTICATED(7, false),
  /** The server could not be reached or did not answer in time. */
  UNAVAILABLE(8, true),
  /** The server is shutting down or its log failed; nothing of the request was applied. */
  SERVER_ERROR(9, true),
  /** The peer speaks another protocol version. */
  UNSUPPORTED_VERSION(10, false),
  /**
   * A cluster node refused the request: made under another ring epoch, or for a key the
   * node does not hold. The reply carries the node's ring; nothing was applied.
   */
  WRONG_EPOCH(11, true),
  /**
   * A cluster node just UP again refused a request for a key it takes back from the
   * members that stood in for it (or a scan) until their last writes are in; the reply
   * carries its ring as WRONG_EPOCH's does. Nothing was applied.
   */
  HANDING_OVER(12, true),
  /**
   * Between cluster nodes only: a backup refused a replicated batch whole because it
   * changes in part a key the backup has fenced (a share it may not hold, or a batch from a
   * primary that does not read a refusal of part of a batch). An answer, as WRONG_EPOCH's:
   * nothing of the batch was applied, so the primary fails that batch alone and the
   * writes behind it go on (session 14). A node older than that reads it as
   * SERVER_ERROR and numbers its stream afresh, as it did for the UNAVAILABLE it was.
   */
  FENCED(13, true);

  public final int wire;
  public final boolean retryable;

  ErrorCode(int wire, boolean retryable) {
    this.wire = wire;
    this.retryable = retryable;
  }

  public static ErrorCode ofWire(int wire) {
    for (ErrorCode c : values()) {
      if (c.wire == wire) {
        return c;
      }
    }
    return SERVER_ERROR;
  }
}
