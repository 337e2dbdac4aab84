package io.blobfs.tyr.server;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.blobfs.tyr.api.ErrorCode;
import io.blobfs.tyr.api.TxOp;
import io.blobfs.tyr.api.TxRequest;
import io.blobfs.tyr.api.TyrException;
import io.blobfs.tyr.client.ClientConfig;
import io.blobfs.tyr.client.TyrClient;
import io.blobfs.tyr.engine.EngineConfig;
import io.blobfs.tyr.engine.SyncPolicy;
import io.blobfs.tyr.protocol.Request;
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
 * A backup's read fence on a key whose replicated write it refused ({@code RefusedKeys},
 * session 8's review, must-fix): only a write that replaces the key whole may lift it.
 * Batches are handed to the backup's replicator as its primary's stream would send them;
 * the primary itself does not run, so nothing repairs the key meanwhile.
 */
class BackupFenceTest {
  private static final long INCARNATION = 42;

  @TempDir
  Path dir;

  private final Member p = member();
  private final Member b = member();
  private final Ring ring = new Ring(1, List.of(p, b), 16, 2);
  private final String key = keyOwnedBy(ring, p, b);
  private long seq = 1;

  /**
   * The backup refused "BBBB" over "AAAA"; the primary then writes "C" at offset 0 (as
   * BlobFS writes a file, 1 MiB at a time at offsets): applied, the backup held "CAAA",
   * the primary "CBBB". Served, that is a mix of the two versions that no reader could
   * have seen. Failed before session 9 (the write at an offset lifted the fence: "CAAA"
   * was served); since session 12 the fenced backup refuses the write and the truncate
   * (nothing applied: "AAAA" stays) and the fence stays until the put.
   */
  @Test
  void aWriteAtAnOffsetOrATruncateDoesNotLiftTheFence() throws Exception {
    try (TyrServer backup = start()) {
      Replicator r = backup.replicator();
      apply(r, new TxOp.Put(key, utf8("AAAA"), false));
      r.refused(batch(new TxOp.Put(key, utf8("BBBB"), false)));
      assertThat(r.staleHere(key)).as("fenced after the refusal").isNotNull();

      assertThat(apply(r, new TxOp.Write(key, 0, utf8("C")))).containsExactly(0L);
      assertThat(onBackup(backup)).isEqualTo("AAAA"); // the primary holds "CBBB"
      assertThat(r.staleHere(key)).as("fenced after a write at an offset").isNotNull();
      assertRefusedToReaders();

      assertThat(apply(r, new TxOp.Truncate(key, 2))).containsExactly(0L);
      assertThat(onBackup(backup)).isEqualTo("AAAA");
      assertThat(r.staleHere(key)).as("fenced after a truncate to 2 bytes").isNotNull();
      assertRefusedToReaders();

      // The primary's repair (a put of its bytes) replaces the key whole: served again.
      apply(r, new TxOp.Put(key, utf8("CB"), false));
      assertThat(r.staleHere(key)).isNull();
      assertThat(read()).isEqualTo("CB");
    }
  }

  /**
   * Issue 13's skip state: the backup refused W1 ("BB" at 0 over "AAAA": the primary holds
   * "BBAA"), then its primary sends W2 ("C" at 2). Applied, the backup held "AACA", a
   * state no client wrote (it lacks W1 and has W2), and W2 was acknowledged; once the
   * primary is lost the ring makes the backup the primary, which drops the fence, and it
   * served "AACA". Now a fenced backup takes no partial write: the batch's answer names W2
   * refused, nothing of it applied, so the primary owes the key (its repair puts it whole)
   * and W2's client hears that a backup did not confirm it. Promoted, the backup serves
   * "AAAA", what a client wrote. Failed before (answer empty, "AACA" served).
   */
  @Test
  void aFencedBackupTakesNoPartialWriteSoItsPromotionServesNoSkipState() throws Exception {
    try (TyrServer backup = start()) {
      Replicator r = backup.replicator();
      apply(r, new TxOp.Put(key, utf8("AAAA"), false));
      r.refused(batch(new TxOp.Write(key, 0, utf8("BB")))); // W1
      long[] refused = apply(r, new TxOp.Write(key, 2, utf8("C"))); // W2
      assertThat(r.staleHere(key)).isNotNull();

      Ring promoted = ring.withState(p, Ring.State.DOWN, 2); // the primary is lost
      backup.membership().install(promoted);
      assertThat(r.staleHere(key)).as("its primary now: the fence is dropped").isNull();
      assertThat(read(promoted.epoch())).as("served by the promoted backup")
          .isNotEqualTo("AACA").isEqualTo("AAAA");
      assertThat(refused).as("the commits of the batch refused here").containsExactly(0L);
    }
  }

