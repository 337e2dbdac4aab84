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
 * Issue 13's bug 3, the rebase against takeovers: an install racing an apply and its rebase,
 * and a later part's apply moving every share ahead of it (was ReviewHeldTakeoverRaceTest).
 * The history IT's open bug 3 (issue 13, M1a on backups), reproduced in one JVM: with
 * R = 3, key k owned by [p, b, c]. b and c hold shares of two decided transactions of k,
 * X then Y in p's order (p applied X and its apply to both backups was lost, then prepared
 * Y: p's batches are fed to b and c by hand, p never runs). p is lost: b takes X and Y
 * over (Y behind X on k) and hands both on to its backup c; X applies on b and, by b's
 * replication, on c. On c the second share Y must not be taken for applied because k moved
 * off the version c recorded for it: that move is X's apply, not Y's.
 */
class RebaseTakeoverRaceTest {
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
   * Review of tyr-held (MF2), for the rebase (ALTERNATIVE.md section 3.2): c holds X's and
   * Y's shares (Y an Append, behind X) from b, which took them over; X's apply comes with
   * its rebase of Y, and its commit is parked on c between its log and its rebase (the
   * commit lock held). Meanwhile an install marks b DOWN: it waits for the commit (on the
   * Replicator's monitor, which the batch's apply holds, or past it, in follow, on the
   * commit lock); it must then see X's write and Y rebased together: X applied, Y not,
   * taken over and applied once ("xy").
   * Judged out of the commit lock it sees k moved and Y at its old version: Y dropped as
   * applied, "x" for good (bug 3); a takeover judged before the write and reserved after
   * it would apply Y on top of a write it did not see.
   */
  @Test
  void aTakeoverBetweenAnApplyAndItsRebaseDoesNotLoseOrRepeatY() throws Exception {
    members();
    String x = "1a1e2d3c-4b5a-4978-8695-a4b3c2d1e0f9";
    Ring down = ring.withState(p, Ring.State.DOWN, 2);
    TyrServer nq = null;
    try (TyrServer nc = start(c, down, "c", Duration.ofSeconds(1))) {
      Replicator r = nc.replicator();
      long inc = 9;
      TxRequest none = new TxRequest(List.of(), List.of());
      Request.Prepare px = new Request.Prepare(x, q.id(), List.of(p.id(), q.id()),
          new TxRequest(List.of(), List.of(put("x"))));
      Request.Prepare py = new Request.Prepare(Y, q.id(), List.of(p.id(), q.id()),
          new TxRequest(List.of(), List.of(append("y"))));
      TyrClient.await(r.apply(new Request.Replicate(2, b.id(), inc, 1, List.of(none),
          Map.of(0, px))));
      TyrClient.await(r.apply(new Request.Replicate(2, b.id(), inc, 2, List.of(none),
          Map.of(0, py))));
      assertThat(nc.transactions().held()).hasSize(2);
      java.util.concurrent.CountDownLatch parked = new java.util.concurrent.CountDownLatch(1);
      java.util.concurrent.CountDownLatch go = new java.util.concurrent.CountDownLatch(1);
      r.inRebaseForTest = () -> {
        parked.countDown();
        try {
          go.await();
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
        }
      };
      Thread applying = new Thread(() -> {
        try {
          TyrClient.await(r.apply(new Request.Replicate(2, b.id(), inc, 3,
              List.of(new TxRequest(List.of(), List.of(put("x")))), Map.of(), true,
              Map.of(), Map.of(0, Map.of(Y, List.of(k))))));
        } catch (Exception e) {
          // its answer is not what this test looks at
        }
      }, "apply-of-x");
      applying.setDaemon(true);
      applying.start();
      assertThat(parked.await(60, java.util.concurrent.TimeUnit.SECONDS)).isTrue();
      Thread installing = new Thread(() -> nc.membership().install(
          down.withState(b, Ring.State.DOWN, 3)), "install-b-down"); // c is k's primary
      installing.setDaemon(true);
      installing.start();
      // The install waits for the parked commit: on the Replicator's monitor (its
      // restartStreamsToDown, before follow: a backup's batch is applied under that
      // monitor) or, past it, on the commit lock (follow's judge). Either way no judge
      // sees X's write without Y's rebase.
      long end = System.nanoTime() + LONG.toNanos();
      while (installing.isAlive() && installing.getState() != Thread.State.BLOCKED
          && installing.getState() != Thread.State.WAITING) {
        assertThat(System.nanoTime()).as("the install waits for the commit")
            .isLessThan(end);
        Thread.sleep(1);
      }
      Thread.sleep(200);
      assertThat(installing.isAlive()).as("the install waits for the commit").isTrue();
      go.countDown();
      installing.join();
      applying.join();
      r.inRebaseForTest = null;
      assertThat(nc.transactions().prepared()).as("Y taken over on c").hasSize(1);
      nq = startCoordinator(q, "q", x, Y);
      waitFor("Y applied on c", () -> nc.transactions().prepared().isEmpty());
      Thread.sleep(2000); // nothing applies it again
      assertThat(new String(bytes(nc.engine()), StandardCharsets.UTF_8)).isEqualTo("xy");
    } finally {
      if (nq != null) {
        nq.close();
      }
    }
  }

