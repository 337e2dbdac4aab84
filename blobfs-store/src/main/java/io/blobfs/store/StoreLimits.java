package io.blobfs.store;

/**
 * Limits of a backend, used to validate keys before any call, to size stripes and to
 * split work that one transaction cannot carry.
 *
 * @param maxKeyBytes longest key, in UTF-8 bytes
 * @param maxObjectBytes largest blob (RADOS: osd_max_object_size)
 * @param maxOpBytes largest single read or write (RADOS: osd_max_write_size)
 * @param maxCommitBytes largest {@link TransactionalBlobStore#commit transaction}, as the
 *     sum of {@link TransactionalBlobStore#commitBytes} over its mutations: a commit
 *     within it is never refused for its size. {@link #UNBOUNDED} for a store without such
 *     a limit or without transactions. Týr derives it from its frame limit, since a
 *     transaction travels in one frame.
 */
public record StoreLimits(int maxKeyBytes, long maxObjectBytes, long maxOpBytes,
    long maxCommitBytes) {

  /** {@link #maxCommitBytes} of a store that takes transactions of any size. */
  public static final long UNBOUNDED = Long.MAX_VALUE;

  public StoreLimits {
    if (maxKeyBytes <= 0 || maxObjectBytes <= 0 || maxOpBytes <= 0 || maxCommitBytes <= 0) {
      throw new IllegalArgumentException("store limits must be positive: " + maxKeyBytes
          + ", " + maxObjectBytes + ", " + maxOpBytes + ", " + maxCommitBytes);
    }
  }

  /** Limits of a store whose transactions, if it has any, may be of any size. */
  public StoreLimits(int maxKeyBytes, long maxObjectBytes, long maxOpBytes) {
    this(maxKeyBytes, maxObjectBytes, maxOpBytes, UNBOUNDED);
  }

  /** The same limits with another {@link #maxCommitBytes}. */
  public StoreLimits withMaxCommitBytes(long bytes) {
    return new StoreLimits(maxKeyBytes, maxObjectBytes, maxOpBytes, bytes);
  }
}
