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
 * The history IT's open bug 3 (issue 13, M1a on backups), reproduced in one JVM: with
 * R = 3, key k owned by [p, b, c]. b and c hold shares of two decided transactions of k,
 * X then Y in p's order (p applied X and its apply to both backups was lost, then prepared
 * Y: p's batches are fed to b and c by hand, p never runs). p is lost: b takes X and Y
 * over (Y behind X on k) and hands both on to its backup c; X applies on b and, by b's
 * replication, on c. On c the second share Y must not be taken for applied because k moved
 * off the version c recorded for it: that move is X's apply, not Y's.
 */
class BackupOfTakeoverSecondShareTest {
  private static final String X = "1a1e2d3c-4b5a-4978-8695-a4b3c2d1e0f9";
  private static final String Y = "0f1e2d3c-4b5a-4978-8695-a4b3c2d1e0f9";
  private static final Duration LONG = Duration.ofSeconds(120);

  @TempDir Path dir;

  private Member p;
  private Member b;
  private Member c;
  private Member q;
  private Ring ring;
  private String k;

  private void members() throws IOException {
    p = new Member("127.0.0.1", io.blobfs.tyr.TestPorts.free());
    b = new Member("127.0.0.1", io.blobfs.tyr.TestPorts.free());
    c = new Member("127.0.0.1", io.blobfs.tyr.TestPorts.free());
    q = new Member("127.0.0.1", io.blobfs.tyr.TestPorts.free());
    ring = new Ring(1, List.of(p, b, c), 16, 3);
    for (int i = 0; k == null; i++) {
      if (ring.owners("k/" + i).equals(List.of(p, b, c))) {
        k = "k/" + i;
      }
    }
  }

  /**
   * The shares of X (coordinator b, its commit recorded there) and then Y (coordinator q)
   * held on b and c as p's stream sent them; then p marked DOWN (epoch 2), installed on c
   * first so that b's hand-on meets it there. Returns once X is applied on b and c.
   */
  private Ring takeOver(TyrServer nb, TyrServer nc, TxOp xOp, TxOp yOp) throws Exception {
    Request.Prepare x = new Request.Prepare(X, b.id(), List.of(p.id(), b.id()),
        new TxRequest(List.of(), List.of(xOp)));
    Request.Prepare y = new Request.Prepare(Y, q.id(), List.of(p.id(), q.id()),
        new TxRequest(List.of(), List.of(yOp)));
    long incarnation = 7;
    for (TyrServer n : List.of(nb, nc)) {
      TyrClient.await(n.replicator().apply(new Request.Replicate(1, p.id(), incarnation, 1,
          List.of(new TxRequest(List.of(), List.of())), Map.of(0, x))));
      TyrClient.await(n.replicator().apply(new Request.Replicate(1, p.id(), incarnation, 2,
          List.of(new TxRequest(List.of(), List.of())), Map.of(0, y))));
      assertThat(n.transactions().held()).hasSize(2);
    }
    new TxRecords(nb.engine().config().directory()).writeDecision(X, true);
    Ring down = ring.withState(p, Ring.State.DOWN, 2);
    nc.membership().install(down);
    nb.membership().install(down); // b takes X and Y over and hands both on to c
    assertThat(nb.transactions().prepared()).hasSize(2);
    waitFor("X applied on b and c", () -> nb.engine().stat(k).exists()
        && nc.engine().stat(k).exists() && nb.transactions().prepared().size() == 1);
    return down;
  }

  /** Y's share on c, by its local name. */
  private String yShare() {
    return Y + "-s" + Integer.toHexString(List.of(k).hashCode());
  }

  /** q comes up with Y's commit recorded (its decision record written before it starts). */
  private TyrServer startQ(String... committed) throws IOException {
    Path data = dir.resolve("q");
    try (TyrEngine e = TyrEngine.open(EngineConfig.defaults(data)
        .withSyncPolicy(SyncPolicy.NONE))) {
      TxRecords recs = new TxRecords(e.config().directory());
      recs.writeDecision(Y, true);
      for (String id : committed) {
        recs.writeDecision(id, true);
      }
    }
    return start(q, new Ring(1, List.of(q), 16, 1), "q", LONG);
  }

