package io.blobfs.tyr.server;

import static org.assertj.core.api.Assertions.assertThat;

import io.blobfs.tyr.api.TxOp;
import io.blobfs.tyr.api.TxRequest;
import io.blobfs.tyr.client.TyrClient;
import io.blobfs.tyr.engine.EngineConfig;
import io.blobfs.tyr.engine.SyncPolicy;
import io.blobfs.tyr.engine.TyrEngine;
import io.blobfs.tyr.protocol.Request;
import io.blobfs.tyr.ring.Member;
import io.blobfs.tyr.ring.Ring;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.function.BooleanSupplier;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Issue 13's bug 3, the rebase and catch-up: a catch-up copy leaves no behind share to be
 * applied again (was ReviewHeldCatchUpTest). The history IT's open bug 3 (issue 13, M1a on backups), reproduced in one JVM: with
 * R = 3, key k owned by [p, b, c]. b and c hold shares of two decided transactions of k,
 * X then Y in p's order (p applied X and its apply to both backups was lost, then prepared
 * Y: p's batches are fed to b and c by hand, p never runs). p is lost: b takes X and Y
 * over (Y behind X on k) and hands both on to its backup c; X applies on b and, by b's
 * replication, on c. On c the second share Y must not be taken for applied because k moved
 * off the version c recorded for it: that move is X's apply, not Y's.
 */
class RebaseCatchUpCopyTest {
  private static final String X = "1a1e2d3c-4b5a-4978-8695-a4b3c2d1e0f9";
  private static final String Y = "0f1e2d3c-4b5a-4978-8695-a4b3c2d1e0f9";
  private static final Duration LONG = Duration.ofSeconds(120);

  @TempDir Path dir;

  private Member p;
  private Member b;
  private Member c;
  private Member q;
  private Member r;
  private Ring ring;
  private String k;

  private void members() throws IOException {
    p = new Member("127.0.0.1", io.blobfs.tyr.TestPorts.free());
    b = new Member("127.0.0.1", io.blobfs.tyr.TestPorts.free());
    c = new Member("127.0.0.1", io.blobfs.tyr.TestPorts.free());
    q = new Member("127.0.0.1", io.blobfs.tyr.TestPorts.free());
    r = new Member("127.0.0.1", io.blobfs.tyr.TestPorts.free());
    ring = new Ring(1, List.of(p, b, c), 16, 3);
    for (int i = 0; k == null; i++) {
      if (ring.owners("k/" + i).equals(List.of(p, b, c))) {
        k = "k/" + i;
      }
    }
  }

  private String yShare() {
    return Y + "-s" + Integer.toHexString(List.of(k).hashCode());
  }

  private TyrServer startCoordinator(Member m, String name, String... committed)
      throws IOException {
    Path data = dir.resolve(name);
    try (TyrEngine e = TyrEngine.open(EngineConfig.defaults(data)
        .withSyncPolicy(SyncPolicy.NONE))) {
      TxRecords recs = new TxRecords(e.config().directory());
      for (String id : committed) {
        recs.writeDecision(id, true);
      }
    }
    return start(m, new Ring(1, List.of(m), 16, 1), name, LONG);
  }

