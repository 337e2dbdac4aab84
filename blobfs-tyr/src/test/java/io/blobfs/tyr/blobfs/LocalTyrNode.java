package io.blobfs.tyr.blobfs;

import io.blobfs.store.BlobStore;
import io.blobfs.store.StoreOptions;
import io.blobfs.tyr.engine.EngineConfig;
import io.blobfs.tyr.server.ServerConfig;
import io.blobfs.tyr.server.TyrServer;
import java.io.IOException;
import java.nio.file.Path;
import java.util.Map;

/**
 * Test fixture: a Týr server in this JVM on loopback TCP, and the {@code tyr} store on it
 * opened through the provider users configure, so the whole client path is exercised.
 */
final class LocalTyrNode implements AutoCloseable {
  private final TyrServer server;

  LocalTyrNode(Path dir) throws IOException {
    server = TyrServer.start(ServerConfig.local(EngineConfig.defaults(dir)));
  }

  /** A store named {@code name} on this node. */
  BlobStore store(String name) throws IOException {
    return store(name, Map.of());
  }

  /** A store named {@code name} on this node, with more of its options. */
  BlobStore store(String name, Map<String, String> options) throws IOException {
    Map<String, String> all = new java.util.HashMap<>(options);
    all.put("address", "127.0.0.1:" + server.port());
    return new TyrBlobStoreProvider().open(name,
        new StoreOptions("fs.blob.store." + name + ".", all));
  }

  int port() {
    return server.port();
  }

  @Override
  public void close() throws IOException {
    server.close();
  }
}