  /**
   * Bug 3's reproduction. c's resolver runs past the timeout after X's apply: before the
   * fix it dropped Y's share as applied (k moved off the version it recorded, by X), so
   * once b was lost too, Y, a decided commit, was on no node: c served k = 1 for good.
   */
  @Test
  void theSecondDecidedShareIsNotTakenForAppliedOnTheBackup() throws Exception {
    members();
    Duration timeout = Duration.ofSeconds(1);
    TyrServer nb = start(b, ring, "b", timeout);
    try (TyrServer nc = start(c, ring, "c", timeout)) {
      Ring down;
      try {
        down = takeOver(nb, nc, put(1), put(2));
        assertThat(bytes(nc.engine())).containsExactly(1);
        Thread.sleep(2 * timeout.toMillis() + 500); // c's resolver looks at Y's share
        assertThat(nc.transactions().held()).as("Y's share, not applied, held on c")
            .containsExactly(yShare());
      } finally {
        nb.close(); // b lost: Y's decision has not reached it
      }
      nc.membership().install(down.withState(b, Ring.State.DOWN, 3));
      try (TyrServer nq = startQ()) {
        waitFor("Y applied on c", () -> bytes(nc.engine())[0] == 2
            && nc.transactions().prepared().isEmpty());
      }
      assertThat(bytes(nc.engine())).containsExactly(2);
    }
  }

  /**
   * As above with c's resolver slower than the takeover: b is marked DOWN on c right after
   * X's apply reached c, and c's follow must take Y over. Before the fix it found k off
   * Y's recorded version ("applied before the takeover") and dropped it: k = 1 for good.
   */
  @Test
  void theSecondShareIsNotTakenForAppliedAtATakeoverOnTheBackup() throws Exception {
    members();
    TyrServer nb = start(b, ring, "b", Duration.ofSeconds(1));
    try (TyrServer nc = start(c, ring, "c", Duration.ofSeconds(10))) {
      Ring down;
      try {
        down = takeOver(nb, nc, put(1), put(2));
      } finally {
        nb.close();
      }
      nc.membership().install(down.withState(b, Ring.State.DOWN, 3));
      assertThat(nc.transactions().prepared()).as("Y taken over on c")
          .containsExactly(yShare());
      try (TyrServer nq = startQ()) {
        waitFor("Y applied on c", () -> bytes(nc.engine())[0] == 2
            && nc.transactions().prepared().isEmpty());
      }
      assertThat(bytes(nc.engine())).containsExactly(2);
    }
  }

  /**
   * Y is decided and b applies it: c drops Y's share as applied, k = 2 there. Passes on
   * main (the version test); it guards Y's own apply once Y was rebased to X's version.
   */
  @Test
  void aBehindSharesNamedApplyDropsItOnTheBackup() throws Exception {
    members();
    Duration timeout = Duration.ofSeconds(1);
    try (TyrServer nb = start(b, ring, "b", timeout);
        TyrServer nc = start(c, ring, "c", timeout)) {
      takeOver(nb, nc, put(1), put(2));
      try (TyrServer nq = startQ()) {
        waitFor("Y applied on b", () -> nb.transactions().prepared().isEmpty());
        waitFor("Y's share dropped on c", () -> nc.transactions().held().isEmpty());
      }
      assertThat(bytes(nc.engine())).containsExactly(2);
      assertThat(bytes(nb.engine())).containsExactly(2);
      assertThat(nb.transactions().retries()).isZero();
    }
  }

  /**
   * The second review's MF1 ("yy"): Y, an Append, is applied on b and its apply refused
   * by c (c at a newer epoch); b owes k and repairs it with a plain put (after Y released
   * k on b); then b is lost and c takes over. Y must not be applied a second time. On main
   * it fails at the first assertion (Y's share dropped on c after X's apply).
   */
  @Test
  void aBehindShareRepairedUnnamedIsNotAppliedTwice() throws Exception {
    members();
    Duration timeout = Duration.ofSeconds(1);
    TyrServer nb = start(b, ring, "b", timeout);
    TyrServer nq = null;
    try (TyrServer nc = start(c, ring, "c", timeout)) {
      Ring down;
      try {
        down = takeOver(nb, nc, put("x"), append("y"));
        Thread.sleep(2 * timeout.toMillis() + 500);
        assertThat(nc.transactions().held()).as("Y's share held on c")
            .containsExactly(yShare());
        nc.membership().install(down.withEpoch(3)); // c refuses b's batches under epoch 2
        nq = startQ(); // up to the end: a share c took over would be resolved, applied
        waitFor("Y applied on b", () -> nb.transactions().prepared().isEmpty());
        assertThat(new String(bytes(nb.engine()), StandardCharsets.UTF_8)).isEqualTo("xy");
        assertThat(new String(bytes(nc.engine()), StandardCharsets.UTF_8)).isEqualTo("x");
        nb.membership().install(down.withEpoch(3)); // b's repair of k now reaches c
        waitFor("k repaired on c", () -> bytes(nc.engine()).length == 2);
      } finally {
        nb.close();
      }
      nc.membership().install(down.withEpoch(3).withState(b, Ring.State.DOWN, 4));
      waitFor("nothing left prepared on c", () -> nc.transactions().prepared().isEmpty());
      Thread.sleep(2 * timeout.toMillis() + 500);
      assertThat(new String(bytes(nc.engine()), StandardCharsets.UTF_8)).isEqualTo("xy");
      assertThat(nc.transactions().held()).isEmpty();
      assertThat(nc.transactions().prepared()).isEmpty();
    } finally {
      if (nq != null) {
        nq.close();
      }
    }
  }

