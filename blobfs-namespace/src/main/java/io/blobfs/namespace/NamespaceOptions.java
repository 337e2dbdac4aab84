package io.blobfs.namespace;

import java.time.Duration;

/**
 * Settings of the file-system semantics layer.
 *
 * @param stripeSize bytes of a file per data blob; also the reported block size
 * @param writeBufferSize bytes a writer gathers before sending one write to the store
 * @param maxWriteBytesInFlight bytes a writer may have sent but not yet acknowledged;
 *     with the buffer this bounds a writer's memory whatever the file size
 * @param inlineThreshold files up to this size live inside their record: one blob
 * @param keepDirectoryMarkers mkdirs writes a marker and deletes keep parents visible
 *     (HDFS-like); false follows the paper: mkdirs is dropped, directories are implicit
 * @param scanPageSize keys asked for per scan call
 * @param createPerformance create() skips its probes (is the path a directory? a file
 *     when overwrite is false?): one store call fewer, and on a store whose scans walk
 *     the whole key space (RADOS) far less. An existing file still makes an exclusive
 *     create fail, at close; a directory at the path is no longer noticed. As S3A's
 *     fs.s3a.create.performance.
 * @param writerLease how long a writer's claim on its data outlives its last write: the
 *     orphan sweeper leaves the data of an unclosed file alone until then. A writer idle
 *     for longer may find at close that the data was swept: close() then fails and
 *     publishes nothing. As S3A's fs.s3a.multipart.purge.age, a day by default.
 * @param renameLease without transactions, how long a rename's or delete's lock on a file,
 *     and a directory operation's intent, outlive their holder's last renewal: past it
 *     another client settles or takes over what it left. A store call of the holder that
 *     takes longer than this lets another client act meanwhile, so it should be a few
 *     times the store's operation timeout (RADOS: {@code op-timeout}, 30 s by default).
 *     The writer lease, if shorter (tests).
 */
public record NamespaceOptions(long stripeSize, int writeBufferSize, long maxWriteBytesInFlight,
    int inlineThreshold, boolean keepDirectoryMarkers, int scanPageSize,
    boolean createPerformance, Duration writerLease, Duration renameLease) {

  public static final long DEFAULT_STRIPE_SIZE = 64L << 20;
  public static final Duration DEFAULT_WRITER_LEASE = Duration.ofDays(1);
  /**
   * Three times RADOS's default operation timeout (30 s). Before (fifth review, S2), the
   * lease was fixed at 30 s: a store call that timed out at 30 s outlived it.
   */
  public static final Duration DEFAULT_RENAME_LEASE = Duration.ofSeconds(90);

  public NamespaceOptions {
    if (stripeSize <= 0 || writeBufferSize <= 0 || maxWriteBytesInFlight < writeBufferSize
        || inlineThreshold < 0 || inlineThreshold > FileRecord.MAX_INLINE || scanPageSize <= 0
        || writerLease.isNegative() || writerLease.isZero()
        || renameLease.isNegative() || renameLease.isZero()) {
      throw new IllegalArgumentException("inconsistent namespace options: stripeSize="
          + stripeSize + " writeBufferSize=" + writeBufferSize + " maxWriteBytesInFlight="
          + maxWriteBytesInFlight + " inlineThreshold=" + inlineThreshold + " scanPageSize="
          + scanPageSize + " writerLease=" + writerLease + " renameLease=" + renameLease);
    }
  }

  public NamespaceOptions(long stripeSize, int writeBufferSize, long maxWriteBytesInFlight,
      int inlineThreshold, boolean keepDirectoryMarkers, int scanPageSize,
      boolean createPerformance, Duration writerLease) {
    this(stripeSize, writeBufferSize, maxWriteBytesInFlight, inlineThreshold,
        keepDirectoryMarkers, scanPageSize, createPerformance, writerLease,
        DEFAULT_RENAME_LEASE);
  }

  public NamespaceOptions(long stripeSize, int writeBufferSize, long maxWriteBytesInFlight,
      int inlineThreshold, boolean keepDirectoryMarkers, int scanPageSize,
      boolean createPerformance) {
    this(stripeSize, writeBufferSize, maxWriteBytesInFlight, inlineThreshold,
        keepDirectoryMarkers, scanPageSize, createPerformance, DEFAULT_WRITER_LEASE);
  }

  /** With the probes of create() on. */
  public NamespaceOptions(long stripeSize, int writeBufferSize, long maxWriteBytesInFlight,
      int inlineThreshold, boolean keepDirectoryMarkers, int scanPageSize) {
    this(stripeSize, writeBufferSize, maxWriteBytesInFlight, inlineThreshold,
        keepDirectoryMarkers, scanPageSize, false);
  }

  /**
   * The rename lease under {@code renameKey} ({@link #DEFAULT_RENAME_LEASE} if unset), for
   * blob:// and the FUSE mount alike. At least a second: a lock renewed every quarter lease
   * must not renew all the time. One set explicitly above the writer lease is refused,
   * naming both keys: the namespace caps the rename lease to the writer lease
   * ({@code DataLocks.renameLease}: a rename's lock must not outlive the claim on the data it
   * guards), so such a setting would be ignored; an error at start says so where a warning
   * in an executor's log would go unread (the review of rados-move5, S-e). The default
   * rename lease is still capped without a word when the writer lease is set shorter:
   * nobody asked for it.
   */
  public static Duration renameLease(io.blobfs.store.StoreOptions fs, String renameKey,
      String writerKey, Duration writer) {
    Duration lease = fs.getDuration(renameKey, DEFAULT_RENAME_LEASE);
    if (lease.compareTo(Duration.ofSeconds(1)) < 0) {
      throw fs.bad(renameKey, fs.getString(renameKey, ""), "at least 1s");
    }
    if (fs.get(renameKey).isPresent() && lease.compareTo(writer) > 0) {
      throw fs.bad(renameKey, fs.getString(renameKey, ""), "at most " + fs.fullKey(writerKey)
          + " (" + writer + "), which caps it");
    }
    return lease;
  }

  public NamespaceOptions withWriterLease(Duration lease) {
    return new NamespaceOptions(stripeSize, writeBufferSize, maxWriteBytesInFlight,
        inlineThreshold, keepDirectoryMarkers, scanPageSize, createPerformance, lease,
        renameLease);
  }

  public NamespaceOptions withRenameLease(Duration lease) {
    return new NamespaceOptions(stripeSize, writeBufferSize, maxWriteBytesInFlight,
        inlineThreshold, keepDirectoryMarkers, scanPageSize, createPerformance, writerLease,
        lease);
  }
}
