package io.blobfs.store.memory;

import io.blobfs.store.BlobStore;
import io.blobfs.store.BlobStoreProvider;
import io.blobfs.store.StoreLimits;
import io.blobfs.store.StoreOptions;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentMap;

/**
 * Type {@code memory}: one in-heap store per store name per JVM, shared by every file
 * system instance that names it, so that Spark's tasks in local mode see one store.
 */
public final class InMemoryBlobStoreProvider implements BlobStoreProvider {
  public static final String TYPE = "memory";
  /** Longest key, in UTF-8 bytes (S3's limit, so tests meet a realistic bound). */
  public static final String MAX_KEY_BYTES = "max-key-bytes";
  /** Largest blob; the namespace layer stripes files over blobs no larger. */
  public static final String MAX_OBJECT_BYTES = "max-object-bytes";

  private static final ConcurrentMap<String, InMemoryBlobStore> STORES =
      new ConcurrentHashMap<>();

  @Override
  public String type() {
    return TYPE;
  }

  @Override
  public Set<String> optionKeys() {
    return Set.of(MAX_KEY_BYTES, MAX_OBJECT_BYTES);
  }

  /**
   * Calls complete at once in memory: fetching ahead would only add a copy, and small
   * write buffers let 1 MiB application writes go straight to the store.
   */
  @Override
  public java.util.Map<String, String> fileSystemDefaults() {
    return java.util.Map.of("read.ahead", "0", "write.buffer.size", "1m");
  }

  @Override
  public BlobStore open(String storeName, StoreOptions options) {
    int maxKey = (int) options.getLong(MAX_KEY_BYTES, 1024, 16, 65536);
    long maxObject = options.getBytes(MAX_OBJECT_BYTES, 1L << 40, 1, Long.MAX_VALUE);
    StoreLimits limits = new StoreLimits(maxKey, maxObject, Integer.MAX_VALUE);
    InMemoryBlobStore store = STORES.computeIfAbsent(storeName,
        n -> new InMemoryBlobStore(n, limits));
    if (!store.limits().equals(limits)) {
      throw new IllegalArgumentException("in-memory store '" + storeName
          + "' is already open with limits " + store.limits() + ", not " + limits);
    }
    return store;
  }

  /** The store of that name, creating it with default limits: for tests and tools. */
  public static InMemoryBlobStore named(String storeName) {
    return STORES.computeIfAbsent(storeName,
        n -> new InMemoryBlobStore(n, new StoreLimits(1024, 1L << 40, Integer.MAX_VALUE)));
  }

  /** Forgets a store and frees its memory. */
  public static void drop(String storeName) {
    InMemoryBlobStore s = STORES.remove(storeName);
    if (s != null) {
      s.clear();
    }
  }
}
