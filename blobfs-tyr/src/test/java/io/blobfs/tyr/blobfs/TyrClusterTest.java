package io.blobfs.tyr.blobfs;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

import io.blobfs.store.BlobMutation;
import io.blobfs.store.BlobNotFoundException;
import io.blobfs.store.PlacementAware;
import io.blobfs.store.PutMode;
import io.blobfs.store.ScanPage;
import io.blobfs.store.StoreOptions;
import io.blobfs.store.StoreUnavailableException;
import io.blobfs.store.TransactionalBlobStore;
import io.blobfs.tyr.api.ErrorCode;
import io.blobfs.tyr.api.TyrException;
import io.blobfs.tyr.client.ClientConfig;
import io.blobfs.tyr.client.TyrClient;
import io.blobfs.tyr.engine.EngineConfig;
import io.blobfs.tyr.ring.Member;
import io.blobfs.tyr.ring.Ring;
import io.blobfs.tyr.ring.WrongEpochException;
import io.blobfs.tyr.server.Membership;
import io.blobfs.tyr.server.ServerConfig;
import io.blobfs.tyr.server.TyrServer;
import java.io.IOException;
import java.net.ServerSocket;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.TreeSet;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** What is particular to the Týr cluster: placement, epochs, merged scans, transactions on one node and across nodes. */
class TyrClusterTest {
  @TempDir
  Path dir;

  private static String firstKey(String prefix, java.util.function.Predicate<String> p) {
    for (int i = 0; ; i++) {
      if (p.test(prefix + i)) {
        return prefix + i;
      }
    }
  }

  private static byte[] bytesOn(TyrServer node, String key) throws IOException {
    ByteBuffer b = ByteBuffer.allocate((int) node.engine().stat(key).size());
    node.engine().read(key, 0, b);
    return b.array();
  }

  private static ByteBuffer utf8(String s) {
    return ByteBuffer.wrap(s.getBytes(StandardCharsets.UTF_8));
  }

  /** The client's computed owner is the node that really stores the blob, and only it. */
  @Test
  void everyBlobIsStoredOnTheOwnerTheClientComputes() throws Exception {
    try (LocalTyrCluster c = new LocalTyrCluster(dir, 3, 128, 1);
        TyrClusterBlobStore store = c.store("p")) {
      Random r = new Random(7);
      List<String> keys = new ArrayList<>();
      List<java.util.concurrent.CompletableFuture<Void>> writes = new ArrayList<>();
      for (int i = 0; i < 10_000; i++) {
        String k = "d/" + Long.toHexString(r.nextLong()) + "/" + r.nextInt(64);
        keys.add(k);
        writes.add(store.write(k, 0, utf8(k)));
        if (writes.size() == 256) { // many in flight at once, a bounded number
          io.blobfs.store.Futures.await(java.util.concurrent.CompletableFuture.allOf(
              writes.toArray(new java.util.concurrent.CompletableFuture<?>[0])));
          writes.clear();
        }
      }
      io.blobfs.store.Futures.await(java.util.concurrent.CompletableFuture.allOf(
          writes.toArray(new java.util.concurrent.CompletableFuture<?>[0])));
      int[] perNode = new int[3];
      for (String k : keys) {
        Member owner = store.ring().primary(k);
        for (int n = 0; n < 3; n++) {
          boolean here = c.servers.get(n).engine().stat(k).exists();
          assertEquals(c.members.get(n).equals(owner), here, k + " on node " + n);
          perNode[n] += here ? 1 : 0;
        }
        assertEquals(List.of("localhost"), store.hostsOf(k));
      }
      for (int n : perNode) {
        assertThat(n).as("blobs per node %s", java.util.Arrays.toString(perNode))
            .isBetween(2_000, 4_700);
      }
      // And the merged scan lists exactly these keys, in order, page after page.
      TreeSet<String> want = new TreeSet<>(keys);
      List<String> listed = new ArrayList<>();
      String cursor = null;
      do {
        ScanPage p = store.scan("d/", cursor, 997);
        listed.addAll(p.keys());
        cursor = p.nextCursor();
      } while (cursor != null);
      assertEquals(new ArrayList<>(want), listed);
    }
  }

