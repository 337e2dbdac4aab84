package io.blobfs.rados;

import io.blobfs.namespace.TakeoverScenarios;
import io.blobfs.store.BlobStore;
import io.blobfs.store.ScanPage;
import io.blobfs.store.StoreOptions;
import java.io.IOException;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * The takeover commit (shared stripes step 3, issue 16) on the native Ceph cluster: the
 * scenarios of {@link TakeoverScenarios} (exact keys in the pool after a takeover, chained
 * versions then a delete leaving no data key, a base replaced meanwhile, a reader of the
 * base across the new version, sweeps during takeovers) through RADOS's seven conditional
 * steps, every condition asserted by the OSD's object versions. Each scenario gets a RADOS
 * namespace of its own, emptied afterwards.
 */
@ExtendWith(CephClusterExtension.class)
class RadosTakeoverIT extends TakeoverScenarios {
  private static CephTestCluster.Env env;

  @BeforeAll
  static void cluster(CephTestCluster.Env e) {
    env = e;
  }

  @Override
  protected BlobStore openStore() throws IOException {
    StoreOptions options = new StoreOptions("fs.blob.store.takeover.",
        CephTestCluster.storeOptions(env, env.pool(), "takeover-" + System.nanoTime()));
    return new RadosBlobStoreProvider().open("takeover", options);
  }

  @Override
  protected boolean transactional() {
    return false;
  }

  /** Leaves the pool as found. */
  @Override
  protected void closeStore(BlobStore s) throws IOException {
    try (s) {
      String cursor = null;
      do {
        ScanPage page = s.scan("", cursor, 1000);
        for (String k : page.keys()) {
          s.delete(k);
        }
        cursor = page.nextCursor();
      } while (cursor != null);
    }
  }
}
