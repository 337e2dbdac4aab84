package io.blobfs.rados;

import io.blobfs.namespace.ReadThenActRaceTest;
import io.blobfs.store.BlobStore;
import io.blobfs.store.StoreOptions;
import java.io.IOException;
import java.util.Map;
import java.util.stream.Stream;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * The namespace's read-then-act races on the real cluster: no transactions, so every case
 * rests on the version asserted in the OSD's write op.
 */
@ExtendWith(CephClusterExtension.class)
class RadosReadThenActRaceIT extends ReadThenActRaceTest {
  private static CephTestCluster.Env env;

  @BeforeAll
  static void cluster(CephTestCluster.Env cluster) {
    env = cluster;
  }

  /** RADOS has no transactions: the namespace's path without them is the one to prove. */
  @Override
  protected Stream<Boolean> commitPaths() {
    return Stream.of(false);
  }

  /** A RADOS namespace of its own per case: the pool is shared, the store starts empty. */
  @Override
  protected BlobStore openStore() throws IOException {
    Map<String, String> o = CephTestCluster.storeOptions(env, env.pool(),
        "race-" + System.nanoTime());
    return new RadosBlobStoreProvider().open("race", new StoreOptions("fs.blob.store.race.", o));
  }

  /** Leaves the pool as found: removes what this case wrote in its namespace. */
  @Override
  protected void closeStore(BlobStore s) throws IOException {
    String cursor = null;
    do {
      var page = s.scan("", cursor, 1000);
      for (String k : page.keys()) {
        s.delete(k);
      }
      cursor = page.nextCursor();
    } while (cursor != null);
    s.close();
  }
}
