package io.blobfs.tyr.server;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.junit.jupiter.api.Assertions.assertEquals;

import io.blobfs.tyr.api.CommitResult;
import io.blobfs.tyr.api.TxOp;
import io.blobfs.tyr.api.TxRequest;
import io.blobfs.tyr.client.TyrClient;
import io.blobfs.tyr.engine.EngineConfig;
import io.blobfs.tyr.engine.SyncPolicy;
import io.blobfs.tyr.protocol.Request;
import io.blobfs.tyr.protocol.TxDecision;
import io.blobfs.tyr.ring.Member;
import io.blobfs.tyr.ring.Ring;
import io.blobfs.tyr.ring.WrongEpochException;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Replicated prepared parts across ring changes (the review of the cross-node fix,
 * findings 1 to 5): rings are installed by hand on nodes in this JVM, between the steps
 * of a transaction, so each window is hit every time.
 */
class PreparedPartFailoverTest {
  /** Long: no part here is to be resolved by its timeout unless a test says so. */
  private static final Duration LONG = Duration.ofSeconds(120);
  private static final String ID = "0f1e2d3c-4b5a-4978-8695-a4b3c2d1e0f9";

  @TempDir
  Path dir;

  /**
   * Finding 1: a part prepared while its keys' designated primary b is DOWN has no copy
   * but the stand-in primary's (backups leave out DOWN nodes). Once b is RECOVERING the
   * stand-in must not count as settled until the part is resolved: b's catch-up waits for
   * it there, and so b cannot be marked UP (which makes the stand-in drop the part) while
   * it never received it. Then the decided commit reaches b.
   */
  @Test
  void aPartPreparedWhileItsKeysPrimaryIsDownHoldsThatNodesCatchUpUntilResolved()
      throws Exception {
    Member p = new Member("127.0.0.1", freePort());
    Member b = new Member("127.0.0.1", freePort());
    Ring all = new Ring(1, List.of(p, b), 16, 2);
    String key = keyOwnedBy(all, b, p);
    Ring bDown = all.withState(b, Ring.State.DOWN, 1);
    try (TyrServer np = start(p, bDown, "p", LONG); TyrServer nb = start(b, bDown, "b", LONG)) {
      np.transactions().prepare(prepare(p, key)).join(); // no backup: b is DOWN
      Ring recovering = bDown.withState(b, Ring.State.RECOVERING, 2);
      np.membership().install(recovering);
      nb.membership().install(recovering);
      CompletableFuture<Ring> settled = np.membership().settled(2);
      assertThat(settled).as("p settled while a part b never received is unresolved")
          .isNotDone();
      assertThat(np.transactions().prepared()).containsExactly(ID);
      Object answer = np.transactions().decide(new Request.Decide(ID,
          TxDecision.DECIDE_COMMIT)).thenApply(r -> ((CommitResult) r).version()).join();
      assertThat(answer).isEqualTo((long) TxDecision.COMMITTED);
      settled.get(60, TimeUnit.SECONDS); // the part is applied (and replicated to b)
      assertThat(np.transactions().prepared()).isEmpty();
      assertThat(nb.engine().stat(key).exists()).as("the decided commit on b").isTrue();
    }
  }

  /**
   * Finding 4: b took over p's share (p lost before the decision, marked DOWN). When p is
   * RECOVERING, b must not count as settled until the share is resolved: otherwise p
   * catches up, is marked UP, b drops the share, and p, which dropped its own part when it
   * came back not UP, holds none: a decided commit on no node.
   */
  @Test
  void aShareTakenOverHoldsTheOldPrimarysCatchUpUntilResolved() throws Exception {
    Member p = new Member("127.0.0.1", freePort());
    Member b = new Member("127.0.0.1", freePort());
    Ring ring = new Ring(1, List.of(p, b), 16, 2);
    String key = keyOwnedBy(ring, p, b);
    // Short: b's resolver runs every quarter of it, and asks p once it is back.
    Duration timeout = Duration.ofSeconds(1);
    TyrServer np = start(p, ring, "p", timeout);
    try (TyrServer nb = start(b, ring, "b", timeout)) {
      try {
        np.transactions().prepare(prepare(p, key)).join(); // b holds the share
      } finally {
        np.close(); // lost before any decision
      }
      Ring down = ring.withState(p, Ring.State.DOWN, 2);
      nb.membership().install(down);
      assertThat(nb.transactions().prepared()).as("taken over").hasSize(1);
      Ring back = down.withState(p, Ring.State.RECOVERING, 3);
      nb.membership().install(back);
      CompletableFuture<Ring> settled = nb.membership().settled(3);
      assertThat(settled).as("b settled while the share it took over is unresolved")
          .isNotDone();
      // p comes back, RECOVERING: its own part is dropped, and as coordinator it answers
      // b's query: no decision was taken, so abort.
      try (TyrServer again = start(p, back, "p", timeout)) {
        assertThat(again.transactions().prepared()).isEmpty();
        settled.get(60, TimeUnit.SECONDS);
        assertThat(nb.transactions().prepared()).isEmpty();
        assertEquals(0, nb.engine().stat(key).version(), "an aborted part applied");
      }
    }
  }

