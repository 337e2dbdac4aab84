package io.blobfs.fuse;

import io.blobfs.store.BlobStore;
import io.blobfs.store.BlobStores;
import io.blobfs.store.StoreOptions;
import java.nio.file.Path;
import java.util.Map;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@link SharedStripesTest} over a Týr node in this JVM ({@code embedded-dir}: no port):
 * the version's commit is one Týr transaction, through the real client and server.
 */
class SharedStripesTyrTest extends SharedStripesTest {
  @TempDir
  Path tyrDir;

  @Override
  BlobStore inner() throws Exception {
    return BlobStores.provider("tyr").open("t",
        new StoreOptions("fs.blob.store.t.", Map.of("embedded-dir", tyrDir.toString())));
  }
}