  /**
   * MF1 by the repair alone: c refuses both applies (X's and Y's, with X's rebase of Y),
   * so X's and Y's shares still hold k's version from before X on c when b's repair puts
   * k = "xy" there; then b is lost and c takes over. The repair (made after every holder
   * released k on b) must read as both shares' applies: c must not apply Y again, "xyy".
   * Passes on main (the version test drops both shares); it guards that a refused item's
   * rebase is not applied (ALTERNATIVE.md section 3.3).
   */
  @Test
  void aBehindShareWhoseOnlyApplyIsARepairIsNotAppliedTwice() throws Exception {
    members();
    Duration timeout = Duration.ofSeconds(1);
    TyrServer nb = start(b, ring, "b", timeout);
    TyrServer nq = null;
    try (TyrServer nc = start(c, ring, "c", timeout)) {
      Ring down = ring.withState(p, Ring.State.DOWN, 2);
      try {
        // X coordinated by q too: nothing applies on b before c refuses b's batches.
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
        Thread.sleep(300);
        nc.membership().install(down.withEpoch(3)); // c refuses both applies
        nq = startQ(X); // up to the end: a share c took over would be resolved, applied
        waitFor("X and Y applied on b", () -> nb.transactions().prepared().isEmpty());
        assertThat(new String(bytes(nb.engine()), StandardCharsets.UTF_8)).isEqualTo("xy");
        assertThat(nc.engine().stat(k).exists()).as("nothing applied on c").isFalse();
        nb.membership().install(down.withEpoch(3)); // b's repair of k now reaches c
        waitFor("k repaired on c", () -> bytes(nc.engine()).length == 2);
      } finally {
        nb.close();
      }
      nc.membership().install(down.withEpoch(3).withState(b, Ring.State.DOWN, 4));
      waitFor("nothing left prepared on c", () -> nc.transactions().prepared().isEmpty());
      Thread.sleep(2 * timeout.toMillis() + 500);
      assertThat(new String(bytes(nc.engine()), StandardCharsets.UTF_8)).isEqualTo("xy");
      assertThat(nc.transactions().held()).isEmpty();
    } finally {
      if (nq != null) {
        nq.close();
      }
    }
  }

  /**
   * PLAN test 5 (session 11's first review, "yy"; ALTERNATIVE.md section 3.5): the share
   * ahead of Y on k is an aborted transaction's (X aborted on q). X's abort writes nothing
   * (no rebase, none needed); Y's apply is refused by c (epoch skew), b owes k and repairs
   * it after Y released it; b is then lost. On c the repair moved Y's share: taken for
   * applied, k = "y" once, never "yy".
   */
  @Test
  void aStaleAbortedShareAheadLeavesYAppliedOnce() throws Exception {
    members();
    Duration timeout = Duration.ofSeconds(1);
    TyrServer nb = start(b, ring, "b", timeout);
    TyrServer nq = null;
    try (TyrServer nc = start(c, ring, "c", timeout)) {
      Ring down = ring.withState(p, Ring.State.DOWN, 2);
      try {
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
        Thread.sleep(300);
        nc.membership().install(down.withEpoch(3)); // c refuses b's batches
        try (TyrEngine e = TyrEngine.open(EngineConfig.defaults(dir.resolve("q"))
            .withSyncPolicy(SyncPolicy.NONE))) {
          new TxRecords(e.config().directory()).writeDecision(X, false); // X aborted
        }
        nq = startQ();
        waitFor("X aborted, Y applied on b", () -> nb.transactions().prepared().isEmpty());
        assertThat(new String(bytes(nb.engine()), StandardCharsets.UTF_8)).isEqualTo("y");
        nb.membership().install(down.withEpoch(3)); // b's repair of k now reaches c
        waitFor("k repaired on c", () -> nc.engine().stat(k).exists()
            && bytes(nc.engine()).length == 1);
      } finally {
        nb.close();
      }
      nc.membership().install(down.withEpoch(3).withState(b, Ring.State.DOWN, 4));
      waitFor("nothing left prepared on c", () -> nc.transactions().prepared().isEmpty());
      Thread.sleep(2 * timeout.toMillis() + 500);
      assertThat(new String(bytes(nc.engine()), StandardCharsets.UTF_8)).isEqualTo("y");
      assertThat(nc.transactions().held()).isEmpty();
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