  /**
   * Finding 2: a backup checks a batch's epoch when it arrives, and holds the batch's
   * shares only once its writes are applied. A ring installed in between that makes the
   * backup the share's primary has already run its takeovers: the share must be refused
   * (the prepare is then not acknowledged), not held as a replica nothing takes over.
   */
  @Test
  void aShareArrivingUnderARingThatMovedBeforeItIsHeldIsRefused() throws Exception {
    Member p = new Member("127.0.0.1", freePort());
    Member b = new Member("127.0.0.1", freePort());
    Ring ring = new Ring(1, List.of(p, b), 16, 2);
    String key = keyOwnedBy(ring, p, b);
    try (TyrServer nb = start(b, ring, "b", LONG)) {
      // The batch was checked under epoch 1; p is marked DOWN before its shares are held.
      nb.membership().install(ring.withState(p, Ring.State.DOWN, 2));
      Request.Replicate batch = new Request.Replicate(1, p.id(), 7, 1,
          List.of(new TxRequest(List.of(), List.of())), Map.of(0, prepare(p, key)));
      assertThatThrownBy(() -> TyrClient.await(nb.replicator().apply(batch)))
          .isInstanceOf(WrongEpochException.class).hasMessageContaining("before holding it");
      assertThat(nb.transactions().held()).isEmpty();
    }
  }

  /**
   * Finding 5: the resolver finds a part off its keys under the ring it read, and follows
   * that ring. An install in between has taken a share over under the newer ring; a
   * follow of the stale one would drop it (b is not its primary under epoch 1).
   */
  @Test
  void theResolversFollowOfAStaleRingKeepsAShareJustTakenOver() throws Exception {
    Member p = new Member("127.0.0.1", freePort());
    Member b = new Member("127.0.0.1", freePort());
    Ring ring = new Ring(1, List.of(p, b), 16, 2);
    String key = keyOwnedBy(ring, p, b);
    TyrServer np = start(p, ring, "p", LONG);
    try (TyrServer nb = start(b, ring, "b", LONG)) {
      try {
        np.transactions().prepare(prepare(p, key)).join();
      } finally {
        np.close();
      }
      nb.membership().install(ring.withState(p, Ring.State.DOWN, 2));
      List<String> taken = nb.transactions().prepared();
      assertThat(taken).hasSize(1);
      nb.transactions().refollow(ring); // what the resolver read before the install
      assertThat(nb.transactions().prepared()).isEqualTo(taken);
    }
  }

  /**
   * Finding 3: a share taken over is handed on to the new primary's backups. Its number on
   * their streams must be taken under the install, before the part (due at once) can be
   * applied: a hand-on that reaches a backup after the apply's writes is held there with
   * the applied versions, so a later takeover would apply its Add or Append again. The
   * test holds the replicator's lock across the install, so a hand-on left to another
   * thread cannot number anything before the check.
   */
  @Test
  void aShareTakenOverIsNumberedForTheNewBackupsUnderTheInstall() throws Exception {
    Member p = new Member("127.0.0.1", freePort());
    Member b = new Member("127.0.0.1", freePort());
    Member c = new Member("127.0.0.1", freePort());
    Ring ring = new Ring(1, List.of(p, b, c), 16, 3);
    String key = keyOwnedBy(ring, p, b, c);
    TyrServer np = start(p, ring, "p", LONG);
    try (TyrServer nb = start(b, ring, "b", LONG); TyrServer nc = start(c, ring, "c", LONG)) {
      try {
        np.transactions().prepare(prepare(p, key)).join(); // b and c hold shares
      } finally {
        np.close();
      }
      Ring down = ring.withState(p, Ring.State.DOWN, 2);
      nc.membership().install(down);
      Replicator r = nb.replicator();
      long before = r.numbered(c);
      synchronized (r) {
        nb.membership().install(down);
        assertThat(nb.transactions().prepared()).as("taken over").hasSize(1);
        assertThat(r.numbered(c)).as("the hand-on numbered for c by the install")
            .isEqualTo(before + 1);
      }
    }
  }

