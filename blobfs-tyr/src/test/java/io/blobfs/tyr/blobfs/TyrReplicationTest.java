package io.blobfs.tyr.blobfs;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

import io.blobfs.store.Futures;
import io.blobfs.store.PutMode;
import io.blobfs.store.StoreUnavailableException;
import io.blobfs.tyr.api.TxOp;
import io.blobfs.tyr.api.TxRequest;
import io.blobfs.tyr.client.ClientConfig;
import io.blobfs.tyr.client.TyrClient;
import io.blobfs.tyr.protocol.Request;
import io.blobfs.tyr.ring.Member;
import io.blobfs.tyr.ring.Ring;
import io.blobfs.tyr.ring.WrongEpochException;
import io.blobfs.tyr.server.TyrServer;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** R = 2, primary-backup: what the primary acknowledges, both replicas hold, byte for byte. */
class TyrReplicationTest {
  @TempDir
  Path dir;

  private static byte[] bytesOn(TyrServer node, String key) throws IOException {
    if (!node.engine().stat(key).exists()) {
      return null;
    }
    ByteBuffer b = ByteBuffer.allocate((int) node.engine().stat(key).size());
    node.engine().read(key, 0, b);
    return b.array();
  }

  private static ByteBuffer utf8(String s) {
    return ByteBuffer.wrap(s.getBytes(StandardCharsets.UTF_8));
  }

  /** Every key lives on exactly its two owners, with the same bytes, and nowhere else. */
  @Test
  void everyAcknowledgedWriteIsOnBothReplicasAndNowhereElse() throws Exception {
    try (LocalTyrCluster c = new LocalTyrCluster(dir, 3, 64, 2);
        TyrClusterBlobStore store = c.store("r")) {
      Random r = new Random(5);
      List<String> keys = new ArrayList<>();
      for (int i = 0; i < 400; i++) {
        String k = "r/" + i;
        keys.add(k);
        byte[] data = new byte[r.nextInt(3000)];
        r.nextBytes(data);
        store.put(k, ByteBuffer.wrap(data), PutMode.OVERWRITE);
        if (i % 3 == 0) {
          Futures.await(store.write(k, 100, utf8("patched at 100")));
        }
        if (i % 5 == 0) {
          store.truncate(k, 50);
        }
        if (i % 7 == 0) {
          store.delete(k);
        }
      }
      for (String k : keys) {
        List<Member> owners = store.ring().owners(k);
        assertEquals(2, owners.size());
        byte[] primary = bytesOn(c.server(owners.get(0)), k);
        assertArrayEquals(primary, bytesOn(c.server(owners.get(1)), k), k);
        for (Member m : c.members) {
          if (!owners.contains(m)) {
            assertEquals(null, bytesOn(c.server(m), k), k + " on a non-owner");
          }
        }
        if (primary != null) {
          byte[] read = new byte[primary.length];
          for (int i = 0; i < 4; i++) { // any replica answers, each the same bytes
            ByteBuffer b = ByteBuffer.wrap(read);
            Futures.await(store.read(k, 0, b));
            assertArrayEquals(primary, read, k);
          }
        }
      }
    }
  }

  /** Appends, adds, compare-and-sets and creates reach the backup as the bytes they wrote. */
  @Test
  void logicalOpsReachTheBackupResolved() throws Exception {
    try (LocalTyrCluster c = new LocalTyrCluster(dir, 2, 64, 2)) {
      String key = "counter";
      Member primary = c.ring.primary(key);
      Member backup = c.ring.owners(key).get(1);
      try (TyrClient raw = new TyrClient(ClientConfig.of(primary.host(), primary.port()))) {
        raw.routeUnder(() -> 1);
        TyrClient.await(raw.commit(TxRequest.of(new TxOp.Create(key))));
        TyrClient.await(raw.append(key, ByteBuffer.allocate(16)));
        for (int i = 0; i < 10; i++) {
          TyrClient.await(raw.add(key, 0, 3));
        }
        assertThat(TyrClient.await(raw.compareAndSet(key, 8, 0, 77))).isTrue();
        assertThat(TyrClient.await(raw.compareAndSet(key, 8, 0, 99))).isFalse();
        TyrClient.await(raw.append(key, utf8("tail")));
      }
      byte[] onPrimary = bytesOn(c.server(primary), key);
      assertEquals(30, ByteBuffer.wrap(onPrimary).getLong(0));
      assertEquals(77, ByteBuffer.wrap(onPrimary).getLong(8));
      assertEquals(20, onPrimary.length);
      assertArrayEquals(onPrimary, bytesOn(c.server(backup), key));
    }
  }

