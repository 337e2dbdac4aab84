package io.blobfs.tyr.server;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.junit.jupiter.api.Assertions.assertEquals;

import io.blobfs.store.BeforeTimeout;
import io.blobfs.tyr.api.CommitResult;
import io.blobfs.tyr.api.ErrorCode;
import io.blobfs.tyr.api.TxOp;
import io.blobfs.tyr.api.TxRequest;
import io.blobfs.tyr.api.TyrException;
import io.blobfs.tyr.engine.EngineConfig;
import io.blobfs.tyr.engine.TyrEngine;
import io.blobfs.tyr.protocol.Request;
import io.blobfs.tyr.protocol.TxDecision;
import io.blobfs.tyr.ring.Member;
import io.blobfs.tyr.ring.Ring;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * One node's side of a cross-node transaction, without a network: this node is the
 * coordinator and only participant, so every decision is its own.
 */
class TransactionsTest {
  private static final Duration TIMEOUT = Duration.ofMillis(300);

  @TempDir
  Path dir;

  private static ByteBuffer utf8(String s) {
    return ByteBuffer.wrap(s.getBytes(StandardCharsets.UTF_8));
  }

  private static String text(TyrEngine engine, String key) throws IOException {
    ByteBuffer b = ByteBuffer.allocate((int) engine.stat(key).size());
    engine.read(key, 0, b);
    return new String(b.array(), StandardCharsets.UTF_8);
  }

  private static int decide(Transactions t, String id, int action) throws IOException {
    return (int) ((CommitResult) t.decide(new Request.Decide(id, action)).join()).version();
  }

