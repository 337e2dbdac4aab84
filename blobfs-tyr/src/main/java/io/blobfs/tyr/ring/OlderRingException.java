package io.blobfs.tyr.ring;

/**
 * A node was given a ring older than one it has already installed: at start (its ring
 * file was brought back older, e.g. by a host crash, or is a stale copy) or as a ring to
 * move to. Refused, as a node's epoch never goes back: the replication stream's rules
 * (a backup refuses, and a primary then strips, by epoch) assume it (issue 13).
 */
public final class OlderRingException extends IllegalArgumentException {
  private static final long serialVersionUID = 1L;
  private final long ringEpoch;
  private final long installedEpoch;

  public OlderRingException(String message, long ringEpoch, long installedEpoch) {
    super(message);
    this.ringEpoch = ringEpoch;
    this.installedEpoch = installedEpoch;
  }

  /** The epoch of the ring refused. */
  public long ringEpoch() {
    return ringEpoch;
  }

  /** The highest epoch the node had installed. */
  public long installedEpoch() {
    return installedEpoch;
  }
}