  @Test
  void scansMergeInKeyOrderWithinThePrefix() throws Exception {
    try (LocalTyrCluster c = new LocalTyrCluster(dir, 3, 64, 1);
        TyrClusterBlobStore store = c.store("s")) {
      TreeSet<String> want = new TreeSet<>();
      for (int i = 0; i < 200; i++) {
        store.put("a/" + i, utf8("x"), PutMode.OVERWRITE);
        want.add("a/" + i);
        store.put("b/" + i, utf8("y"), PutMode.OVERWRITE);
      }
      for (int page : new int[] {1, 7, 200, 1000}) {
        List<String> listed = new ArrayList<>();
        String cursor = null;
        do {
          ScanPage p = store.scan("a/", cursor, page);
          assertThat(p.keys().size()).isLessThanOrEqualTo(page);
          listed.addAll(p.keys());
          cursor = p.nextCursor();
        } while (cursor != null);
        assertEquals(new ArrayList<>(want), listed, "page " + page);
      }
      assertEquals(List.of(), store.scan("c/", null, 10).keys());
      assertEquals(null, store.scan("c/", null, 10).nextCursor());
    }
  }

  /**
   * A client with a stale ring is refused, learns the new ring from the refusal and goes
   * to the new owner; the old owner's copy is never read (no data moves yet).
   */
  @Test
  void aStaleClientIsRefusedAndFollowsTheNewRing() throws Exception {
    try (LocalTyrCluster c = new LocalTyrCluster(dir, 3, 64, 1);
        TyrClusterBlobStore store = c.store("e")) {
      Ring next = new Ring(2, c.members, 96, 1); // other tokens: some keys change owner
      String moved = firstKey("k", k -> !c.ring.primary(k).equals(next.primary(k)));
      store.put(moved, utf8("old owner's copy"), PutMode.OVERWRITE);
      Member oldOwner = c.ring.primary(moved);
      c.install(next);
      assertEquals(1, store.ring().epoch());
      assertThat(store.stat(moved).exists()).isFalse(); // the new owner has none
      assertEquals(2, store.ring().epoch());
      store.put(moved, utf8("new"), PutMode.OVERWRITE);
      assertArrayEquals("new".getBytes(), store.readWithVersion(moved, 100).bytes());
      assertThat(c.server(next.primary(moved)).engine().stat(moved).exists()).isTrue();
      // The old owner never took the write. Its stale copy goes once every new owner holds
      // the key (RangeDrop, on its own thread), so it is the old bytes or gone.
      try {
        assertArrayEquals("old owner's copy".getBytes(), bytesOn(c.server(oldOwner), moved));
      } catch (TyrException gone) {
        assertEquals(ErrorCode.NOT_FOUND, gone.code());
      }

      // A request under the old epoch, straight to the old owner, is refused with the ring.
      try (TyrClient raw = new TyrClient(ClientConfig.of("127.0.0.1", oldOwner.port()))) {
        raw.routeUnder(() -> 1);
        assertThatThrownBy(() -> TyrClient.await(raw.stat(moved)))
            .isInstanceOfSatisfying(WrongEpochException.class,
                w -> assertEquals(next, w.ring()));
        raw.routeUnder(() -> 2);
        assertThatThrownBy(() -> TyrClient.await(raw.read(moved, 0, 10)))
            .isInstanceOf(WrongEpochException.class).hasMessageContaining("no replica");
        assertEquals(next, TyrClient.await(raw.ring()));
      }
    }
  }

