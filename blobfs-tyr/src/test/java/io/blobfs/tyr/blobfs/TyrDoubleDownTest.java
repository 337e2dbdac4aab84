package io.blobfs.tyr.blobfs;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.blobfs.store.Futures;
import io.blobfs.store.PutMode;
import io.blobfs.store.StoreUnavailableException;
import io.blobfs.tyr.ring.Member;
import io.blobfs.tyr.ring.Ring;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Two owners of a range not UP at once (R = 2): the rings a monitor would have written
 * before it refused such marks, or an operator by hand. From the review of the failover
 * branch (its ReviewDoubleDownTest).
 */
class TyrDoubleDownTest {
  @TempDir
  Path dir;

  /**
   * B is DOWN, A acknowledges v2 alone, A goes DOWN, B returns: B must not catch up (from
   * nobody) while its range with A has no UP owner. Once A is back UP (the operator knows
   * it is current and marks it so), B catches up from A and then serves A's v2.
   */
  @Test
  void anAckedWriteSurvivesTwoSuccessiveDownMarks() throws Exception {
    try (LocalTyrCluster c = new LocalTyrCluster(dir, 3, 64, 2);
        TyrClusterBlobStore store = c.store("f", "connect-timeout", "1s", "op-timeout", "5s")) {
      Member a = c.members.get(0);
      Member b = c.members.get(2);
      String key = keyOwnedBy(c.ring, a, b);
      store.put(key, utf8("v1"), PutMode.OVERWRITE);
      c.stop(2);
      Ring e2 = c.ring.withState(b, Ring.State.DOWN, 2);
      c.installOnRunning(e2);
      store.put(key, utf8("v2"), PutMode.OVERWRITE); // acknowledged by A alone
      c.stop(0);
      Ring e3 = e2.withState(a, Ring.State.DOWN, 3);
      c.installOnRunning(e3);
      c.restart(2, e3);
      Ring e4 = e3.withState(b, Ring.State.RECOVERING, 4);
      c.installOnRunning(e4);
      Thread.sleep(3000); // several catch-up attempts
      assertTrue(c.servers.get(2).caughtUpEpoch() < 4,
          "B caught up although A, the only current owner of " + key + ", is DOWN");

      // The way out, by hand: A returns, RECOVERING (it cannot catch up either), and the
      // operator, who knows A took the last writes, marks it UP.
      c.restart(0, e4);
      Ring e5 = e4.withState(a, Ring.State.RECOVERING, 5);
      c.installOnRunning(e5);
      Ring e6 = e5.withState(a, Ring.State.UP, 6);
      c.installOnRunning(e6);
      awaitCaughtUp(c, 2, 6);
      Ring e7 = e6.withState(b, Ring.State.UP, 7);
      c.installOnRunning(e7);
      assertEquals("v2", read(store, key), key);
      c.stop(0); // B alone must have it too
      c.installOnRunning(e7.withState(a, Ring.State.DOWN, 8));
      assertEquals("v2", read(store, key), key + " on B");
    }
  }

  /**
   * 60 keys, two of three members DOWN (R = 2): some arcs have no UP owner, so a scan
   * fails typed instead of returning the UP member's keys only (it returned 40 of 60).
   */
  @Test
  void aListingWithARangeNobodyServesFailsTyped() throws Exception {
    try (LocalTyrCluster c = new LocalTyrCluster(dir, 3, 64, 2);
        TyrClusterBlobStore store = c.store("g", "connect-timeout", "1s", "op-timeout", "5s")) {
      for (int i = 0; i < 60; i++) {
        store.put("d/" + i, ByteBuffer.wrap(new byte[1]), PutMode.OVERWRITE);
      }
      c.stop(0);
      c.stop(2);
      Ring e3 = c.ring.withState(c.members.get(0), Ring.State.DOWN, 2)
          .withState(c.members.get(2), Ring.State.DOWN, 3);
      c.installOnRunning(e3);
      StoreUnavailableException e = assertThrows(StoreUnavailableException.class,
          () -> store.scan("d/", null, 1000));
      assertThat(e.getMessage()).contains("no UP owner").contains("'d/*' cannot be listed");
    }
  }

  static String keyOwnedBy(Ring ring, Member a, Member b) {
    for (int i = 0; ; i++) {
      String k = "k/" + i;
      if (ring.isReplica(a, k) && ring.isReplica(b, k)) {
        return k;
      }
    }
  }

  private static void awaitCaughtUp(LocalTyrCluster c, int node, long epoch) throws Exception {
    long deadline = System.nanoTime() + 30_000_000_000L;
    while (c.servers.get(node).caughtUpEpoch() < epoch) {
      assertTrue(System.nanoTime() < deadline, "node " + node + " did not catch up at " + epoch);
      Thread.sleep(20);
    }
  }

  private static ByteBuffer utf8(String s) {
    return ByteBuffer.wrap(s.getBytes(StandardCharsets.UTF_8));
  }

  private static String read(TyrClusterBlobStore store, String key) throws Exception {
    ByteBuffer got = ByteBuffer.allocate(2);
    Futures.await(store.read(key, 0, got));
    return new String(got.array(), StandardCharsets.UTF_8);
  }
}