  /**
   * A whole commit whose part a give-back narrows while its decision waits (here: the
   * server's decision threads busy) is not acknowledged: its result here covers only the
   * key this node kept; the other's new primary applies it from its share, unconfirmed
   * (the review of tyr-bug1, S2: it answered success with one value for two ops).
   */
  @Test
  void aWholeCommitNarrowedByAGiveBackBeforeItsDecisionIsNotAcknowledged() throws Exception {
    Member self = new Member("127.0.0.1", 1);
    Member owner = new Member("127.0.0.1", 2);
    Ring all = new Ring(1, List.of(self, owner), 16, 2);
    String mine = keyFirstOwnedBy(all, self);
    String back = keyFirstOwnedBy(all, owner);
    Ring recovering = all.withState(owner, Ring.State.RECOVERING, 1);
    Membership membership = new Membership(self, recovering)
        .withTxTimeout(Duration.ofSeconds(60));
    java.util.concurrent.CountDownLatch busy = new java.util.concurrent.CountDownLatch(1);
    try (TyrEngine engine = TyrEngine.open(EngineConfig.defaults(dir.resolve("narrow")));
        Transactions t = new Transactions(engine, membership, null, PeerAccess.NONE, 1 << 20)) {
      for (int i = 0; i < Transactions.DECISION_THREADS; i++) {
        t.decisions().execute(() -> {
          try {
            busy.await();
          } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
          }
        });
      }
      java.util.concurrent.CompletableFuture<CommitResult> whole = t.commitWhole(
          new TxRequest(List.of(), List.of(new TxOp.Put(mine, utf8("m"), false),
              new TxOp.Put(back, utf8("b"), false))));
      membership.install(recovering.withState(owner, Ring.State.UP, 2)); // back given back
      busy.countDown();
      Throwable refused = null;
      try {
        whole.join();
      } catch (java.util.concurrent.CompletionException e) {
        refused = e.getCause();
      }
      assertThat(refused).isInstanceOf(TyrException.class);
      assertEquals(ErrorCode.UNAVAILABLE, ((TyrException) refused).code(), refused.toString());
      assertEquals("m", text(engine, mine)); // applied here, the key it still serves
      assertThat(engine.stat(back).exists()).as("the given-back key is its owner's to apply")
          .isFalse();
    } finally {
      busy.countDown();
    }
  }

  private static String keyFirstOwnedBy(Ring ring, Member m) {
    for (int i = 0; ; i++) {
      if (ring.owners("w/" + i).get(0).equals(m)) {
        return "w/" + i;
      }
    }
  }

  /**
   * The whole commits' decisions run on the server's own pool, of at most {@link
   * Transactions#DECISION_THREADS} threads, ended with it (it was one unbounded pool shared
   * by every server in the JVM, never shut down: the review of tyr-bug1, S4).
   */
  @Test
  void wholeCommitsDecideOnTheServersOwnBoundedPoolClosedWithIt() throws Exception {
    Member self = new Member("127.0.0.1", 1);
    Membership membership = new Membership(self, new Ring(1, List.of(self), 8, 1))
        .withTxTimeout(Duration.ofSeconds(60));
    Transactions t;
    try (TyrEngine engine = TyrEngine.open(EngineConfig.defaults(dir.resolve("pool")))) {
      t = new Transactions(engine, membership, null, PeerAccess.NONE, 1 << 20);
      List<java.util.concurrent.CompletableFuture<CommitResult>> commits =
          new java.util.ArrayList<>();
      for (int i = 0; i < 24; i++) {
        commits.add(t.commitWhole(TxRequest.of(new TxOp.Put("k" + i, utf8("v" + i), false))));
      }
      for (java.util.concurrent.CompletableFuture<CommitResult> c : commits) {
        c.join();
      }
      for (int i = 0; i < 24; i++) {
        assertEquals("v" + i, text(engine, "k" + i));
      }
      assertThat(t.decisionThreads()).isBetween(1, Transactions.DECISION_THREADS);
      t.close();
    }
    assertThat(t.decisionsClosed()).isTrue();
    long end = System.nanoTime() + Duration.ofSeconds(60).toNanos();
    while (t.decisionThreads() > 0) { // a shut-down pool ends its idle threads at once
      assertThat(System.nanoTime()).isLessThan(end);
      Thread.sleep(10);
    }
  }

  /**
   * A client gone after its prepare: a QUERY before the timeout gets PENDING; after it,
   * the coordinator decides abort (presumed abort) and drops the part, and the client's
   * DECIDE_COMMIT arriving late gets ABORTED with nothing applied, the key free again.
   */
  @Test
  void anExpiredPartIsAbortedAndALateCommitDecisionGetsAborted() throws Exception {
    // The checks before the sleep hold only while the part's timeout runs: on a loaded
    // machine 300 ms ran out before them, so a try that overran it is run again with more.
    BeforeTimeout.check(TIMEOUT, 3, this::expiredPartIsAborted);
  }

  private void expiredPartIsAborted(Duration timeout, BeforeTimeout.Window window)
      throws Exception {
    Member self = new Member("127.0.0.1", 1);
    Membership membership = new Membership(self, new Ring(1, List.of(self), 8, 1))
        .withTxTimeout(timeout);
    try (TyrEngine engine = TyrEngine.open(
            EngineConfig.defaults(dir.resolve("node-" + timeout.toMillis())));
        Transactions t = new Transactions(engine, membership, null, PeerAccess.NONE, 1 << 20)) {
      engine.commit(TxRequest.of(new TxOp.Put("k", utf8("old"), false))).join();
      String id = "3f2c8a5e-1b7d-4c9a-8e6f-0a1b2c3d4e5f";
      window.began();
      t.prepare(new Request.Prepare(id, self.id(), List.of(self.id()),
          TxRequest.of(new TxOp.Put("k", utf8("new"), false)))).join();
      assertThat(t.prepared()).containsExactly(id);
      assertEquals(TxDecision.PENDING, decide(t, id, TxDecision.QUERY));
      assertThatThrownBy(() -> engine.commit(TxRequest.of(new TxOp.Put("k", utf8("other"),
          false))).join()).hasRootCauseInstanceOf(TyrException.class)
          .hasMessageContaining("prepared");
      window.done();

      Thread.sleep(timeout.toMillis() + 50);
      assertEquals(TxDecision.ABORTED, decide(t, id, TxDecision.QUERY));
      assertEquals(TxDecision.ABORTED, decide(t, id, TxDecision.DECIDE_COMMIT));
      assertThat(t.prepared()).isEmpty();
      assertEquals("old", text(engine, "k"));
      // A prepare of the same transaction arriving late is refused: the abort stands.
      assertThatThrownBy(() -> t.prepare(new Request.Prepare(id, self.id(),
          List.of(self.id()), TxRequest.of(new TxOp.Put("k", utf8("new"), false)))))
          .isInstanceOfSatisfying(TyrException.class,
              e -> assertEquals(ErrorCode.CONFLICT, e.code()));
      engine.commit(TxRequest.of(new TxOp.Put("k", utf8("after"), false))).join();
      assertEquals("after", text(engine, "k"));
    }
  }

  /**
   * A transaction id holding "-s" is refused BAD_REQUEST at its prepare, before anything is
   * held (review 1 of the rebase, should-fix): a share taken over is named txId-s<hash>
   * and txIdOf reads a name up to its first "-s", so such an id was admitted and its
   * shares' rebases named another transaction ("job" for "job-sales-7"), and a backup
   * rebased none of them. A UUID (what our clients send) is still taken.
   */
  @Test
  void aTransactionIdTheShareNamesCannotCarryIsRefusedAtItsPrepare() throws Exception {
    Member self = new Member("127.0.0.1", 1);
    Membership membership = new Membership(self, new Ring(1, List.of(self), 8, 1))
        .withTxTimeout(Duration.ofSeconds(30));
    try (TyrEngine engine = TyrEngine.open(EngineConfig.defaults(dir.resolve("ids")));
        Transactions t = new Transactions(engine, membership, null, PeerAccess.NONE, 1 << 20)) {
      String bad = "job-sales-7";
      assertThat(Transactions.txIdOf(bad + "-s1f")).as("what a share of it reads as")
          .isNotEqualTo(bad);
      assertThatThrownBy(() -> t.prepare(new Request.Prepare(bad, self.id(),
          List.of(self.id()), TxRequest.of(new TxOp.Put("k", utf8("new"), false)))))
          .isInstanceOfSatisfying(TyrException.class,
              e -> assertEquals(ErrorCode.BAD_REQUEST, e.code()))
          .hasMessageContaining("-s");
      assertThat(t.prepared()).isEmpty();
      engine.commit(TxRequest.of(new TxOp.Put("k", utf8("plain"), false))).join(); // not held
      assertEquals("plain", text(engine, "k"));
      String uuid = "5e4d3c2b-1a09-4f8e-9d7c-6b5a49382716";
      t.prepare(new Request.Prepare(uuid, self.id(), List.of(self.id()),
          TxRequest.of(new TxOp.Put("k", utf8("new"), false)))).join();
      assertThat(t.prepared()).containsExactly(uuid);
      assertEquals(uuid, Transactions.txIdOf(uuid + "-s1f"));
      assertEquals(TxDecision.COMMITTED, decide(t, uuid, TxDecision.DECIDE_COMMIT));
      assertEquals("new", text(engine, "k"));
    }
  }

  /**
   * The coordinator's own apply fails (here: its engine closed): the decision recorded is
   * commit all the same, so the answer says committed, apart from "applied", and the part
   * stays prepared here, to be applied again.
   */
  @Test
  void aCommitDecisionWhoseOwnApplyFailsIsCommittedNotApplied() throws Exception {
    Member self = new Member("127.0.0.1", 1);
    Membership membership = new Membership(self, new Ring(1, List.of(self), 8, 1))
        .withTxTimeout(Duration.ofSeconds(30));
    try (TyrEngine engine = TyrEngine.open(EngineConfig.defaults(dir.resolve("node")));
        Transactions t = new Transactions(engine, membership, null, PeerAccess.NONE, 1 << 20)) {
      String id = "0a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d";
      t.prepare(new Request.Prepare(id, self.id(), List.of(self.id()),
          TxRequest.of(new TxOp.Put("k", utf8("new"), false)))).join();
      engine.close();
      assertEquals(TxDecision.COMMITTED_NOT_APPLIED, decide(t, id, TxDecision.DECIDE_COMMIT));
      assertThat(t.prepared()).containsExactly(id);
      assertEquals(TxDecision.COMMITTED, decide(t, id, TxDecision.QUERY));
    }
  }
}