  /**
   * Within one batch, in its order: a transaction writing a fenced key at an offset is
   * refused whole, so its other key is fenced too (its primary applied that write); a
   * later write at an offset of that key is refused; a put lifts the fence and a write at
   * an offset after it is applied. The answer names the refused commits; the others are
   * applied. Failed before (every commit applied, the answer empty).
   */
  @Test
  void aBatchIsRefusedCommitByCommitInItsOrder() throws Exception {
    String other = keyOwnedBy(ring, key, p, b); // b its backup too
    try (TyrServer backup = start()) {
      Replicator r = backup.replicator();
      apply(r, new TxOp.Put(key, utf8("AAAA"), false), new TxOp.Put(other, utf8("aaaa"), false));
      r.refused(batch(new TxOp.Put(key, utf8("BBBB"), false)));
      long[] refused = applyAll(r,
          List.of(new TxOp.Write(other, 0, utf8("x"))),                             // 0
          List.of(new TxOp.Write(key, 0, utf8("C")), new TxOp.Write(other, 1, utf8("y"))), // 1
          List.of(new TxOp.Truncate(other, 3)),                                     // 2
          List.of(new TxOp.Put(key, utf8("DDDD"), false)),                          // 3
          List.of(new TxOp.Write(key, 1, utf8("E"))));                              // 4
      assertThat(refused).containsExactly(1L, 2L);
      assertThat(onBackup(backup)).isEqualTo("DEDD");
      assertThat(r.staleHere(key)).isNull();
      assertThat(r.staleHere(other)).as("fenced by the refusal of commit 1").isNotNull();
      ByteBuffer dst = ByteBuffer.allocate(4);
      backup.engine().read(other, 0, dst);
      assertThat(new String(dst.array(), StandardCharsets.UTF_8)).isEqualTo("xaaa");
    }
  }

  /**
   * Review (tyr-fence): the prepare path is not fenced. The backup refused W1 ("BB" at 0
   * over "AAAA"); its primary then prepares a cross-node part whose share writes "C" at 2
   * (a write at an offset; an Append, Add or Cas is one too once physical). The fenced
   * backup holds the share and confirms it (the answer names nothing refused), so the part
   * is acknowledged as prepared. The primary is lost, the transaction commits: the backup,
   * promoted (its fence dropped), takes the share over and applies it on its copy that
   * lacks W1: "AACA", the skip state issue 13 is about, served as a committed write.
   */
  @Test
  void aFencedBackupHoldsNoPreparedShareThatChangesTheKeyInPart() throws Exception {
    try (TyrServer backup = start()) {
      Replicator r = backup.replicator();
      apply(r, new TxOp.Put(key, utf8("AAAA"), false));
      r.refused(batch(new TxOp.Write(key, 0, utf8("BB")))); // W1
      String tx = "2b1e2d3c-4b5a-4978-8695-a4b3c2d1e0f9";
      Request.Prepare share = new Request.Prepare(tx, b.id(), List.of(b.id()),
          new TxRequest(List.of(), List.of(new TxOp.Write(key, 2, utf8("C")))));
      // Refused whole, FENCED (session 14, review 2's S7: a batch with a share is never
      // refused in part; before, the answer named the share and it was not held).
      assertThatThrownBy(() -> TyrClient.await(r.apply(new Request.Replicate(ring.epoch(),
          p.id(), INCARNATION, seq, List.of(new TxRequest(List.of(), List.of())),
          java.util.Map.of(0, share))))).isInstanceOfSatisfying(TyrException.class,
              e -> assertThat(e.code()).isEqualTo(ErrorCode.FENCED));
      String refused = "whole";
      boolean held = !backup.transactions().held().isEmpty();
      new TxRecords(backup.engine().config().directory()).writeDecision(tx, true);
      Ring promoted = ring.withState(p, Ring.State.DOWN, 2); // the primary is lost
      backup.membership().install(promoted);
      long end = System.nanoTime() + Duration.ofSeconds(60).toNanos();
      while (!backup.transactions().prepared().isEmpty() && System.nanoTime() < end) {
        Thread.sleep(20);
      }
      assertThat(onBackup(backup)).as("served by the promoted backup (share held: " + held
          + ", refused: " + refused + ")")
          .isNotEqualTo("AACA");
    }
  }

