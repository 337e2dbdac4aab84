package io.blobfs.tyr.cluster;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

import io.blobfs.store.BlobStore;
import io.blobfs.store.Futures;
import io.blobfs.store.PlacementAware;
import io.blobfs.store.StoreOptions;
import io.blobfs.tyr.api.ScanResult;
import io.blobfs.tyr.blobfs.TyrBlobStoreProvider;
import io.blobfs.tyr.blobfs.TyrClusterBlobStore;
import io.blobfs.tyr.client.ClientConfig;
import io.blobfs.tyr.client.TyrClient;
import io.blobfs.tyr.ring.Member;
import io.blobfs.tyr.ring.Ring;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A cluster of three Týr server processes, each on a host of its own (network namespaces,
 * or loopback addresses where there are none): the owners the client computes are the
 * nodes that really store each blob, and a ring change reaches a running client.
 */
class TyrClusterPlacementIT {
  @TempDir
  static Path dir;
  private static TyrProcessCluster cluster;

  @BeforeAll
  static void start() throws Exception {
    cluster = TyrProcessCluster.start(dir, 3, 128, 1);
    System.out.println("cluster on " + (cluster.onOwnHosts() ? "namespaces" : "loopback")
        + ": " + cluster.nodesOption());
  }

  @AfterAll
  static void stop() {
    if (cluster != null) {
      cluster.close();
    }
  }

  /** Every key each node really holds, listed by the node itself (a scan names no key). */
  static Set<String> keysOn(Member m, String prefix) throws Exception {
    Set<String> keys = new HashSet<>();
    try (TyrClient raw = new TyrClient(ClientConfig.of(m.host(), m.port()))) {
      String cursor = null;
      do {
        ScanResult r = TyrClient.await(raw.scan(prefix, cursor, 5000));
        keys.addAll(r.keys());
        cursor = r.nextCursor();
      } while (cursor != null);
    }
    return keys;
  }

  @Test
  void computedOwnersAreTheNodesThatStoreTheBlobs() throws Exception {
    try (TyrClusterBlobStore store = open(cluster, "placement")) {
      assertPlacement(cluster, store, 10_000);
    }
  }

  static TyrClusterBlobStore open(TyrProcessCluster cluster, String name) throws Exception {
    return (TyrClusterBlobStore) new TyrBlobStoreProvider().open(name, new StoreOptions(
        "fs.blob.store." + name + ".", Map.of("nodes", cluster.nodesOption())));
  }

  /**
   * Writes {@code count} random keys through the cluster store, then asks every node which
   * keys it holds: each key must be on exactly the owners the client computes (all R of
   * them, no other node), and {@code hostsOf} must name those owners' hosts, primary first.
   */
  static void assertPlacement(TyrProcessCluster cluster, TyrClusterBlobStore store, int count)
      throws Exception {
    assertPlacement(cluster.members(), cluster.onOwnHosts(), store, count);
  }

  /** The same, on {@code members} ({@code ownHosts}: not loopback addresses). */
  static void assertPlacement(List<Member> members, boolean ownHosts, TyrClusterBlobStore store,
      int count) throws Exception {
    assertThat((BlobStore) store).isInstanceOf(PlacementAware.class);
    Random r = new Random(42);
    List<String> keys = new ArrayList<>();
    List<CompletableFuture<Void>> writes = new ArrayList<>();
    for (int i = 0; i < count; i++) {
      String k = "p/" + Long.toHexString(r.nextLong()) + "/" + r.nextInt(64);
      keys.add(k);
      writes.add(store.write(k, 0, ByteBuffer.wrap(k.getBytes(StandardCharsets.UTF_8))));
      if (writes.size() == 256) {
        Futures.await(CompletableFuture.allOf(writes.toArray(new CompletableFuture<?>[0])));
        writes.clear();
      }
    }
    Futures.await(CompletableFuture.allOf(writes.toArray(new CompletableFuture<?>[0])));
    Map<Member, Set<String>> stored = new HashMap<>();
    for (Member m : members) {
      stored.put(m, keysOn(m, "p/"));
    }
    Ring ring = store.ring();
    int replication = ring.owners(keys.get(0)).size();
    int mismatches = 0;
    for (String k : keys) {
      Set<Member> holders = new HashSet<>();
      for (Member m : members) {
        if (stored.get(m).contains(k)) {
          holders.add(m);
        }
      }
      if (!holders.equals(Set.copyOf(ring.owners(k)))) {
        mismatches++;
      }
      List<String> want = new ArrayList<>();
      for (Member m : ring.owners(k)) {
        want.add(ownHosts ? m.host() : "localhost");
      }
      assertEquals(want, store.hostsOf(k), k);
    }
    assertEquals(0, mismatches, "keys not stored exactly on their computed owners");
    int total = 0;
    for (Member m : members) {
      total += stored.get(m).size();
      System.out.println(m + " holds " + stored.get(m).size() + " of " + count
          + " blobs (R = " + replication + ")");
    }
    assertEquals(count * replication, total);
    // Every byte reads back through the cluster store.
    for (String k : keys.subList(0, 500)) {
      assertArrayEquals(k.getBytes(StandardCharsets.UTF_8),
          store.readWithVersion(k, 1000).bytes());
    }
  }

  /** The nodes load a new ring file; a running client is refused, learns it and follows. */
  @Test
  void aRingChangeReachesRunningClients() throws Exception {
    try (TyrClusterBlobStore store = open(cluster, "epochs")) {
      store.put("e/before", ByteBuffer.wrap(new byte[] {1}), io.blobfs.store.PutMode.OVERWRITE);
      long epoch = store.ring().epoch();
      cluster.writeRing(epoch + 1, 128, 1); // same placement, new epoch
      long deadline = System.nanoTime() + 30_000_000_000L;
      while (store.ring().epoch() == epoch && System.nanoTime() < deadline) {
        store.stat("e/before"); // refused once the owner has the new ring, then retried
        Thread.sleep(100);
      }
      assertEquals(epoch + 1, store.ring().epoch());
      assertArrayEquals(new byte[] {1}, store.readWithVersion("e/before", 10).bytes());
    }
  }
}