  /** A node that has not loaded the client's newer ring yet is waited for, not trusted. */
  @Test
  void aNodeBehindTheClientIsRetriedUntilItCatchesUp() throws Exception {
    try (LocalTyrCluster c = new LocalTyrCluster(dir, 3, 64, 1);
        TyrClusterBlobStore store = c.store("b")) {
      Ring next = c.ring.withEpoch(2);
      c.servers.get(0).membership().install(next);
      // Teach the client epoch 2 through node 0.
      String onNode0 = firstKey("z", k -> c.ring.primary(k).equals(c.members.get(0)));
      store.put(onNode0, utf8("a"), PutMode.OVERWRITE);
      assertEquals(2, store.ring().epoch());
      String onNode1 = firstKey("y", k -> next.primary(k).equals(c.members.get(1)));
      Thread late = new Thread(() -> {
        try {
          Thread.sleep(150);
        } catch (InterruptedException e) {
          return;
        }
        c.servers.get(1).membership().install(next);
        c.servers.get(2).membership().install(next);
      });
      late.start();
      store.put(onNode1, utf8("b"), PutMode.OVERWRITE); // refused at epoch 1, then served
      late.join();
      assertArrayEquals("b".getBytes(), bytesOn(c.servers.get(1), onNode1));
    }
  }

  @Test
  void aPlainClientCannotReachKeysTheNodeDoesNotHold() throws Exception {
    try (LocalTyrCluster c = new LocalTyrCluster(dir, 2, 64, 1);
        TyrClient raw = new TyrClient(ClientConfig.of("127.0.0.1", c.members.get(0).port()))) {
      String key = firstKey("f", k -> c.ring.primary(k).equals(c.members.get(1)));
      assertThatThrownBy(() -> TyrClient.await(raw.write(key, 0, utf8("x"))))
          .isInstanceOf(WrongEpochException.class);
      assertThat(c.servers.get(0).engine().stat(key).exists()).isFalse();
    }
  }

  /** R = 1: a lost node's keys fail fast and say so; every other key is served. */
  @Test
  void aLostNodeCostsItsKeysOnlyAndSaysWhich() throws Exception {
    try (LocalTyrCluster c = new LocalTyrCluster(dir, 3, 64, 1);
        TyrClusterBlobStore store = c.store("l", "connect-timeout", "2s", "op-timeout", "3s")) {
      List<String> keys = new ArrayList<>();
      for (int i = 0; i < 60; i++) {
        keys.add("l/" + i);
        store.put("l/" + i, utf8("v" + i), PutMode.OVERWRITE);
      }
      Member lost = c.members.get(1);
      c.stop(1);
      int lostKeys = 0;
      for (String k : keys) {
        if (c.ring.primary(k).equals(lost)) {
          lostKeys++;
          long start = System.nanoTime();
          assertThatThrownBy(() -> store.readWithVersion(k, 10))
              .isInstanceOf(StoreUnavailableException.class)
              .hasMessageContaining("node " + lost + " is unreachable")
              .hasMessageContaining("'" + k + "'")
              .hasMessageContaining("R = 1: no other replica");
          assertThatThrownBy(() -> io.blobfs.store.Futures.await(
              store.read(k, 0, ByteBuffer.allocate(4))))
              .isInstanceOf(StoreUnavailableException.class)
              .hasMessageContaining("node " + lost + " is unreachable");
          assertThat(System.nanoTime() - start).isLessThan(8_000_000_000L);
        } else {
          assertArrayEquals(("v" + k.substring(2)).getBytes(),
              store.readWithVersion(k, 10).bytes());
        }
      }
      assertThat(lostKeys).isBetween(5, 40);
      assertThatThrownBy(() -> store.scan("l/", null, 100))
          .isInstanceOf(StoreUnavailableException.class)
          .hasMessageContaining("node " + lost + " is unreachable");
    }
  }

  @Test
  void aLoneNodeHasNoRing() throws Exception {
    try (TyrServer lone = TyrServer.start(ServerConfig.local(EngineConfig.defaults(dir)));
        TyrClient raw = new TyrClient(ClientConfig.of("127.0.0.1", lone.port()))) {
      assertThatThrownBy(() -> TyrClient.await(raw.ring()))
          .isInstanceOfSatisfying(TyrException.class,
              e -> assertEquals(ErrorCode.BAD_REQUEST, e.code()));
      raw.routeUnder(() -> 1);
      assertThatThrownBy(() -> TyrClient.await(raw.stat("x")))
          .isInstanceOfSatisfying(TyrException.class,
              e -> assertEquals(ErrorCode.BAD_REQUEST, e.code()));
    }
  }