  /**
   * Finding 6: a share whose transaction stays undecided is asked about once per timeout,
   * not on every resolver run (every quarter of it). Its coordinator, p, answers at once
   * that it is pending (its own part has a long timeout). An observation window, not a
   * synchronisation: on a loaded machine runs come later, which only lowers the count.
   */
  @Test
  void aShareWhoseTransactionStaysUndecidedIsAskedAboutOncePerTimeout() throws Exception {
    Member p = new Member("127.0.0.1", freePort());
    Member b = new Member("127.0.0.1", freePort());
    Ring ring = new Ring(1, List.of(p, b), 16, 2);
    String key = keyOwnedBy(ring, p, b);
    Duration timeout = Duration.ofMillis(800);
    try (TyrServer np = start(p, ring, "p", LONG); TyrServer nb = start(b, ring, "b", timeout)) {
      np.transactions().prepare(prepare(p, key)).join(); // b holds the share
      long end = System.nanoTime() + Duration.ofSeconds(60).toNanos();
      while (nb.transactions().replicaAsks() == 0) {
        assertThat(System.nanoTime()).as("b asked p about its share").isLessThan(end);
        Thread.sleep(20);
      }
      long t0 = System.nanoTime();
      long asked0 = nb.transactions().replicaAsks();
      Thread.sleep(timeout.toMillis() * 5);
      long asked = nb.transactions().replicaAsks() - asked0;
      long timeouts = (System.nanoTime() - t0) / timeout.toNanos();
      assertThat(asked).as("asks in %d timeouts", timeouts).isLessThanOrEqualTo(timeouts + 1);
      assertThat(nb.transactions().held()).hasSize(1);
    }
  }

  /**
   * The history IT's fourth point in its give-back form (seed 42451187036939, session 9):
   * b is RECOVERING, so p is the primary of k1 (owners p, b) and of k2 (owners b, p), and b
   * the backup of both. p prepares a part writing both (a whole commit: their owners
   * differ), so b holds its share of both; b is marked UP, which gives it k2 back, before
   * p's apply reaches it. b must not end with k2 lacking the commit that p applied to k1
   * (before, b took over only a share whose keys were all its own: k2 stayed without the
   * commit on its primary b, and k1 had it on p, half-applied for good). Until issue 13's
   * M2, b took k2's ops over from its share at that install: its reservation made b's
   * engine refuse p's apply, and b applied k2 from its share once resolved. Now b, handing
   * over (p stands in for it under epoch 2), takes no share over until the hand-over ends,
   * so it takes p's apply in p's order as any stand-in batch, and finds its share applied
   * at the end (the takeover of a split share's keys given back is still what b does when
   * the apply comes after the hand-over).
   */
  @Test
  void aShareWhoseKeysAGiveBackSplitsIsTakenOverForTheKeysGivenBack() throws Exception {
    Member p = new Member("127.0.0.1", freePort());
    Member b = new Member("127.0.0.1", freePort());
    Ring all = new Ring(1, List.of(p, b), 16, 2);
    String k1 = keyOwnedBy(all, p, b);
    String k2 = keyOwnedBy(all, b, p);
    Ring recovering = all.withState(b, Ring.State.RECOVERING, 2);
    Ring up = recovering.withState(b, Ring.State.UP, 3);
    // b resolves what it takes over every quarter second; p's own part never times out.
    try (TyrServer np = start(p, recovering, "p", LONG);
        TyrServer nb = start(b, recovering, "b", Duration.ofSeconds(1))) {
      TxRequest both = new TxRequest(List.of(), List.of(
          new TxOp.Put(k1, ByteBuffer.wrap(new byte[] {1}), false),
          new TxOp.Put(k2, ByteBuffer.wrap(new byte[] {2}), false)));
      np.transactions().prepare(new Request.Prepare(ID, p.id(), List.of(p.id()), both)).join();
      assertThat(nb.transactions().held()).as("b's share of both keys").hasSize(1);
      nb.membership().install(up); // b gets k2 back first
      Object answer = np.transactions().decide(new Request.Decide(ID,
          TxDecision.DECIDE_COMMIT)).thenApply(r -> ((CommitResult) r).version()).join();
      assertThat(answer).as("b, handing over, took p's apply").isNotEqualTo(
          (long) TxDecision.COMMITTED_NOT_APPLIED);
      assertThat(nb.engine().stat(k2).exists()).as("k2 on b with the apply").isTrue();
      np.membership().install(up); // the stand-in moves on: b's hand-over ends
      assertThat(np.engine().stat(k1).exists()).as("k1 on its primary p").isTrue();
      long end = System.nanoTime() + Duration.ofSeconds(60).toNanos();
      while (nb.membership().handOver() != null || !nb.transactions().held().isEmpty()
          || !nb.transactions().prepared().isEmpty()) {
        assertThat(System.nanoTime()).as("k2 applied on its primary b, parts "
            + nb.transactions().prepared()).isLessThan(end);
        Thread.sleep(20);
      }
      ByteBuffer got = ByteBuffer.allocate(1);
      nb.engine().read(k2, 0, got);
      assertThat(got.array()).containsExactly(2);
    }
  }