  /**
   * Review M2, mixed versions: a primary from before session 13 ignores the answer's list
   * of refused commits and takes an answered batch for confirmed. Its batch is marked as
   * not reading the list ({@code readsRefusals} false, a frame without the prepares count):
   * one commit of it refused as fenced, the backup refuses it whole (an error, which that
   * primary fails unconfirmed and owes), nothing of it applied, every key of it fenced;
   * the primary then numbers afresh, and a batch of it with no fenced key is applied.
   * Failed before (the batch answered, commit 0 applied, the list ignored by such a
   * primary: its write acknowledged and missing here once W2 is).
   */
  @Test
  void aBatchFromAPrimaryThatReadsNoRefusalsIsRefusedWholeIfAnyOfItIsFenced()
      throws Exception {
    String other = keyOwnedBy(ring, key, p, b);
    try (TyrServer backup = start()) {
      Replicator r = backup.replicator();
      apply(r, new TxOp.Put(key, utf8("AAAA"), false), new TxOp.Put(other, utf8("aaaa"), false));
      r.refused(batch(new TxOp.Write(key, 0, utf8("BB")))); // W1
      Request.Replicate old = new Request.Replicate(ring.epoch(), p.id(), INCARNATION, seq,
          List.of(new TxRequest(List.of(), List.of(new TxOp.Write(other, 0, utf8("x")))),
              new TxRequest(List.of(), List.of(new TxOp.Write(key, 2, utf8("C"))))),
          java.util.Map.of(), false);
      assertThatThrownBy(() -> TyrClient.await(r.apply(old)))
          .isInstanceOf(TyrException.class)
          .hasMessageContaining("whole")
          .satisfies(e -> assertThat(((TyrException) e).code())
              .isEqualTo(ErrorCode.FENCED));
      assertThat(onBackup(backup)).isEqualTo("AAAA");
      ByteBuffer dst = ByteBuffer.allocate(4);
      backup.engine().read(other, 0, dst);
      assertThat(new String(dst.array(), StandardCharsets.UTF_8)).as("nothing applied")
          .isEqualTo("aaaa");
      assertThat(r.staleHere(other)).as("fenced: its primary applied the batch").isNotNull();

      // The old primary numbers afresh after the error; a batch with no fenced key goes in.
      String third = keyOwnedByNoneOf(ring, List.of(key, other), p, b);
      Object answer = TyrClient.await(r.apply(new Request.Replicate(ring.epoch(), p.id(),
          INCARNATION + 1, 1, List.of(new TxRequest(List.of(),
              List.of(new TxOp.Put(third, utf8("zz"), false)))), java.util.Map.of(), false)));
      assertThat(((io.blobfs.tyr.api.CommitResult) answer).values()).isEmpty();
      assertThat(backup.engine().stat(third).size()).isEqualTo(2);
    }
  }

