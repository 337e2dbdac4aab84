package io.blobfs.tyr.server;

import static org.assertj.core.api.Assertions.assertThat;

import io.blobfs.tyr.api.CommitResult;
import io.blobfs.tyr.api.TxOp;
import io.blobfs.tyr.api.TxRequest;
import io.blobfs.tyr.engine.EngineConfig;
import io.blobfs.tyr.engine.SyncPolicy;
import io.blobfs.tyr.engine.TyrEngine;
import io.blobfs.tyr.protocol.Request;
import io.blobfs.tyr.protocol.TxDecision;
import io.blobfs.tyr.ring.Member;
import io.blobfs.tyr.ring.Ring;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletionException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Review repro (tyr-bug1): a decided part loses its hold when a second takeover's is released. */
class HeldShareTest {
  @TempDir Path dir;

  private static final Duration LONG = Duration.ofSeconds(120);
  private static final String Y = "0f1e2d3c-4b5a-4978-8695-a4b3c2d1e0f9";
  private static final String X = "1a1e2d3c-4b5a-4978-8695-a4b3c2d1e0f9";

  /** Engine level: two reservations of one key (what two share takeovers make), one released. */
  @Test
  void releasingOneOfTwoReservationsOfAKeyKeepsTheOtherHold() throws Exception {
    try (TyrEngine e = TyrEngine.open(EngineConfig.defaults(dir.resolve("e"))
        .withSyncPolicy(SyncPolicy.NONE))) {
      e.reservePrepared(Y + "-s1", put("k", 2)); // Y: decided commit, waiting
      e.reservePrepared(X + "-s1", put("k", 1)); // X: undecided, reserved second
      e.releasePrepared(X + "-s1"); // X aborted
      CommitResult w = null;
      Throwable refused = null;
      try {
        w = e.commit(put("k", 7)).join(); // a client's later write
      } catch (CompletionException ce) {
        refused = ce.getCause();
      }
      assertThat(refused).as("k is still held by Y (decided, not applied); the write got "
          + w).isNotNull();
    }
  }

  /**
   * Narrowing a part (a give-back took some of its keys) keeps its holds in place: no
   * moment where a key it keeps is free, and no later part of that key moved ahead of it.
   * Release-then-reserve (as narrow did) puts Y behind X, so X's apply passes first.
   */
  @Test
  void narrowingAPartKeepsItsPlaceOnTheKeysItKeeps() throws Exception {
    try (TyrEngine e = TyrEngine.open(EngineConfig.defaults(dir.resolve("e"))
        .withSyncPolicy(SyncPolicy.NONE))) {
      TxRequest both = new TxRequest(List.of(), List.of(
          new TxOp.Put("k", ByteBuffer.wrap(new byte[] {2}), false),
          new TxOp.Put("j", ByteBuffer.wrap(new byte[] {2}), false)));
      e.reservePrepared(Y + "-s1", both); // Y first on k (the old primary's order)
      e.reservePrepared(X + "-s1", put("k", 1)); // X after it
      e.narrowPrepared(Y + "-s1", put("k", 2)); // j given back
      Throwable xFirst = null;
      try {
        e.commitPrepared(X + "-s1", put("k", 1)).join();
      } catch (CompletionException ce) {
        xFirst = ce.getCause();
      }
      assertThat(xFirst).as("X applied before Y, which holds k first").isNotNull();
      assertThat(e.commit(put("j", 9)).join()).as("j, given back, is free").isNotNull();
      e.commitPrepared(Y + "-s1", put("k", 2)).join();
      e.commitPrepared(X + "-s1", put("k", 1)).join();
      ByteBuffer got = ByteBuffer.allocate(1);
      e.read("k", 0, got);
      assertThat(got.array()[0]).as("k after Y then X").isEqualTo((byte) 1);
    }
  }