  /**
   * As above, but p loads b's UP ring before it decides: p's part narrows to k1, b's
   * hand-over ends (p has moved on), and only then does b take k2's ops over from its share
   * (a takeover a hand-over puts off, issue 13's M2, must still come at its end), resolve
   * them with p once decided, and apply them.
   */
  @Test
  void aSplitShareIsTakenOverForTheKeysGivenBackOnceTheHandOverHasEnded() throws Exception {
    Member p = new Member("127.0.0.1", freePort());
    Member b = new Member("127.0.0.1", freePort());
    Ring all = new Ring(1, List.of(p, b), 16, 2);
    String k1 = keyOwnedBy(all, p, b);
    String k2 = keyOwnedBy(all, b, p);
    Ring recovering = all.withState(b, Ring.State.RECOVERING, 2);
    Ring up = recovering.withState(b, Ring.State.UP, 3);
    try (TyrServer np = start(p, recovering, "p", LONG);
        TyrServer nb = start(b, recovering, "b", Duration.ofSeconds(1))) {
      TxRequest both = new TxRequest(List.of(), List.of(
          new TxOp.Put(k1, ByteBuffer.wrap(new byte[] {1}), false),
          new TxOp.Put(k2, ByteBuffer.wrap(new byte[] {2}), false)));
      np.transactions().prepare(new Request.Prepare(ID, p.id(), List.of(p.id()), both)).join();
      nb.membership().install(up);
      assertThat(nb.transactions().prepared()).as("nothing taken over while handing over")
          .isEmpty();
      np.membership().install(up);
      long end = System.nanoTime() + Duration.ofSeconds(60).toNanos();
      while (nb.transactions().prepared().isEmpty()) {
        assertThat(System.nanoTime()).as("b took k2's ops over at its hand-over's end")
            .isLessThan(end);
        Thread.sleep(20);
      }
      np.transactions().decide(new Request.Decide(ID, TxDecision.DECIDE_COMMIT)).join();
      assertThat(np.engine().stat(k1).exists()).as("k1 on its primary p").isTrue();
      while (!nb.engine().stat(k2).exists() || !nb.transactions().prepared().isEmpty()) {
        assertThat(System.nanoTime()).as("k2 applied on its primary b, parts "
            + nb.transactions().prepared()).isLessThan(end);
        Thread.sleep(20);
      }
      ByteBuffer got = ByteBuffer.allocate(1);
      nb.engine().read(k2, 0, got);
      assertThat(got.array()).containsExactly(2);
    }
  }

