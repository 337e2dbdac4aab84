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
 */
public record NamespaceOptions(long stripeSize, int writeBufferSize, long maxWriteBytesInFlight,
    int inlineThreshold, boolean keepDirectoryMarkers, int scanPageSize) {

  public static final long DEFAULT_STRIPE_SIZE = 64L << 20;

  public NamespaceOptions {
    if (stripeSize <= 0 || writeBufferSize <= 0 || maxWriteBytesInFlight < writeBufferSize
        || inlineThreshold < 0 || scanPageSize <= 0) {
      throw new IllegalArgumentException("inconsistent namespace options: stripeSize="
          + stripeSize + " writeBufferSize=" + writeBufferSize + " maxWriteBytesInFlight="
          + maxWriteBytesInFlight + " inlineThreshold=" + inlineThreshold + " scanPageSize="
          + scanPageSize);
    }
  }

  public static NamespaceOptions defaults() {
    return new NamespaceOptions(DEFAULT_STRIPE_SIZE, 8 << 20, 64L << 20, 64 << 10, false,
        1000);
  }

  public NamespaceOptions withKeepDirectoryMarkers(boolean keep) {
    return new NamespaceOptions(stripeSize, writeBufferSize, maxWriteBytesInFlight,
        inlineThreshold, keep, scanPageSize);
  }

  public NamespaceOptions withStripeSize(long size) {
    return new NamespaceOptions(size, (int) Math.min(writeBufferSize, size),
        Math.max(maxWriteBytesInFlight, Math.min(writeBufferSize, size)), inlineThreshold,
        keepDirectoryMarkers, scanPageSize);
  }
}
