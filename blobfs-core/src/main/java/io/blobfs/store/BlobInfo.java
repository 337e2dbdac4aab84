package io.blobfs.store;

/** What a store knows of one blob: whether it exists and how many bytes it holds. */
public record BlobInfo(String key, boolean exists, long size) {

  public static BlobInfo missing(String key) {
    return new BlobInfo(key, false, 0);
  }

  public static BlobInfo of(String key, long size) {
    return new BlobInfo(key, true, size);
  }
}