  /**
   * A backup holding two shares of one key, one of an aborted transaction not yet resolved
   * there (its coordinator q unreachable) and one decided commit whose apply it missed, takes
   * both over when p is lost. The decided one's apply meets the other's hold: it must wait
   * for that one's decision, not be taken for applied before a crash and forgotten (history
   * IT, session 9: a cross-node transfer half-applied for good, "its part read back at
   * restart no longer validates (... is held by a prepared transaction ...)"). Failed before
   * that fix when the key's hold was X's (the takeovers then ran in a hash map's order; they
   * now run in p's order, X's share first, so the decided one always waits here).
   */
  @Test
  void aDecidedShareThatMeetsAnotherSharesHoldWaitsForItInsteadOfBeingForgotten()
      throws Exception {
    Member p = new Member("127.0.0.1", freePort());
    Member b = new Member("127.0.0.1", freePort());
    Member q = new Member("127.0.0.1", freePort());
    Ring ring = new Ring(1, List.of(p, b), 16, 2);
    String key = keyOwnedBy(ring, p, b);
    String x = "1a1e2d3c-4b5a-4978-8695-a4b3c2d1e0f9";
    try (TyrServer np = start(p, ring, "p", LONG);
        TyrServer nb = start(b, ring, "b", Duration.ofSeconds(1))) {
      // X, coordinated by q (not running): prepared on p, its share held by b; dropped on p.
      np.transactions().prepare(new Request.Prepare(x, q.id(), List.of(p.id(), q.id()),
          put(key))).join();
      np.transactions().decide(new Request.Decide(x, TxDecision.APPLY_ABORT)).join();
      // Y, coordinated by p, writes 2: its share held by b too.
      np.transactions().prepare(new Request.Prepare(ID, p.id(), List.of(p.id()),
          new TxRequest(List.of(), List.of(new TxOp.Put(key, ByteBuffer.wrap(new byte[] {2}),
              false))))).join();
      assertThat(nb.transactions().held()).hasSize(2);
      nb.membership().install(ring.withEpoch(2)); // b refuses p's apply of Y
      Object answer = np.transactions().decide(new Request.Decide(ID,
          TxDecision.DECIDE_COMMIT)).thenApply(r -> ((CommitResult) r).version()).join();
      assertThat(answer).isEqualTo((long) TxDecision.COMMITTED_NOT_APPLIED);
      nb.membership().install(ring.withState(p, Ring.State.DOWN, 3)); // b takes both over
      long end = System.nanoTime() + Duration.ofSeconds(60).toNanos();
      // Y is decided commit: b applies it, or (if the key's hold is X's: the two takeovers
      // run in no set order) its apply meets X's hold and waits. Before, it was forgotten.
      while (nb.transactions().retries() == 0 && !nb.engine().stat(key).exists()) {
        assertThat(System.nanoTime()).as("Y applied on b, or waiting for X's hold")
            .isLessThan(end);
        Thread.sleep(20);
      }
      // q comes up: it never decided X, so X aborts on b, and Y applies.
      try (TyrServer nq = start(q, new Ring(1, List.of(q), 16, 1), "q", LONG)) {
        while (!nb.engine().stat(key).exists() || !nb.transactions().prepared().isEmpty()) {
          assertThat(System.nanoTime()).as("Y applied on b, parts "
              + nb.transactions().prepared()).isLessThan(end);
          Thread.sleep(20);
        }
        ByteBuffer got = ByteBuffer.allocate(1);
        nb.engine().read(key, 0, got);
        assertThat(got.array()).containsExactly(2);
      }
    }
  }

  private static Request.Prepare prepare(Member coordinator, String key) {
    return new Request.Prepare(ID, coordinator.id(), List.of(coordinator.id()), put(key));
  }

  private static int freePort() throws IOException {
    return io.blobfs.tyr.TestPorts.free();
  }

  /** Key {@code k/n} for the first n whose owners, in order, are {@code owners}. */
  private static String keyOwnedBy(Ring ring, Member... owners) {
    for (int i = 0; ; i++) {
      if (ring.owners("k/" + i).equals(List.of(owners))) {
        return "k/" + i;
      }
    }
  }

  private static TxRequest put(String key) {
    return new TxRequest(List.of(), List.of(new TxOp.Put(key, ByteBuffer.wrap(new byte[] {1}),
        false)));
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