  /**
   * A cross-node transaction that counts exactly the store's commit limit is taken whole,
   * though its largest part travels in a prepare, which adds the transaction's ids.
   */
  @Test
  void aCrossNodeTransactionOfExactlyTheLimitIsTaken() throws Exception {
    try (LocalTyrCluster c = new LocalTyrCluster(dir, 3, 64, 1);
        TyrClusterBlobStore store = c.store("t")) {
      String big = firstKey("big", k -> c.ring.primary(k).equals(c.members.get(0)));
      String small = firstKey("small", k -> c.ring.primary(k).equals(c.members.get(1)));
      BlobMutation tiny = new BlobMutation.Put(small, utf8("s"), PutMode.OVERWRITE);
      long room = store.limits().maxCommitBytes() - store.commitBytes(tiny)
          - store.commitBytes(new BlobMutation.Put(big, ByteBuffer.allocate(0),
              PutMode.OVERWRITE));
      ByteBuffer content = ByteBuffer.allocate(Math.toIntExact(room));
      List<BlobMutation> tx = List.of(
          new BlobMutation.Put(big, content, PutMode.OVERWRITE), tiny);
      assertEquals(store.limits().maxCommitBytes(), store.commitBytes(tx));
      store.commit(tx);
      assertEquals(room, c.server(c.members.get(0)).engine().stat(big).size());
      assertArrayEquals("s".getBytes(), bytesOn(c.server(c.members.get(1)), small));
    }
  }

  @Test
  void transactionsCommitOnOneNodeAndAcrossNodes() throws Exception {
    try (LocalTyrCluster c = new LocalTyrCluster(dir, 3, 64, 1);
        TyrClusterBlobStore store = c.store("t")) {
      assertThat(store).isInstanceOf(TransactionalBlobStore.class)
          .isInstanceOf(PlacementAware.class);
      List<String> same = new ArrayList<>();
      String other = null;
      Member m0 = c.members.get(0);
      for (int i = 0; same.size() < 3 || other == null; i++) {
        String k = "t" + i;
        if (c.ring.primary(k).equals(m0)) {
          same.add(k);
        } else if (other == null) {
          other = k;
        }
      }
      store.put(same.get(2), utf8("gone"), PutMode.OVERWRITE);
      store.commit(List.of(new BlobMutation.Put(same.get(0), utf8("a"), PutMode.CREATE),
          new BlobMutation.Put(same.get(1), utf8("b"), PutMode.CREATE),
          new BlobMutation.Delete(same.get(2), store.stat(same.get(2)).version())));
      assertArrayEquals("a".getBytes(), store.readWithVersion(same.get(0), 9).bytes());
      assertArrayEquals("b".getBytes(), store.readWithVersion(same.get(1), 9).bytes());
      assertThat(store.stat(same.get(2)).exists()).isFalse();
      // Across nodes: a broken precondition on one node applies nothing on any.
      String o = other;
      assertThatThrownBy(() -> store.commit(List.of(
          new BlobMutation.Put(same.get(0), utf8("y"), PutMode.OVERWRITE),
          new BlobMutation.Put(o, utf8("z"), PutMode.OVERWRITE),
          new BlobMutation.Put(same.get(1), utf8("x"), PutMode.CREATE))))
          .isInstanceOf(io.blobfs.store.TransactionConflictException.class);
      assertArrayEquals("a".getBytes(), store.readWithVersion(same.get(0), 9).bytes());
      assertThatThrownBy(() -> store.readWithVersion(o, 9))
          .isInstanceOf(BlobNotFoundException.class);
      // And whole when it holds.
      store.commit(List.of(new BlobMutation.Put(same.get(0), utf8("y"), PutMode.OVERWRITE),
          new BlobMutation.Put(o, utf8("z"), PutMode.CREATE)));
      assertArrayEquals("y".getBytes(), store.readWithVersion(same.get(0), 9).bytes());
      assertArrayEquals("z".getBytes(), bytesOn(c.server(c.ring.primary(o)), o));
      for (TyrServer s : c.servers) {
        assertThat(s.preparedTransactions()).isEmpty();
      }
    }
  }

