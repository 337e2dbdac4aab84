package io.blobfs.tyr.api;

/** Compare-and-set met another value; {@link #actual()} is the value it found. */
public final class CasFailedException extends TyrException {
  private static final long serialVersionUID = 1L;
  private final long actual;

  public CasFailedException(String key, long offset, long expected, long actual) {
    super(ErrorCode.CAS_FAILED, "compare-and-set on " + key + " at " + offset + ": expected "
        + expected + ", found " + actual);
    this.actual = actual;
  }

  /** As decoded from an error reply: the server's message and the value it found. */
  public CasFailedException(String message, long actual) {
    super(ErrorCode.CAS_FAILED, message);
    this.actual = actual;
  }

  public long actual() {
    return actual;
  }
}
