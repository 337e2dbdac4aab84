package io.blobfs.tyr.blobfs;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

import io.blobfs.store.Futures;
import io.blobfs.store.PutMode;
import io.blobfs.tyr.api.TxOp;
import io.blobfs.tyr.api.TxRequest;
import io.blobfs.tyr.api.TyrException;
import io.blobfs.tyr.client.ClientConfig;
import io.blobfs.tyr.client.TyrClient;
import io.blobfs.tyr.ring.Member;
import io.blobfs.tyr.ring.Ring;
import io.blobfs.tyr.ring.WrongEpochException;
import io.blobfs.tyr.server.TyrServer;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Failover and catch-up with R = 2 on 3 nodes in this JVM: a node marked DOWN hands its
 * keys' writes to the next owner, the old primary cannot acknowledge under the old ring,
 * and a node that comes back copies what it missed before it is marked UP.
 */
class TyrFailoverTest {
  @TempDir
  Path dir;

  private static ByteBuffer utf8(String s) {
    return ByteBuffer.wrap(s.getBytes(StandardCharsets.UTF_8));
  }

  private static byte[] bytesOn(TyrServer node, String key) throws IOException {
    if (!node.engine().stat(key).exists()) {
      return null;
    }
    ByteBuffer b = ByteBuffer.allocate((int) node.engine().stat(key).size());
    node.engine().read(key, 0, b);
    return b.array();
  }

  private static byte[] read(TyrClusterBlobStore store, String key, int length)
      throws IOException {
    ByteBuffer b = ByteBuffer.allocate(length);
    assertEquals(length, Futures.await(store.read(key, 0, b)), key);
    return b.array();
  }

  private static void awaitCaughtUp(TyrServer node, long epoch) throws InterruptedException {
    long deadline = System.nanoTime() + 30_000_000_000L;
    while (node.caughtUpEpoch() < epoch) {
      assertThat(System.nanoTime()).as("caught up under epoch " + epoch).isLessThan(deadline);
      Thread.sleep(20);
    }
  }

