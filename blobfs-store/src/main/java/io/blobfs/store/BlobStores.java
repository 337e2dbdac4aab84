package io.blobfs.store;

import java.util.Map;
import java.util.ServiceLoader;
import java.util.TreeMap;

/** Finds the provider of a store type among those on the class path. */
public final class BlobStores {
  private BlobStores() {}

  public static BlobStoreProvider provider(String type) {
    Map<String, BlobStoreProvider> all = providers();
    BlobStoreProvider p = all.get(type);
    if (p == null) {
      throw new IllegalArgumentException("unknown store type '" + type + "'; known types: "
          + all.keySet() + " (a backend module on the class path adds its type)");
    }
    return p;
  }

  public static Map<String, BlobStoreProvider> providers() {
    Map<String, BlobStoreProvider> all = new TreeMap<>();
    ClassLoader cl = BlobStores.class.getClassLoader();
    for (BlobStoreProvider p : ServiceLoader.load(BlobStoreProvider.class, cl)) {
      all.putIfAbsent(p.type(), p);
    }
    return all;
  }
}
