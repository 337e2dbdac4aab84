package io.blobfs.rados;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.blobfs.namespace.BlobNamespace;
import io.blobfs.namespace.FileWriter;
import io.blobfs.namespace.FsPath;
import io.blobfs.namespace.NamespaceOptions;
import io.blobfs.namespace.StoreCallCounters;
import io.blobfs.store.StoreOptions;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * What a directory rename costs the name index after many renames and recursive deletes
 * have finished: every such operation reads every intent, and each finished one used to
 * leave a tombstone in the index for the grace period (10 minutes), checked against its
 * object by every later operation. Now a finished intent leaves nothing.
 */
@ExtendWith(CephClusterExtension.class)
class RadosRenameCostIT {
  private static final int FINISHED = 40;
  private static CephTestCluster.Env env;
  private RadosBlobStore store;
  private BlobNamespace ns;

  @BeforeAll
  static void cluster(CephTestCluster.Env cluster) {
    env = cluster;
  }

  @BeforeEach
  void open() throws IOException {
    Map<String, String> o = CephTestCluster.storeOptions(env, env.pool(),
        "rename-cost-" + System.nanoTime());
    store = (RadosBlobStore) new RadosBlobStoreProvider().open("t",
        new StoreOptions("fs.blob.store.t.", o));
    ns = new BlobNamespace(store, new NamespaceOptions(1 << 20, 1 << 20, 1 << 20, 4096, false,
        100), StoreCallCounters.NONE);
  }

  @AfterEach
  void close() throws IOException {
    store.close();
  }

  private void write(String path) throws IOException {
    byte[] b = path.getBytes(StandardCharsets.UTF_8);
    try (FileWriter out = ns.create(FsPath.parse(path), false)) {
      out.write(b, 0, b.length);
    }
  }

  /** Objects the index stat'ed during one rename of /d to /e and back. */
  private long checksOfOneRoundTrip() throws IOException {
    long before = store.index().objectChecks();
    assertTrue(ns.rename(FsPath.parse("/d"), FsPath.parse("/e")));
    assertTrue(ns.rename(FsPath.parse("/e"), FsPath.parse("/d")));
    return store.index().objectChecks() - before;
  }

  @Test
  void aDirectoryRenameCostsTheSameAfterManyFinishedRenamesAndDeletes() throws IOException {
    for (int i = 0; i < 3; i++) {
      write("/d/f" + i);
    }
    checksOfOneRoundTrip(); // the names' own entries settle
    long alone = checksOfOneRoundTrip();

    for (int i = 0; i < FINISHED; i++) {
      write("/x" + i + "/f");
      assertTrue(ns.rename(FsPath.parse("/x" + i), FsPath.parse("/y" + i)));
      if (i % 2 == 0) {
        assertTrue(ns.delete(FsPath.parse("/y" + i), true));
      }
    }
    long after = checksOfOneRoundTrip();

    assertEquals(alone, after, "objects checked by a round trip of renames, alone and after "
        + FINISHED + " finished renames and " + FINISHED / 2 + " recursive deletes");
    // Nothing of them is left in the index: no intent, no tombstone of one.
    assertEquals(List.of(), store.index().read("r/", null, 1000).entries());
    assertEquals(List.of("/d/f0", "/d/f1", "/d/f2"), ns.list(FsPath.parse("/d"))
        .stream().map(f -> f.path().toString()).toList());
  }
}
