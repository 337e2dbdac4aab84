package io.blobfs.store;

/**
 * Limits of a backend, used to validate keys before any call and to size stripes.
 *
 * @param maxKeyBytes longest key, in UTF-8 bytes
 * @param maxObjectBytes largest blob (RADOS: osd_max_object_size)
 * @param maxOpBytes largest single read or write (RADOS: osd_max_write_size)
 */
public record StoreLimits(int maxKeyBytes, long maxObjectBytes, long maxOpBytes) {

  public StoreLimits {
    if (maxKeyBytes <= 0 || maxObjectBytes <= 0 || maxOpBytes <= 0) {
      throw new IllegalArgumentException("store limits must be positive: " + maxKeyBytes
          + ", " + maxObjectBytes + ", " + maxOpBytes);
    }
  }
}