  /**
   * Review of tyr-held (MF4), for the rebase (ALTERNATIVE.md section 3.4): c holds Y's
   * share behind X (known versions, from before X) from b's hand-on, then c is DOWN while
   * b applies X and Y (Append): no rebase reaches c. c comes back RECOVERING and copies k
   * ("xy") from b: the copy moves k off both shares' versions, so both read as applied.
   * Later b is lost and c, now k's primary, must not apply Y again ("xyy"). Main's
   * behaviour; the guard is that the rebase adds no state a copy would have to know.
   */
  @Test
  void aCatchUpCopyDoesNotLeaveTheBehindShareToBeAppliedAgain() throws Exception {
    members();
    Duration timeout = Duration.ofSeconds(1);
    Ring down = ring.withState(p, Ring.State.DOWN, 2);
    TyrServer nq = null;
    TyrServer nb = start(b, ring, "b", timeout); // closed below: b is lost
    try (TyrServer nc = start(c, ring, "c", timeout)) {
      Request.Prepare x = new Request.Prepare(X, q.id(), List.of(p.id(), q.id()),
          new TxRequest(List.of(), List.of(put("x"))));
      Request.Prepare y = new Request.Prepare(Y, q.id(), List.of(p.id(), q.id()),
          new TxRequest(List.of(), List.of(append("y"))));
      for (TyrServer n : List.of(nb, nc)) {
        TyrClient.await(n.replicator().apply(new Request.Replicate(1, p.id(), 7, 1,
            List.of(new TxRequest(List.of(), List.of())), Map.of(0, x))));
        TyrClient.await(n.replicator().apply(new Request.Replicate(1, p.id(), 7, 2,
            List.of(new TxRequest(List.of(), List.of())), Map.of(0, y))));
      }
      nc.membership().install(down);
      nb.membership().install(down);
      waitFor("both on c from b's hand-on", () -> nc.transactions().held().size() == 2
          && nb.replicator().numbered(c) >= 2);
      Thread.sleep(500);
      TxRecords recs = new TxRecords(nc.engine().config().directory());
      assertThat(TxRecords.known(TxRecords.decode(recs.readAllReplicas().get(yShare()))
          .versions())).as("Y held on c with its known versions").isTrue();
      Ring cDown = down.withState(c, Ring.State.DOWN, 3);
      nc.membership().install(cDown);
      nb.membership().install(cDown);
      nq = startCoordinator(q, "q", X, Y); // b applies X, then Y: c is DOWN
      waitFor("X and Y applied on b", () -> nb.transactions().prepared().isEmpty());
      assertThat(new String(bytes(nb.engine()), StandardCharsets.UTF_8)).isEqualTo("xy");
      assertThat(nc.engine().stat(k).exists()).isFalse();
      Ring back = cDown.withState(c, Ring.State.RECOVERING, 4);
      nb.membership().install(back);
      nc.membership().install(back); // c catches up: it copies k from b
      waitFor("k copied to c", () -> nc.engine().stat(k).exists()
          && bytes(nc.engine()).length == 2);
      Thread.sleep(2 * timeout.toMillis() + 500);
      Ring lost = back.withState(c, Ring.State.UP, 5).withState(b, Ring.State.DOWN, 5);
      nb.close(); // b lost: c is k's primary
      nc.membership().install(lost);
      Thread.sleep(2 * timeout.toMillis() + 1000); // c resolves what it took over
      assertThat(new String(bytes(nc.engine()), StandardCharsets.UTF_8)).isEqualTo("xy");
    } finally {
      if (nq != null) {
        nq.close();
      }
    }
  }

  private byte[] bytes(TyrEngine e) {
    try {
      if (!e.stat(k).exists()) {
        return new byte[1];
      }
      ByteBuffer got = ByteBuffer.allocate((int) e.stat(k).size());
      e.read(k, 0, got);
      return got.array();
    } catch (IOException err) {
      throw new java.io.UncheckedIOException(err);
    }
  }

  private TxOp put(int v) {
    return new TxOp.Put(k, ByteBuffer.wrap(new byte[] {(byte) v}), false);
  }

  private TxOp put(String s) {
    return new TxOp.Put(k, ByteBuffer.wrap(s.getBytes(StandardCharsets.UTF_8)), false);
  }

  private TxOp append(String s) {
    return new TxOp.Append(k, ByteBuffer.wrap(s.getBytes(StandardCharsets.UTF_8)));
  }

  private static void waitFor(String what, BooleanSupplier done) throws InterruptedException {
    long end = System.nanoTime() + Duration.ofSeconds(60).toNanos();
    while (!done.getAsBoolean()) {
      assertThat(System.nanoTime()).as(what).isLessThan(end);
      Thread.sleep(20);
    }
  }

  private TyrServer start(Member m, Ring r, String name, Duration txTimeout)
      throws IOException {
    EngineConfig engine = EngineConfig.defaults(dir.resolve(name))
        .withSyncPolicy(SyncPolicy.NONE);
    ServerConfig config = new ServerConfig("127.0.0.1", m.port(), engine, 80 << 20, null, 8,
        64, Duration.ofSeconds(60), 512L << 20, 128L << 20, Duration.ofSeconds(60), null);
    return TyrServer.start(config, new Membership(m, r).withTxTimeout(txTimeout));
  }
}