  @Test
  void badOrUnreachableClustersAreRefused() throws Exception {
    TyrBlobStoreProvider p = new TyrBlobStoreProvider();
    assertThatThrownBy(() -> p.open("x", new StoreOptions("fs.blob.store.x.",
        Map.of("nodes", "a:1", "address", "a:1")))).isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("exclusive");
    assertThatThrownBy(() -> p.open("x", new StoreOptions("fs.blob.store.x.",
        Map.of("nodes", "a")))).isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("fs.blob.store.x.nodes");
    int port;
    try (ServerSocket s = new ServerSocket(0)) {
      port = s.getLocalPort();
    }
    long start = System.nanoTime();
    assertThatThrownBy(() -> p.open("x", new StoreOptions("fs.blob.store.x.",
        Map.of("nodes", "127.0.0.1:" + port, "connect-timeout", "2s"))))
        .isInstanceOf(StoreUnavailableException.class).hasMessageContaining("no seed");
    assertThat(System.nanoTime() - start).isLessThan(10_000_000_000L);
  }

  @Test
  void aNodeFollowsItsRingFileAndRefusesOlderRings() throws Exception {
    Path file = dir.resolve("ring.properties");
    Files.writeString(file, "nodes=127.0.0.1:7401,127.0.0.1:7402\nepoch=3\nvnodes=32\n");
    Membership m = Membership.fromOptions(new StoreOptions("--", Map.of(
        "cluster-file", file.toString(), "cluster-self", "127.0.0.1:7402")), "127.0.0.1", 7402);
    try {
      assertEquals(new Ring(3, Member.parseList("127.0.0.1:7401,127.0.0.1:7402"), 32, 1),
          m.ring());
      Files.writeString(file, "nodes=127.0.0.1:7401,127.0.0.1:7402,127.0.0.1:7403\nepoch=4\n");
      Files.setLastModifiedTime(file, java.nio.file.attribute.FileTime.fromMillis(
          System.currentTimeMillis() + 5000));
      long deadline = System.nanoTime() + 60_000_000_000L; // generous: a loaded machine
      while (m.ring().epoch() != 4 && System.nanoTime() < deadline) {
        Thread.sleep(50);
      }
      assertEquals(4, m.ring().epoch());
      assertEquals(3, m.ring().members().size());
      assertThatThrownBy(() -> m.install(new Ring(2, m.ring().members(), 8, 1)))
          .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("not newer");
    } finally {
      m.close();
    }
    assertThatThrownBy(() -> Membership.fromOptions(new StoreOptions("--", Map.of(
        "cluster-nodes", "h:1,h:2")), "h", 3)).isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("not a member");
    assertEquals(null, Membership.fromOptions(new StoreOptions("--", Map.of()), "h", 1));
  }

  /**
   * A node the ring file does not list starts only when told it is joining: an existing
   * member restarted with a wrong cluster-self fails at start-up (and the monitor's
   * failover takes over) instead of answering pings while refusing everything else.
   */
  @Test
  void aNodeTheRingDoesNotListStartsOnlyWhenJoining() throws Exception {
    Path file = dir.resolve("ring.properties");
    Files.writeString(file, "nodes=127.0.0.1:7401,127.0.0.1:7402\nepoch=3\n");
    assertThatThrownBy(() -> Membership.fromOptions(new StoreOptions("--", Map.of(
        "cluster-file", file.toString(), "cluster-self", "localhost:7402")), "h", 7402))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("not a member");
    Membership joining = Membership.fromOptions(new StoreOptions("--", Map.of(
        "cluster-file", file.toString(), "cluster-self", "127.0.0.1:7403",
        "cluster-join", "true")), "h", 7403);
    try {
      assertThat(joining.isMember()).isFalse();
    } finally {
      joining.close();
    }
    assertThatThrownBy(() -> Membership.fromOptions(new StoreOptions("--", Map.of(
        "cluster-nodes", "h:1,h:2", "cluster-join", "true")), "h", 3))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("cluster-file");
  }
}
