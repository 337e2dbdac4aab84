package io.blobfs.store;

import java.io.IOException;
import java.util.Set;

/**
 * Creates stores of one type ({@code memory}, {@code rados}, {@code tyr}, ...). Found with
 * {@link java.util.ServiceLoader}, so a backend module adds a type by shipping a
 * {@code META-INF/services/io.blobfs.store.BlobStoreProvider} entry.
 */
public interface BlobStoreProvider {

  /** The value of a store profile's {@code type} key that selects this provider. */
  String type();

  /** The profile keys this type understands; any other key is a configuration error. */
  Set<String> optionKeys();

  /**
   * File-system settings that suit this store better than the built-in defaults (for
   * example no read-ahead on a store in local memory), by key suffix as under
   * {@code fs.blob.}; the user's settings still win.
   */
  default java.util.Map<String, String> fileSystemDefaults() {
    return java.util.Map.of();
  }

  /** Opens (or joins) the store a profile describes. The caller closes it. */
  BlobStore open(String storeName, StoreOptions options) throws IOException;
}
