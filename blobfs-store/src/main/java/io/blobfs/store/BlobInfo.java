package io.blobfs.store;

/**
 * What a store knows of one blob: whether it exists, how many bytes it holds, and when it
 * was last written (milliseconds since the epoch; 0 if the store cannot tell).
 */
public record BlobInfo(String key, boolean exists, long size, long modifiedMillis) {

  public static BlobInfo missing(String key) {
    return new BlobInfo(key, false, 0, 0);
  }

  public static BlobInfo of(String key, long size) {
    return new BlobInfo(key, true, size, 0);
  }

  public static BlobInfo of(String key, long size, long modifiedMillis) {
    return new BlobInfo(key, true, size, modifiedMillis);
  }
}
