package io.blobfs.e2e;

import io.blobfs.tyr.server.TyrServerProcess;
import java.io.IOException;
import java.nio.file.Files;
import java.util.Map;

/**
 * The core job on a Týr server in a process of its own, its log synced on every commit.
 * With the classic FileOutputCommitter each task and job commit rename is one atomic Týr
 * transaction.
 */
class SparkOnTyrIT extends SparkJobsOnStoreTestBase {
  private TyrServerProcess server;

  @Override
  String store() {
    return "tyr-e2e";
  }

  @Override
  String backend() {
    return "Týr";
  }

  @Override
  Map<String, String> startStore() throws IOException {
    server = new TyrServerProcess(Files.createTempDirectory("tyr-e2e-"), "--sync", "always")
        .start();
    return Map.of("fs.blob.store." + store() + ".type", "tyr",
        "fs.blob.store." + store() + ".address", server.address());
  }

  @Override
  void stopStore() {
    if (server != null) {
      server.close();
    }
  }
}
