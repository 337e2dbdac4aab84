package io.blobfs.tyr.blobfs;

import io.blobfs.store.BlobStore;
import io.blobfs.store.BlobStoreContract;
import java.io.IOException;
import java.nio.file.Path;
import org.junit.jupiter.api.io.TempDir;

/**
 * The SPI contract (the non-transactional one) on a cluster of three Týr nodes in this
 * JVM, through the provider: every key on the node the ring gives it, scans merged.
 */
class TyrClusterBlobStoreTest extends BlobStoreContract {
  @TempDir
  Path dir;
  private LocalTyrCluster cluster;

  @Override
  protected BlobStore openStore() throws IOException {
    cluster = new LocalTyrCluster(dir, 3, 64, 1);
    return cluster.store("c");
  }

  @Override
  protected void closeStore(BlobStore s) throws IOException {
    s.close();
    cluster.close();
  }
}
