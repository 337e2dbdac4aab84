package io.blobfs.tyr.cluster;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;

import io.blobfs.store.PutMode;
import io.blobfs.store.StoreOptions;
import io.blobfs.store.StoreUnavailableException;
import io.blobfs.tyr.blobfs.TyrBlobStoreProvider;
import io.blobfs.tyr.blobfs.TyrClusterBlobStore;
import io.blobfs.tyr.ring.Member;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * R = 1 on three server processes, each on a host of its own: a node killed with SIGKILL
 * or frozen with SIGSTOP costs exactly its keys, reported as its loss within the
 * timeouts (no hang), and the others are served throughout; restarted or resumed, it
 * serves every blob it had acknowledged.
 */
class TyrClusterNodeLossIT {
  @TempDir
  Path dir;

  private static byte[] value(String k) {
    return ("value of " + k).getBytes(StandardCharsets.UTF_8);
  }

  @Test
  void aKilledOrFrozenNodeCostsItsKeysOnlyWithinTheTimeout() throws Exception {
    try (TyrProcessCluster cluster = TyrProcessCluster.start(dir, 3, 128, 1);
        TyrClusterBlobStore store = (TyrClusterBlobStore) new TyrBlobStoreProvider().open("loss",
            new StoreOptions("fs.blob.store.loss.", Map.of("nodes", cluster.nodesOption(),
                "connect-timeout", "2s", "op-timeout", "4s")))) {
      List<String> keys = new ArrayList<>();
      for (int i = 0; i < 300; i++) {
        keys.add("k/" + i);
        store.put("k/" + i, ByteBuffer.wrap(value("k/" + i)), PutMode.OVERWRITE);
      }
      Member victim = cluster.members().get(1);

      cluster.node(1).kill(); // SIGKILL
      checkOnlyVictimLost(store, keys, victim, 6_000);
      cluster.node(1).start(); // same data, same address
      allReadBack(store, keys);

      ProcessHandle frozen = ProcessHandle.of(cluster.node(1).pid()).orElseThrow();
      signal("STOP", frozen.pid());
      try {
        checkOnlyVictimLost(store, keys, victim, 10_000); // op-timeout, not connect
      } finally {
        signal("CONT", frozen.pid());
      }
      allReadBack(store, keys);
    }
  }

  /**
   * R = 2 and no failure detector (nothing marks the node down): with one node killed,
   * every blob still reads (from its other replica); writes whose replicas include the
   * dead node fail unacknowledged, within the timeouts (three are tried: each waits its op
   * timeout for a ring that would mark the node down), the others succeed. Once it is
   * back, writing the failed ones again leaves both replicas of every blob equal.
   * (With the detector, such writes fail over: {@code TyrClusterFailoverIT}.)
   */
  @Test
  void withTwoReplicasAKilledNodeLosesNoRead() throws Exception {
    try (TyrProcessCluster cluster = TyrProcessCluster.start(dir, 3, 128, 2);
        TyrClusterBlobStore store = (TyrClusterBlobStore) new TyrBlobStoreProvider().open("r2",
            new StoreOptions("fs.blob.store.r2.", Map.of("nodes", cluster.nodesOption(),
                "connect-timeout", "2s", "op-timeout", "4s")))) {
      List<String> keys = new ArrayList<>();
      for (int i = 0; i < 300; i++) {
        keys.add("k/" + i);
        store.put("k/" + i, ByteBuffer.wrap(value("k/" + i)), PutMode.OVERWRITE);
      }
      Member victim = cluster.members().get(2);
      cluster.node(2).kill();
      List<String> failed = new ArrayList<>();
      for (String k : keys) {
        byte[] want = value(k);
        ByteBuffer b = ByteBuffer.allocate(want.length);
        assertThat(io.blobfs.store.Futures.await(store.read(k, 0, b))).isEqualTo(want.length);
        assertArrayEquals(want, b.array(), k);
        byte[] next = ("again " + k).getBytes(StandardCharsets.UTF_8);
        if (store.ring().owners(k).contains(victim)) {
          if (failed.size() < 3) {
            long start = System.nanoTime();
            assertThatThrownBy(() -> store.put(k, ByteBuffer.wrap(next), PutMode.OVERWRITE))
                .isInstanceOf(StoreUnavailableException.class);
            assertThat((System.nanoTime() - start) / 1_000_000).isLessThan(15_000);
          }
          failed.add(k);
        } else {
          store.put(k, ByteBuffer.wrap(next), PutMode.OVERWRITE);
        }
      }
      assertThat(failed.size()).isBetween(150, 250); // 2/3 of keys have it as a replica
      cluster.node(2).start();
      for (String k : failed) {
        store.put(k, ByteBuffer.wrap(("again " + k).getBytes(StandardCharsets.UTF_8)),
            PutMode.OVERWRITE);
      }
      for (String k : keys) {
        byte[] want = ("again " + k).getBytes(StandardCharsets.UTF_8);
        for (Member m : store.ring().owners(k)) {
          assertArrayEquals(want, readOn(m, k, store.ring().epoch()), k + " on " + m);
        }
      }
    }
  }

  /** The blob as one replica holds it (a request routed to that node only). */
  private static byte[] readOn(Member m, String key, long epoch) throws Exception {
    try (io.blobfs.tyr.client.TyrClient raw = new io.blobfs.tyr.client.TyrClient(
        io.blobfs.tyr.client.ClientConfig.of(m.host(), m.port()))) {
      raw.routeUnder(() -> epoch);
      io.blobfs.tyr.api.ReadResult r = io.blobfs.tyr.client.TyrClient.await(
          raw.read(key, 0, 1000));
      byte[] b = new byte[r.data().remaining()];
      r.data().get(b);
      return b;
    }
  }

  private static void checkOnlyVictimLost(TyrClusterBlobStore store, List<String> keys,
      Member victim, long boundMillis) throws Exception {
    int lost = 0;
    for (String k : keys) {
      if (store.ring().primary(k).equals(victim)) {
        if (lost++ < 3) { // each one waits its timeout when frozen: three are enough
          long start = System.nanoTime();
          assertThatThrownBy(() -> store.readWithVersion(k, 100))
              .isInstanceOf(StoreUnavailableException.class)
              .hasMessageContaining("node " + victim + " is unreachable")
              .hasMessageContaining("no other replica");
          assertThat((System.nanoTime() - start) / 1_000_000).isLessThan(boundMillis);
        }
      } else {
        assertArrayEquals(value(k), store.readWithVersion(k, 100).bytes(), k);
      }
    }
    assertThat(lost).isBetween(50, 170);
  }

  private static void allReadBack(TyrClusterBlobStore store, List<String> keys)
      throws Exception {
    for (String k : keys) {
      assertArrayEquals(value(k), store.readWithVersion(k, 100).bytes(), k);
    }
  }

  private static void signal(String sig, long pid) throws Exception {
    Process p = new ProcessBuilder("kill", "-" + sig, Long.toString(pid)).inheritIO().start();
    assertThat(p.waitFor()).isZero();
  }
}
