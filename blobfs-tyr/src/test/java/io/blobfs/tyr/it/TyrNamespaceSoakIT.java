package io.blobfs.tyr.it;

import io.blobfs.namespace.NamespaceSoak;
import io.blobfs.store.BlobStore;
import io.blobfs.store.StoreOptions;
import io.blobfs.tyr.blobfs.TyrBlobStoreProvider;
import io.blobfs.tyr.server.TyrServerProcess;
import java.nio.file.Path;
import java.util.Map;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * {@link NamespaceSoak} on a Týr server in a process of its own, through the client users
 * configure: with Týr's transactions, and with them hidden (conditional single-blob calls
 * only, RADOS' path on Týr's versions). 20 s each; {@code -Dblobfs.soak=true} for the
 * long run.
 */
class TyrNamespaceSoakIT {
  @TempDir
  Path dir;

  @ParameterizedTest(name = "transactional={0}")
  @ValueSource(booleans = {true, false})
  void nothingIsLostCorruptedOrLeftOver(boolean transactional) throws Exception {
    try (TyrServerProcess server = new TyrServerProcess(dir, "--sync", "interval").start();
        BlobStore store = new TyrBlobStoreProvider().open("soak", new StoreOptions(
            "fs.blob.store.soak.", Map.of(TyrBlobStoreProvider.ADDRESS, server.address())))) {
      NamespaceSoak.run("Týr server process" + (transactional ? "" : " without transactions"),
          store, transactional, NamespaceSoak.Config.fromSystemProperties(20)).assertNoFailures();
    }
  }
}