  /** A put, a delete, a truncate to 0 each replace the key whole: each lifts the fence. */
  @Test
  void aWholeKeyWriteLiftsTheFence() throws Exception {
    try (TyrServer backup = start()) {
      Replicator r = backup.replicator();
      apply(r, new TxOp.Put(key, utf8("AAAA"), false));
      for (TxOp whole : List.of(new TxOp.Put(key, utf8("DD"), false),
          new TxOp.Truncate(key, 0), new TxOp.Delete(key, false))) {
        r.refused(batch(new TxOp.Write(key, 1, utf8("B"))));
        assertThat(r.staleHere(key)).isNotNull();
        apply(r, whole);
        assertThat(r.staleHere(key)).as("after " + whole).isNull();
      }
      assertThat(backup.engine().stat(key).exists()).isFalse();
      // A transaction that writes at an offset after a put in it replaces the key too.
      r.refused(batch(new TxOp.Put(key, utf8("EE"), false)));
      apply(r, new TxOp.Put(key, utf8("FF"), false), new TxOp.Write(key, 2, utf8("G")));
      assertThat(r.staleHere(key)).isNull();
      assertThat(read()).isEqualTo("FFG");
    }
  }

  /**
   * The backup refused a write of the key, then stood in as its primary (p DOWN), wrote
   * it, and is a backup again once p has caught up from it (p RECOVERING, then UP): its
   * copy is the key's, and nothing replicated replaced it since the refusal. Failed before
   * (the fence outlived the change of primary: "refused a write ... read it from another
   * replica", for as long as nobody wrote the key; the history IT's replica check).
   */
  @Test
  void aFenceEndsWhenTheBackupBecomesThePrimaryAndStaysOffWhenItIsABackupAgain()
      throws Exception {
    try (TyrServer backup = start()) {
      Replicator r = backup.replicator();
      apply(r, new TxOp.Put(key, utf8("AAAA"), false));
      r.refused(batch(new TxOp.Put(key, utf8("BBBB"), false)));
      assertThat(r.staleHere(key)).isNotNull();

      Ring standIn = ring.withState(p, Ring.State.DOWN, 2);
      backup.membership().install(standIn);
      try (TyrClient raw = new TyrClient(ClientConfig.of(b.host(), b.port()))) {
        raw.routeUnder(standIn::epoch);
        TyrClient.await(raw.commit(TxRequest.of(new TxOp.Put(key, utf8("CC"), false))));
      }
      Ring back = giveBack(backup, standIn);
      assertThat(r.staleHere(key)).as("a backup again, its copy current").isNull();
      assertThat(read(back.epoch())).isEqualTo("CC");
    }
  }

  /**
   * A refusal that reaches the backup once it is the key's primary (the old primary's
   * batch under the older ring) is not a fence: its copy rules from then on, and the old
   * primary catches up from it. Made under the last ring where it is the primary (epoch
   * 3, p RECOVERING), after that ring's install dropped the fences, so only the refusal's
   * own rule keeps it from fencing (from the review: made under epoch 2, the install of
   * epoch 3 dropped the fence anyway and the test passed without the rule). Failed before
   * (recorded, it fenced the node once it was a backup again).
   */
  @Test
  void aRefusalMadeWhileThePrimaryFencesNothing() throws Exception {
    try (TyrServer backup = start()) {
      Replicator r = backup.replicator();
      apply(r, new TxOp.Put(key, utf8("AAAA"), false));
      Ring standIn = ring.withState(p, Ring.State.DOWN, 2);
      backup.membership().install(standIn);
      Ring recovering = standIn.withState(p, Ring.State.RECOVERING, 3);
      backup.membership().install(recovering);
      r.refused(batch(new TxOp.Put(key, utf8("BBBB"), false))); // p's, under epoch 1
      Ring back = recovering.withState(p, Ring.State.UP, 4);
      backup.membership().install(back);
      assertThat(r.staleHere(key)).isNull();
      assertThat(read(back.epoch())).isEqualTo("AAAA");
    }
  }

