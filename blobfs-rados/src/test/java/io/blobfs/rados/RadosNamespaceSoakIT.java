package io.blobfs.rados;

import io.blobfs.namespace.NamespaceSoak;
import io.blobfs.store.BlobStore;
import io.blobfs.store.ScanPage;
import io.blobfs.store.StoreOptions;
import java.io.IOException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * {@link NamespaceSoak} on the native cluster (the rados-native run): no transactions, so
 * every race rests on the versions the OSD asserts. 30 s; {@code -Dblobfs.soak=true} for
 * the long run. The store is a RADOS namespace of its own, emptied afterwards.
 */
@ExtendWith(CephClusterExtension.class)
class RadosNamespaceSoakIT {
  @Test
  void nothingIsLostCorruptedOrLeftOver(CephTestCluster.Env env) throws Exception {
    StoreOptions options = new StoreOptions("fs.blob.store.soak.",
        CephTestCluster.storeOptions(env, env.pool(), "soak-" + System.nanoTime()));
    try (BlobStore store = new RadosBlobStoreProvider().open("soak", options)) {
      try {
        NamespaceSoak.run("RADOS", store, false, NamespaceSoak.Config.fromSystemProperties(30))
            .assertNoFailures();
      } finally {
        removeAll(store);
      }
    }
  }

  /** Leaves the pool as found. */
  private static void removeAll(BlobStore store) throws IOException {
    String cursor = null;
    do {
      ScanPage page = store.scan("", cursor, 1000);
      for (String k : page.keys()) {
        store.delete(k);
      }
      cursor = page.nextCursor();
    } while (cursor != null);
  }
}
