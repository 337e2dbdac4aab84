package io.blobfs.tyr.api;

/**
 * One committed version of a blob's metadata. {@code version} is the commit number of the
 * transaction that last changed the blob (0 for a blob that does not exist), which a
 * transaction records in its read set.
 */
public record BlobStat(String key, boolean exists, long size, long version,
    long modifiedMillis) {

  public static BlobStat missing(String key) {
    return new BlobStat(key, false, 0, 0, 0);
  }
}