  /**
   * Review of tyr-held (MF3), for the rebase (ALTERNATIVE.md section 3.3): b took X, Y, Z
   * of k over (Y and Z behind) and handed them on to c; X's and Y's applies (with their
   * rebases) are refused by c (an epoch skew, as in MF1), then Z's apply (a Put, nothing
   * behind it) is applied on c. On c all three shares hold k's version from before X and
   * Z's write moves k: all three read as applied, as on b, where Z applied only once X
   * and Y had. b is lost before its repair of k: c must serve "z", not "zy".
   */
  @Test
  void aLaterPartsApplyMovesEveryShareAheadOfIt() throws Exception {
    members();
    String x = "1a1e2d3c-4b5a-4978-8695-a4b3c2d1e0f9";
    String z = "2c1e2d3c-4b5a-4978-8695-a4b3c2d1e0f9";
    Ring down = ring.withState(p, Ring.State.DOWN, 2);
    TyrServer nq = null;
    try (TyrServer nc = start(c, down, "c", Duration.ofSeconds(1))) {
      Replicator r = nc.replicator();
      TxRequest none = new TxRequest(List.of(), List.of());
      Request.Prepare px = new Request.Prepare(x, q.id(), List.of(p.id(), q.id()),
          new TxRequest(List.of(), List.of(put("x"))));
      Request.Prepare py = new Request.Prepare(Y, q.id(), List.of(p.id(), q.id()),
          new TxRequest(List.of(), List.of(append("y"))));
      Request.Prepare pz = new Request.Prepare(z, q.id(), List.of(p.id(), q.id()),
          new TxRequest(List.of(), List.of(put("z"))));
      long inc = 9;
      TyrClient.await(r.apply(new Request.Replicate(2, b.id(), inc, 1, List.of(none),
          Map.of(0, px))));
      TyrClient.await(r.apply(new Request.Replicate(2, b.id(), inc, 2, List.of(none),
          Map.of(0, py))));
      TyrClient.await(r.apply(new Request.Replicate(2, b.id(), inc, 3, List.of(none),
          Map.of(0, pz))));
      assertThat(nc.transactions().held()).hasSize(3);
      nc.membership().install(down.withEpoch(3));
      // X's and Y's applies (a put "x", an append "y", under epoch 2) are refused
      // whole by c's dispatch (Membership.checkReplicate: epoch 2 != 3; Replicator.apply
      // is not reached, so they are not sent here) and b goes on under a new wire
      // incarnation (skipRefused), k owed to c; Z holds k on b, so Z applies before the
      // repair.
      inc += 2;
      TyrClient.await(r.apply(new Request.Replicate(3, b.id(), inc, 1,
          List.of(new TxRequest(List.of(), List.of(put("z")))))));
      assertThat(new String(bytes(nc.engine()), StandardCharsets.UTF_8)).isEqualTo("z");
      nc.membership().install(down.withEpoch(3).withState(b, Ring.State.DOWN, 4));
      nq = startCoordinator(q, "q", x, Y, z);
      Thread.sleep(3000); // c's resolver asks q about what it took over
      assertThat(new String(bytes(nc.engine()), StandardCharsets.UTF_8)).isEqualTo("z");
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
