package io.blobfs.namespace;

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
 */
public record NamespaceOptions(long stripeSize, int writeBufferSize, long maxWriteBytesInFlight,
    int inlineThreshold, boolean keepDirectoryMarkers, int scanPageSize,
    boolean createPerformance) {

  public static final long DEFAULT_STRIPE_SIZE = 64L << 20;

  public NamespaceOptions {
    if (stripeSize <= 0 || writeBufferSize <= 0 || maxWriteBytesInFlight < writeBufferSize
        || inlineThreshold < 0 || inlineThreshold > FileRecord.MAX_INLINE || scanPageSize <= 0) {
      throw new IllegalArgumentException("inconsistent namespace options: stripeSize="
          + stripeSize + " writeBufferSize=" + writeBufferSize + " maxWriteBytesInFlight="
          + maxWriteBytesInFlight + " inlineThreshold=" + inlineThreshold + " scanPageSize="
          + scanPageSize);
    }
  }

  /** With the probes of create() on. */
  public NamespaceOptions(long stripeSize, int writeBufferSize, long maxWriteBytesInFlight,
      int inlineThreshold, boolean keepDirectoryMarkers, int scanPageSize) {
    this(stripeSize, writeBufferSize, maxWriteBytesInFlight, inlineThreshold,
        keepDirectoryMarkers, scanPageSize, false);
  }
}
