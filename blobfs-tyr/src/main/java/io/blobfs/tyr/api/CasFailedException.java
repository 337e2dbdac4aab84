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

  public long actual() {
    return actual;
  }
}
