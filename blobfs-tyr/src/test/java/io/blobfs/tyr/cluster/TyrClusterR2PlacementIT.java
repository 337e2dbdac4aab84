package io.blobfs.tyr.cluster;

import io.blobfs.tyr.blobfs.TyrClusterBlobStore;
import java.nio.file.Path;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@link TyrClusterPlacementIT}'s placement check with R = 2 (primary-backup): for 10,000
 * random keys, the two nodes the client computes are exactly the nodes that hold the key,
 * as each node lists its own keys, and {@code hostsOf} (what {@code getFileBlockLocations}
 * gives Spark) names both, primary first.
 */
class TyrClusterR2PlacementIT {
  @TempDir
  static Path dir;
  private static TyrProcessCluster cluster;

  @BeforeAll
  static void start() throws Exception {
    cluster = TyrProcessCluster.start(dir, 3, 128, 2);
    System.out.println("cluster on " + (cluster.onOwnHosts() ? "namespaces" : "loopback")
        + ": " + cluster.nodesOption() + ", R = 2");
  }

  @AfterAll
  static void stop() {
    if (cluster != null) {
      cluster.close();
    }
  }

  @Test
  void bothComputedOwnersAndNoOtherNodeStoreEachKey() throws Exception {
    try (TyrClusterBlobStore store = TyrClusterPlacementIT.open(cluster, "placement-r2")) {
      TyrClusterPlacementIT.assertPlacement(cluster, store, 10_000);
    }
  }
}