  /**
   * Node 2 lost and marked DOWN: every blob reads and takes writes (the client, still on
   * the old ring, fails over). Node 2 back, RECOVERING while a writer goes on, then UP;
   * then node 0 lost: every blob still holds its last acknowledged bytes, read from the
   * cluster and on node 2's own disk for the keys it holds, which it could only have
   * through catch-up and replication.
   */
  @Test
  void deadNodesKeysStayWritableAndItCatchesUpBeforeServing() throws Exception {
    try (LocalTyrCluster c = new LocalTyrCluster(dir, 3, 64, 2);
        TyrClusterBlobStore store = c.store("f", "connect-timeout", "1s", "op-timeout", "5s")) {
      Map<String, String> want = new ConcurrentHashMap<>();
      for (int i = 0; i < 120; i++) {
        String k = "f/" + i;
        want.put(k, "before-" + i);
        store.put(k, utf8(want.get(k)), PutMode.OVERWRITE);
      }
      Member lost = c.members.get(2);
      c.stop(2);
      Ring down = c.ring.withState(lost, Ring.State.DOWN, 2);
      c.installOnRunning(down);
      for (String k : new TreeMap<>(want).keySet()) {
        assertArrayEquals(want.get(k).getBytes(), read(store, k, want.get(k).length()), k);
        want.put(k, "while-down-" + k);
        store.put(k, utf8(want.get(k)), PutMode.OVERWRITE); // fails over for node 2's keys
        assertArrayEquals(want.get(k).getBytes(), read(store, k, want.get(k).length()), k);
      }
      assertEquals(2, store.ring().epoch());
      for (int i = 0; i < 40; i++) {
        String k = "new-while-down/" + i;
        want.put(k, "created-" + i);
        store.put(k, utf8(want.get(k)), PutMode.OVERWRITE);
      }
      store.delete("f/7");
      want.remove("f/7");

      c.restart(2, down);
      TyrServer back = c.servers.get(2);
      String itsKey = want.keySet().stream().filter(k -> down.isReplica(lost, k)).findFirst()
          .orElseThrow();
      try (TyrClient raw = new TyrClient(ClientConfig.of(lost.host(), lost.port()))) {
        raw.routeUnder(() -> 2);
        assertThatThrownBy(() -> TyrClient.await(raw.stat(itsKey)))
            .isInstanceOf(WrongEpochException.class).hasMessageContaining("DOWN");
      }
      // A writer goes on while node 2 copies: its writes reach node 2 by replication.
      AtomicBoolean stop = new AtomicBoolean();
      java.util.concurrent.atomic.AtomicReference<Throwable> writerFailed =
          new java.util.concurrent.atomic.AtomicReference<>();
      Ring recovering = down.withState(lost, Ring.State.RECOVERING, 3);
      Thread writer = new Thread(() -> {
        for (int i = 0; !stop.get(); i++) {
          String k = "f/" + (i % 120 == 7 ? 8 : i % 120);
          String v = "during-recovery-" + i;
          try {
            store.put(k, utf8(v), PutMode.OVERWRITE);
            want.put(k, v);
          } catch (IOException e) {
            writerFailed.set(e);
            return;
          }
        }
      });
      writer.start();
      Thread.sleep(50);
      c.install(recovering);
      awaitCaughtUp(back, 3);
      try (TyrClient raw = new TyrClient(ClientConfig.of(lost.host(), lost.port()))) {
        raw.routeUnder(() -> 3);
        assertThatThrownBy(() -> TyrClient.await(raw.stat(itsKey)))
            .isInstanceOf(WrongEpochException.class).hasMessageContaining("RECOVERING");
      }
      Thread.sleep(50);
      stop.set(true);
      writer.join();
      assertThat(writerFailed.get()).as("a write while node 2 catches up").isNull();
      Ring up = recovering.withState(lost, Ring.State.UP, 4);
      c.install(up);

      int held = 0;
      for (Map.Entry<String, String> e : want.entrySet()) {
        if (up.isReplica(lost, e.getKey())) {
          held++;
          assertArrayEquals(e.getValue().getBytes(), bytesOn(back, e.getKey()), e.getKey());
        }
      }
      assertThat(held).isGreaterThan(40);
      assertThat(bytesOn(back, "f/7")).isNull();

      c.stop(0);
      c.installOnRunning(up.withState(c.members.get(0), Ring.State.DOWN, 5));
      for (Map.Entry<String, String> e : want.entrySet()) {
        assertArrayEquals(e.getValue().getBytes(),
            read(store, e.getKey(), e.getValue().length()), e.getKey());
      }
      assertThatThrownBy(() -> store.readWithVersion("f/7", 10))
          .isInstanceOf(io.blobfs.store.BlobNotFoundException.class);
    }
  }

  /**
   * The old primary of a key, still on the old ring (as if frozen while the others moved
   * on), cannot acknowledge a write: its backup refuses replication under the old epoch.
   * The new primary's write is the one that stands, on both of its replicas.
   */
  @Test
  void anOldPrimaryOnTheOldRingCannotAcknowledge() throws Exception {
    try (LocalTyrCluster c = new LocalTyrCluster(dir, 3, 64, 2);
        TyrClusterBlobStore store = c.store("s", "connect-timeout", "1s", "op-timeout", "5s")) {
      String key = "s/key";
      store.put(key, utf8("first"), PutMode.OVERWRITE);
      Member old = c.ring.primary(key);
      Member next = c.ring.owners(key).get(1);
      Ring moved = c.ring.withState(old, Ring.State.DOWN, 2);
      for (Member m : c.members) {
        if (!m.equals(old)) {
          c.server(m).membership().install(moved); // the old primary never hears of it
        }
      }
      try (TyrClient stale = new TyrClient(ClientConfig.of(old.host(), old.port()))) {
        stale.routeUnder(() -> 1);
        assertThatThrownBy(() -> TyrClient.await(stale.commit(
            TxRequest.of(new TxOp.Put(key, utf8("split brain"), false)))))
            .isInstanceOf(TyrException.class);
      }
      store.put(key, utf8("second"), PutMode.OVERWRITE);
      assertEquals(next, moved.primary(key));
      assertArrayEquals("second".getBytes(), bytesOn(c.server(next), key));
      assertArrayEquals("second".getBytes(), store.readWithVersion(key, 20).bytes());
      for (int i = 0; i < 5; i++) {
        assertArrayEquals("second".getBytes(), read(store, key, 6));
      }
    }
  }
}
