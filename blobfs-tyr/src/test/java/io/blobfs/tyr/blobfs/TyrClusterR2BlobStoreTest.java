package io.blobfs.tyr.blobfs;

import io.blobfs.store.BlobStore;
import io.blobfs.store.BlobStoreContract;
import java.io.IOException;
import java.nio.file.Path;
import org.junit.jupiter.api.io.TempDir;

/** The SPI contract on three Týr nodes in this JVM with two replicas of every key. */
class TyrClusterR2BlobStoreTest extends BlobStoreContract {
  @TempDir
  Path dir;
  private LocalTyrCluster cluster;

  @Override
  protected BlobStore openStore() throws IOException {
    cluster = new LocalTyrCluster(dir, 3, 64, 2);
    return cluster.store("r2");
  }

  @Override
  protected void closeStore(BlobStore s) throws IOException {
    s.close();
    cluster.close();
  }
}