  /** p RECOVERING, then UP again: the backup is a backup again. */
  private Ring giveBack(TyrServer backup, Ring standIn) {
    Ring recovering = standIn.withState(p, Ring.State.RECOVERING, standIn.epoch() + 1);
    backup.membership().install(recovering);
    Ring back = recovering.withState(p, Ring.State.UP, recovering.epoch() + 1);
    backup.membership().install(back);
    return back;
  }

  private void assertRefusedToReaders() {
    assertThatThrownBy(this::read).isInstanceOfSatisfying(TyrException.class,
        e -> assertThat(e.code()).isEqualTo(ErrorCode.UNAVAILABLE))
        .hasMessageContaining("read it from another replica");
  }

  /** A plain read of the key from the backup, as a cluster client makes it. */
  private String read() throws IOException {
    return read(ring.epoch());
  }

  private String read(long epoch) throws IOException {
    try (TyrClient raw = new TyrClient(ClientConfig.of(b.host(), b.port()))) {
      raw.routeUnder(() -> epoch);
      return StandardCharsets.UTF_8.decode(TyrClient.await(raw.read(key, 0, 64)).data())
          .toString();
    }
  }

  private String onBackup(TyrServer backup) throws IOException {
    ByteBuffer dst = ByteBuffer.allocate((int) backup.engine().stat(key).size());
    backup.engine().read(key, 0, dst);
    return new String(dst.array(), StandardCharsets.UTF_8);
  }

  /**
   * The next batch of the primary's stream, one transaction of {@code ops}, applied;
   * returns the answer's list of commits refused here (none unless the key is fenced).
   */
  private long[] apply(Replicator r, TxOp... ops) throws IOException {
    return applyAll(r, List.of(ops));
  }

  /** The next batch, one transaction per list of ops; the indexes of those refused. */
  @SafeVarargs
  private long[] applyAll(Replicator r, List<TxOp>... txs) throws IOException {
    List<TxRequest> batch = new java.util.ArrayList<>();
    for (List<TxOp> ops : txs) {
      batch.add(new TxRequest(List.of(), ops));
    }
    Object answer = TyrClient.await(r.apply(new Request.Replicate(ring.epoch(), p.id(),
        INCARNATION, seq, batch)));
    seq += batch.size();
    return ((io.blobfs.tyr.api.CommitResult) answer).values();
  }

  /** A batch the backup refuses (it is not applied: its numbers are not taken). */
  private Request.Replicate batch(TxOp op) {
    return new Request.Replicate(ring.epoch(), p.id(), INCARNATION, seq,
        List.of(new TxRequest(List.of(), List.of(op))));
  }

  private static ByteBuffer utf8(String s) {
    return ByteBuffer.wrap(s.getBytes(StandardCharsets.UTF_8));
  }

  private static Member member() {
    try {
      return new Member("127.0.0.1", io.blobfs.tyr.TestPorts.free());
    } catch (IOException e) {
      throw new java.io.UncheckedIOException(e);
    }
  }

  private static String keyOwnedBy(Ring ring, Member... owners) {
    return keyOwnedBy(ring, null, owners);
  }

  private static String keyOwnedBy(Ring ring, String not, Member... owners) {
    for (int i = 0; ; i++) {
      if (ring.owners("k/" + i).equals(List.of(owners)) && !("k/" + i).equals(not)) {
        return "k/" + i;
      }
    }
  }

  private static String keyOwnedByNoneOf(Ring ring, List<String> not, Member... owners) {
    for (int i = 0; ; i++) {
      if (ring.owners("k/" + i).equals(List.of(owners)) && !not.contains("k/" + i)) {
        return "k/" + i;
      }
    }
  }

  private TyrServer start() throws IOException {
    EngineConfig engine = EngineConfig.defaults(dir.resolve("b"))
        .withSyncPolicy(SyncPolicy.NONE);
    ServerConfig config = new ServerConfig("127.0.0.1", b.port(), engine, 80 << 20, null, 8,
        64, Duration.ofSeconds(60), 512L << 20, 128L << 20, Duration.ofSeconds(60), null);
    return TyrServer.start(config, new Membership(b, ring));
  }
}
