package io.blobfs.tyr.ring;

import io.blobfs.tyr.api.ErrorCode;
import io.blobfs.tyr.api.TyrException;

/**
 * A node refused a request: it was made under another ring epoch than the node's, or for
 * a key the node does not hold under its ring. Carries the node's ring, so the client can
 * adopt it (if newer) and send the request to the right node; nothing was done.
 */
public class WrongEpochException extends TyrException {
  private static final long serialVersionUID = 1L;
  private final transient Ring ring;

  public WrongEpochException(String message, Ring ring) {
    this(ErrorCode.WRONG_EPOCH, message, ring);
  }

  /** For a refusal of its own kind ({@link HandingOverException}). */
  protected WrongEpochException(ErrorCode code, String message, Ring ring) {
    super(code, message);
    this.ring = ring;
  }

  /** The refusing node's ring. */
  public Ring ring() {
    return ring;
  }
}
