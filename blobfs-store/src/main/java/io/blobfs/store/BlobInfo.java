package io.blobfs.store;

/**
 * What a store knows of one blob: whether it exists, how many bytes it holds, when it was
 * last written (milliseconds since the epoch; 0 if the store cannot tell), and its
 * version.
 *
 * <p>The version is opaque and positive for an existing blob (0 for a missing one). Every
 * mutation of the blob gives it a new version, and a version is never given twice to the
 * same key, not even after a delete and a re-create: a caller that read a blob at version
 * {@code v} and then acts with {@link BlobStore#putIfVersion}/{@link BlobStore#deleteIfVersion}
 * acts only on exactly what it read.
 */
public record BlobInfo(String key, boolean exists, long size, long modifiedMillis,
    long version) {

  public static BlobInfo missing(String key) {
    return new BlobInfo(key, false, 0, 0, 0);
  }

  public static BlobInfo of(String key, long size, long modifiedMillis, long version) {
    return new BlobInfo(key, true, size, modifiedMillis, version);
  }
}
