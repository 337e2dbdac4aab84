package io.blobfs.tyr.blobfs;

import io.blobfs.namespace.ReadThenActRaceTest;
import io.blobfs.store.BlobStore;
import io.blobfs.store.StoreOptions;
import io.blobfs.tyr.engine.EngineConfig;
import io.blobfs.tyr.server.ServerConfig;
import io.blobfs.tyr.server.TyrServer;
import java.io.IOException;
import java.nio.file.Path;
import java.util.Map;
import org.junit.jupiter.api.io.TempDir;

/**
 * The namespace's read-then-act races on a Týr node in this JVM: with its transactions,
 * and with them hidden (conditional single-blob calls only).
 */
class TyrReadThenActRaceTest extends ReadThenActRaceTest {
  @TempDir
  Path dir;
  private TyrServer server;

  @Override
  protected BlobStore openStore() throws IOException {
    server = TyrServer.start(ServerConfig.local(EngineConfig.defaults(dir)));
    return new TyrBlobStoreProvider().open("race", new StoreOptions("fs.blob.store.race.",
        Map.of("address", "127.0.0.1:" + server.port())));
  }

  @Override
  protected void closeStore(BlobStore s) throws IOException {
    s.close();
    server.close();
  }
}