  /** Overlapping writes racing on one blob end the same on both replicas. */
  @Test
  void concurrentOverlappingWritesEndTheSameOnBothReplicas() throws Exception {
    try (LocalTyrCluster c = new LocalTyrCluster(dir, 3, 64, 2);
        TyrClusterBlobStore store = c.store("o")) {
      ExecutorService pool = Executors.newFixedThreadPool(8);
      try {
        for (int round = 0; round < 5; round++) {
          String key = "o/" + round;
          List<Future<?>> jobs = new ArrayList<>();
          for (int t = 0; t < 8; t++) {
            int writer = t;
            jobs.add(pool.submit(() -> {
              List<CompletableFuture<Void>> writes = new ArrayList<>();
              for (int i = 0; i < 40; i++) {
                byte[] b = new byte[512];
                java.util.Arrays.fill(b, (byte) (writer * 40 + i));
                writes.add(store.write(key, (i * 37L) % 2048, ByteBuffer.wrap(b)));
              }
              return CompletableFuture.allOf(writes.toArray(new CompletableFuture<?>[0])).join();
            }));
          }
          for (Future<?> j : jobs) {
            j.get();
          }
          List<Member> owners = store.ring().owners(key);
          assertArrayEquals(bytesOn(c.server(owners.get(0)), key),
              bytesOn(c.server(owners.get(1)), key), key);
        }
      } finally {
        pool.shutdownNow();
      }
    }
  }

  /**
   * A replica down: reads go on from the other; writes that need it fail, unacknowledged,
   * within the timeouts while no ring marks it down (a few are tried: each waits for a
   * ring change until the op timeout), and succeed once one does.
   */
  @Test
  void readsSurviveALostReplicaAndWritesThatNeedItFail() throws Exception {
    try (LocalTyrCluster c = new LocalTyrCluster(dir, 3, 64, 2);
        TyrClusterBlobStore store = c.store("d", "connect-timeout", "2s", "op-timeout", "4s")) {
      List<String> keys = new ArrayList<>();
      for (int i = 0; i < 90; i++) {
        keys.add("d/" + i);
        store.put("d/" + i, utf8("v" + i), PutMode.OVERWRITE);
      }
      Member lost = c.members.get(2);
      c.stop(2);
      int needing = 0;
      for (String k : keys) {
        byte[] want = ("v" + k.substring(2)).getBytes(StandardCharsets.UTF_8);
        for (int i = 0; i < 3; i++) {
          ByteBuffer b = ByteBuffer.allocate(want.length);
          assertEquals(want.length, Futures.await(store.read(k, 0, b)), k);
          assertArrayEquals(want, b.array(), k);
        }
        if (store.ring().owners(k).contains(lost)) {
          if (needing++ < 3) {
            long start = System.nanoTime();
            assertThatThrownBy(() -> store.put(k, utf8("new"), PutMode.OVERWRITE))
                .isInstanceOf(StoreUnavailableException.class);
            assertThat((System.nanoTime() - start) / 1_000_000).isLessThan(12_000);
          }
        } else {
          store.put(k, utf8("new"), PutMode.OVERWRITE);
          assertArrayEquals("new".getBytes(), store.readWithVersion(k, 9).bytes());
        }
      }
      assertThat(needing).isBetween(30, 85);
      c.installOnRunning(c.ring.withState(lost, Ring.State.DOWN, 2));
      for (String k : keys) { // the client, still on epoch 1, finds the new ring
        store.put(k, utf8("after " + k), PutMode.OVERWRITE);
        assertArrayEquals(("after " + k).getBytes(), store.readWithVersion(k, 20).bytes());
      }
    }
  }