  /**
   * Cluster level: the branch's held-share scenario with the key chosen so that X's takeover
   * reserves the key last. After X aborts, a client write W to the key on b is acknowledged,
   * then Y's retry applies its put over W.
   */
  @Test
  void aDecidedShareRetriedAfterAnotherHoldIsReleasedDoesNotApplyOverALaterWrite()
      throws Exception {
    Member p = new Member("127.0.0.1", io.blobfs.tyr.TestPorts.free());
    Member b = new Member("127.0.0.1", io.blobfs.tyr.TestPorts.free());
    Member q = new Member("127.0.0.1", io.blobfs.tyr.TestPorts.free());
    Ring ring = new Ring(1, List.of(p, b), 16, 2);
    String key = keyWhereXReservesLast(ring, p, b);
    try (TyrServer np = start(p, ring, "p", LONG);
        TyrServer nb = start(b, ring, "b", Duration.ofSeconds(1))) {
      np.transactions().prepare(new Request.Prepare(X, q.id(), List.of(p.id(), q.id()),
          put(key, 1))).join();
      np.transactions().decide(new Request.Decide(X, TxDecision.APPLY_ABORT)).join();
      np.transactions().prepare(new Request.Prepare(Y, p.id(), List.of(p.id()),
          put(key, 2))).join();
      assertThat(nb.transactions().held()).hasSize(2);
      nb.membership().install(ring.withEpoch(2));
      np.transactions().decide(new Request.Decide(Y, TxDecision.DECIDE_COMMIT)).join();
      nb.membership().install(ring.withState(p, Ring.State.DOWN, 3));
      long end = System.nanoTime() + Duration.ofSeconds(90).toNanos();
      // Y met X's hold a few times: its next retry is seconds away.
      while (nb.transactions().retries() < 4) {
        assertThat(nb.engine().stat(key).exists()).as("Y applied at once: wrong key order")
            .isFalse();
        assertThat(System.nanoTime()).isLessThan(end);
        Thread.sleep(20);
      }
      try (TyrServer nq = start(q, new Ring(1, List.of(q), 16, 1), "q", LONG)) {
        // X aborts on b (resolved with q). Y, decided commit, then applies at once (the next
        // holder's wake) or is still prepared a moment: W below comes in either state.
        while (nb.transactions().prepared().size() > 1) {
          assertThat(System.nanoTime()).isLessThan(end);
          Thread.sleep(5);
        }
        // A client's write W on b, the key's UP primary, after Y was decided.
        Throwable refused = null;
        try {
          nb.engine().commit(put(key, 7)).join();
        } catch (CompletionException ce) {
          refused = ce.getCause();
        }
        while (!nb.transactions().prepared().isEmpty()) {
          assertThat(System.nanoTime()).isLessThan(end);
          Thread.sleep(20);
        }
        ByteBuffer got = ByteBuffer.allocate(1);
        nb.engine().read(key, 0, got);
        // W refused (Y still held the key) leaves Y's 2; W acknowledged (Y applied before
        // it) must stay: Y applied over an acknowledged W would read 2 with W acknowledged
        assertThat(got.array()[0]).as("W " + (refused == null ? "acknowledged" : "refused")
            + ": the key reads the last of Y and W").isEqualTo((byte) (refused == null ? 7 : 2));
      }
    }
  }

  /**
   * A key owned by (p, b) whose X share is iterated after Y's in b's HashMap of shares (so
   * a takeover in map order would reserve Y first; it must go by p's order, X first).
   */
  private static String keyWhereXReservesLast(Ring ring, Member... owners) {
    for (int i = 0; ; i++) {
      String k = "k/" + i;
      if (!ring.owners(k).equals(List.of(owners))) {
        continue;
      }
      String sx = X + "-s" + Integer.toHexString(List.of(k).hashCode());
      String sy = Y + "-s" + Integer.toHexString(List.of(k).hashCode());
      Map<String, Object> m = new HashMap<>();
      m.put(sx, 1);
      m.put(sy, 2);
      if (m.keySet().iterator().next().equals(sy)) {
        return k;
      }
    }
  }

  private static TxRequest put(String key, int v) {
    return new TxRequest(List.of(), List.of(new TxOp.Put(key,
        ByteBuffer.wrap(new byte[] {(byte) v}), false)));
  }

  private TyrServer start(Member m, Ring ring, String name, Duration txTimeout)
      throws IOException {
    EngineConfig engine = EngineConfig.defaults(dir.resolve(name))
        .withSyncPolicy(SyncPolicy.NONE);
    ServerConfig config = new ServerConfig("127.0.0.1", m.port(), engine, 80 << 20, null, 8,
        64, Duration.ofSeconds(60), 512L << 20, 128L << 20, Duration.ofSeconds(60), null);
    return TyrServer.start(config, new Membership(m, ring).withTxTimeout(txTimeout));
  }
}