  /**
   * A backup that restarts while no write needed it takes its primary's stream where it
   * is: the next write succeeds at once (it was refused, "resumes at N, expected 1", and
   * failed unacknowledged).
   */
  @Test
  void aRestartedBackupFollowsTheStreamWhereItIs() throws Exception {
    try (LocalTyrCluster c = new LocalTyrCluster(dir, 2, 64, 2);
        TyrClusterBlobStore store = c.store("b", "connect-timeout", "2s", "op-timeout", "4s")) {
      String key = "b/1";
      for (int i = 0; i < 5; i++) {
        store.put(key, utf8("v" + i), PutMode.OVERWRITE);
      }
      int backup = c.members.indexOf(c.ring.owners(key).get(1));
      c.stop(backup);
      c.restart(backup);
      long start = System.nanoTime();
      store.put(key, utf8("after restart"), PutMode.OVERWRITE);
      assertThat((System.nanoTime() - start) / 1_000_000).isLessThan(3_000);
      assertArrayEquals("after restart".getBytes(),
          bytesOn(c.servers.get(backup), key));
    }
  }

  /**
   * Node-to-node streams prove the shared secret like clients: with a secret, replication
   * works, and a peer without it cannot even say hello.
   */
  @Test
  void replicationAuthenticatesLikeClients() throws Exception {
    byte[] secret = "cluster secret".getBytes(StandardCharsets.UTF_8);
    java.nio.file.Path secretFile = dir.resolve("secret");
    java.nio.file.Files.write(secretFile, secret);
    try (LocalTyrCluster c = new LocalTyrCluster(dir.resolve("nodes"), 3, 64, 2, secret);
        TyrClusterBlobStore store = c.store("a", "secret-file", secretFile.toString())) {
      store.put("a/1", utf8("secret data"), PutMode.OVERWRITE);
      List<Member> owners = store.ring().owners("a/1");
      assertArrayEquals("secret data".getBytes(), bytesOn(c.server(owners.get(1)), "a/1"));
      Member backup = owners.get(1);
      try (TyrClient anonymous = new TyrClient(ClientConfig.of(backup.host(), backup.port()))) {
        TxRequest tx = TxRequest.of(new TxOp.Put("a/1", utf8("forged"), false));
        assertThatThrownBy(() -> TyrClient.await(anonymous.replicate(
            new Request.Replicate(1, owners.get(0).id(), 7, 1, List.of(tx)))))
            .isInstanceOfSatisfying(io.blobfs.tyr.api.TyrException.class,
                e -> assertEquals(io.blobfs.tyr.api.ErrorCode.UNAUTHENTICATED, e.code()));
      }
      assertArrayEquals("secret data".getBytes(), bytesOn(c.server(backup), "a/1"));
    }
  }

  /** Writes go to the primary only; a backup takes replication from its primary only. */
  @Test
  void writesAtABackupAndReplicationFromANonPrimaryAreRefused() throws Exception {
    try (LocalTyrCluster c = new LocalTyrCluster(dir, 3, 64, 2)) {
      String key = "w";
      List<Member> owners = c.ring.owners(key);
      Member backup = owners.get(1);
      Member other = c.members.stream().filter(m -> !owners.contains(m)).findFirst()
          .orElseThrow();
      try (TyrClient raw = new TyrClient(ClientConfig.of(backup.host(), backup.port()))) {
        raw.routeUnder(() -> 1);
        assertThatThrownBy(() -> TyrClient.await(raw.write(key, 0, utf8("x"))))
            .isInstanceOf(WrongEpochException.class).hasMessageContaining("not the primary");
        TxRequest tx = TxRequest.of(new TxOp.Put(key, utf8("forged"), false));
        assertThatThrownBy(() -> TyrClient.await(raw.replicate(
            new Request.Replicate(1, other.id(), 1, 1, List.of(tx)))))
            .isInstanceOf(WrongEpochException.class).hasMessageContaining("not a backup");
        assertThatThrownBy(() -> TyrClient.await(raw.replicate(
            new Request.Replicate(2, owners.get(0).id(), 1, 1, List.of(tx)))))
            .isInstanceOf(WrongEpochException.class).hasMessageContaining("epoch 2");
        assertThat(c.server(backup).engine().stat(key).exists()).isFalse();
      }
      Ring ring = c.ring;
      assertEquals(2, ring.replication());
    }
  }
}
