package io.blobfs.tyr.server;

import static org.assertj.core.api.Assertions.assertThat;

import io.blobfs.tyr.api.CommitResult;
import io.blobfs.tyr.api.TxOp;
import io.blobfs.tyr.api.TxRequest;
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
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Issue 13, bug 3: the primary's gate on rebases (wip/tyr-held/ALTERNATIVE.md, section 2).
 * A write carrying rebases goes only to a backup that said REBASES in an answer; on a
 * stream with no answer yet an empty probe batch goes first (never the item stripped: the
 * s15 review's MF1); a backup answering without the bit (older) gets no rebases section.
 * The local commit here fills the holders behind by hand, as the engine's commitPrepared
 * does for a part.
 */
class RebaseGateTest {
  private static final String Y = "0f1e2d3c-4b5a-4978-8695-a4b3c2d1e0f9";

  @TempDir Path dir;

  @Test
  void aFirstBatchWithRebasesIsPrecededByAProbe() throws Exception {
    try (Pair two = new Pair()) {
      List<Request.Replicate> sent = new CopyOnWriteArrayList<>();
      two.np.replicator().sentForTest = sent::add;
      two.commitWithRebase("x");
      assertThat(sent).hasSize(2);
      assertThat(sent.get(0).txs()).as("the probe: nothing numbered").isEmpty();
      assertThat(sent.get(0).rebases()).isEmpty();
      assertThat(sent.get(1).txs()).hasSize(1);
      assertThat(sent.get(1).firstSeq()).isEqualTo(sent.get(0).firstSeq());
      assertThat(sent.get(1).rebases()).isEqualTo(Map.of(0, Map.of(Y, List.of(two.k))));
      two.commitWithRebase("xy"); // answered: no probe again
      assertThat(sent).hasSize(3);
      assertThat(sent.get(2).rebases()).isEqualTo(Map.of(0, Map.of(Y, List.of(two.k))));
      assertThat(text(two.nb, two.k)).isEqualTo("xy");
    }
  }

  @Test
  void aBackupAnsweringWithoutTheBitGetsNoRebases() throws Exception {
    try (Pair two = new Pair()) {
      two.nb.replicator().answers = Replicator.STAGES_PIECES; // as session 14's backup
      List<Request.Replicate> sent = new CopyOnWriteArrayList<>();
      two.np.replicator().sentForTest = sent::add;
      two.commitWithRebase("x"); // probe, then the item stripped: that backup is older
      assertThat(sent).hasSize(2);
      assertThat(sent.get(0).txs()).isEmpty();
      assertThat(sent.get(1).txs()).hasSize(1);
      assertThat(sent.get(1).rebases()).as("no trailing section").isEmpty();
      assertThat(sent.get(1).pieces()).isEmpty();
      assertThat(text(two.nb, two.k)).isEqualTo("x");
    }
  }

  /**
   * Review of b3af1b1, MF1: the probe is refused whole (the backup is still at the
   * ring before), the backup then installs the primary's ring before the held item gets
   * there: the item goes stripped (probeRefusedAt) and is applied there without its
   * rebase. A backup that reads rebases got X's write without Y's rebase: Y's share on it
   * moves off its versions and is taken for applied (bug 3, the s15 review's MF1 by
   * another way). Hold, never strip: the design's rule (ALTERNATIVE.md section 3.1).
   */
  @Test
  void aRefusedProbeNeverLetsTheItemGoStripped() throws Exception {
    try (Pair two = new Pair()) {
      Ring two2 = two.np.membership().ring().withEpoch(2);
      two.np.membership().install(two2); // the backup is still at epoch 1
      List<Request.Replicate> sent = new CopyOnWriteArrayList<>();
      two.np.replicator().sentForTest = rep -> {
        sent.add(rep);
        if (sent.size() == 2) {
          two.nb.membership().install(two2); // the ring reaches it after the probe
        }
      };
      try {
        two.commitWithRebase("x");
      } catch (Exception e) {
        // refused or not: what matters is what the backup applied
      }
      assertThat(sent.get(0).txs()).as("the probe").isEmpty();
      boolean strippedAndApplied = sent.size() >= 2 && !sent.get(1).txs().isEmpty()
          && sent.get(1).rebases().isEmpty() && two.nb.engine().stat(two.k) != null
          && two.nb.engine().stat(two.k).size() > 0;
      assertThat(strippedAndApplied)
          .as("X's write applied on the backup without Y's rebase: " + sent)
          .isFalse();
      // Probed again once the backup was behind, then sent whole: never stripped.
      assertThat(sent).as("frames carrying the item").filteredOn(r -> !r.txs().isEmpty())
          .isNotEmpty().allMatch(r -> !r.rebases().isEmpty());
      assertThat(text(two.nb, two.k)).as("applied there with its rebase").isEqualTo("x");
    }
  }

  /**
   * A backup that stays behind the item's epoch (UP in the ring, answering pings, but
   * never loading the new ring: the monitor never marks it DOWN) does not hold the stream
   * for ever (second review of the rebase, MF1: re-probed every PROBE_AGAIN_MS with no
   * bound, the item and every write queued behind it never completed, and their
   * admissions never released). Past the replication timeout (30 s) the item goes with
   * its rebases, is refused by epoch there, and fails UNAVAILABLE (its keys owed), as on
   * main; the write behind it too.
   */
  @Test
  void aBackupThatStaysBehindDoesNotHoldTheStreamForEver() throws Exception {
    try (Pair two = new Pair()) {
      two.np.membership().install(two.np.membership().ring().withEpoch(2)); // b stays at 1
      CompletableFuture<?> x = two.send("x", true);
      CompletableFuture<?> y = two.send("y", false);
      CompletableFuture<?> both = CompletableFuture.allOf(x, y).handle((r, e) -> null);
      try {
        both.get(45, TimeUnit.SECONDS);
      } catch (java.util.concurrent.TimeoutException e) {
        // fall through to the assertion
      }
      assertThat(x.isDone()).as("the item held behind a backup that stays behind").isTrue();
      assertThat(y.isDone()).as("a plain write queued behind it on the stream").isTrue();
      assertThat(x.isCompletedExceptionally()).as("refused by epoch there: not acknowledged")
          .isTrue();
    }
  }

  /**
   * A backup AHEAD of the item's epoch that never answered may be older than the rebases
   * section (review 1 of the rebase, should-fix): the item went with its rebases past the
   * refused probe, the older backup read them as a malformed frame (BAD_REQUEST), and the
   * stream numbered afresh, failing the write queued behind it unsent, though that write,
   * admitted under the backup's epoch, would have been applied there. Sent stripped, the
   * item is refused by epoch alone and the write behind it goes on and is applied.
   */
  @Test
  void anOlderBackupAheadOfTheItemsEpochFailsNoWriteQueuedBehindIt() throws Exception {
    try (Pair two = new Pair()) {
      Ring two2 = two.np.membership().ring().withEpoch(2);
      two.nb.membership().install(two2); // the backup is ahead: p still at epoch 1
      two.nb.replicator().answers = Replicator.STAGES_PIECES; // as session 14's backup
      List<Request.Replicate> sent = new CopyOnWriteArrayList<>();
      List<CompletableFuture<?>> behind = new CopyOnWriteArrayList<>();
      two.np.replicator().sentForTest = rep -> {
        sent.add(rep);
        if (sent.size() == 1) {
          // The probe is out (the stream busy): p moves to epoch 2, and a plain write of
          // k admitted under it queues behind the held item.
          two.np.membership().install(two2);
          behind.add(two.send("y", false));
        }
      };
      CompletableFuture<?> x = two.send("x", true);
      CompletableFuture.allOf(x).handle((r, e) -> null).get(1, TimeUnit.MINUTES);
      assertThat(x.isCompletedExceptionally()).as("refused by epoch there").isTrue();
      assertThat(sent.get(0).txs()).as("the probe").isEmpty();
      assertThat(behind).hasSize(1);
      behind.get(0).get(1, TimeUnit.MINUTES); // not failed by a renumbering: applied there
      assertThat(text(two.nb, two.k)).isEqualTo("y");
      assertThat(sent).as("frames carrying the item").filteredOn(
          r -> !r.txs().isEmpty() && r.epoch() == 1).isNotEmpty()
          .allMatch(r -> r.rebases().isEmpty());
    }
  }

  /**
   * Each behind phase gets its own bound: once an item goes past the bound (or to a
   * backup ahead) the phase's start is forgotten, so a later item of a newer epoch, whose
   * backup is behind only for the ~ms it takes to load the ring, is probed again and
   * applied, not refused and failed UNAVAILABLE at once (third review of the rebase; it
   * failed before behindSince was reset there).
   */
  @Test
  void aLaterBehindPhaseGetsItsOwnBound() throws Exception {
    try (Pair two = new Pair()) {
      two.np.membership().install(two.np.membership().ring().withEpoch(2)); // b stays at 1
      CompletableFuture<?> x = two.send("x", true);
      CompletableFuture.allOf(x).handle((r, e) -> null).get(45, TimeUnit.SECONDS);
      assertThat(x.isCompletedExceptionally()).isTrue();
      Ring three = two.np.membership().ring().withEpoch(3);
      two.nb.membership().install(two.np.membership().ring().withEpoch(2));
      two.np.membership().install(three); // b at 2: behind again, briefly
      List<Request.Replicate> sent = new CopyOnWriteArrayList<>();
      two.np.replicator().sentForTest = rep -> {
        sent.add(rep);
        if (sent.size() == 1) {
          CompletableFuture.runAsync(() -> two.nb.membership().install(three),
              CompletableFuture.delayedExecutor(300, TimeUnit.MILLISECONDS));
        }
      };
      CompletableFuture<?> z = two.send("z", true);
      CompletableFuture.allOf(z).handle((r, e) -> null).get(45, TimeUnit.SECONDS);
      assertThat(z.isCompletedExceptionally()).as("z given up on at once: " + sent).isFalse();
      assertThat(text(two.nb, two.k)).isEqualTo("z");
    }
  }

  /**
   * An item with rebases ends its batch (ALTERNATIVE.md section 4; recover()'s rule rests
   * on it: a backup that crashes before answering has applied no later write of its keys).
   * Two commits queue while the backup is busy with a batch: the one with rebases, then a
   * plain one; they go in two batches, the rebased item last of its own.
   */
  @Test
  void anItemWithRebasesEndsItsBatch() throws Exception {
    try (Pair two = new Pair()) {
      List<Request.Replicate> sent = new CopyOnWriteArrayList<>();
      two.np.replicator().sentForTest = sent::add;
      two.commitWithRebase("x"); // the probe, then the item: the stream answered
      java.util.concurrent.CountDownLatch busy = new java.util.concurrent.CountDownLatch(1);
      java.util.concurrent.CountDownLatch go = new java.util.concurrent.CountDownLatch(1);
      two.nb.replicator().beforeRewriteForTest = () -> {
        busy.countDown();
        try {
          go.await(1, TimeUnit.MINUTES);
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
        }
      };
      CompletableFuture<?> a = two.send("a", true);
      assertThat(busy.await(1, TimeUnit.MINUTES)).as("the backup busy with a").isTrue();
      CompletableFuture<?> b = two.send("b", true);
      CompletableFuture<?> c = two.send("c", false);
      int before = sent.size();
      two.nb.replicator().beforeRewriteForTest = null;
      go.countDown();
      CompletableFuture.allOf(a, b, c).get(1, TimeUnit.MINUTES);
      List<Request.Replicate> after = sent.subList(before, sent.size());
      assertThat(after).as("b alone, then c: " + after).hasSize(2);
      assertThat(after.get(0).txs()).hasSize(1);
      assertThat(after.get(0).rebases()).isEqualTo(Map.of(0, Map.of(Y, List.of(two.k))));
      assertThat(after.get(1).rebases()).isEmpty();
      for (Request.Replicate r : sent) {
        for (int i : r.rebases().keySet()) {
          assertThat(i).as("a rebased item last of its batch: " + r)
              .isEqualTo(r.txs().size() - 1);
        }
      }
      assertThat(text(two.nb, two.k)).isEqualTo("c");
    }
  }

  private static String text(TyrServer n, String key) throws IOException {
    ByteBuffer b = ByteBuffer.allocate((int) n.engine().stat(key).size());
    n.engine().read(key, 0, b);
    return new String(b.array(), StandardCharsets.UTF_8);
  }

  /** p primary, b backup of k (R = 2). */
  private final class Pair implements AutoCloseable {
    final TyrServer np;
    final TyrServer nb;
    final String k;

    Pair() throws IOException {
      Member p = new Member("127.0.0.1", io.blobfs.tyr.TestPorts.free());
      Member b = new Member("127.0.0.1", io.blobfs.tyr.TestPorts.free());
      Ring ring = new Ring(1, List.of(p, b), 16, 2);
      String key = null;
      for (int i = 0; key == null; i++) {
        if (ring.owners("k/" + i).equals(List.of(p, b))) {
          key = "k/" + i;
        }
      }
      k = key;
      np = start(p, ring, "p");
      nb = start(b, ring, "b");
    }

    /** A put of k on p whose local commit says Y's share held k behind it. */
    void commitWithRebase(String value) throws Exception {
      send(value, true).get(1, TimeUnit.MINUTES);
    }

    /** A put of k on p, its local commit saying Y held k behind it ({@code rebase}) or not. */
    CompletableFuture<?> send(String value, boolean rebase) {
      Map<String, List<String>> behind = new java.util.HashMap<>();
      Function<TxRequest, CompletableFuture<CommitResult>> local = t -> {
        if (rebase) {
          behind.put(k, List.of(Y + "-s1f"));
        }
        return np.engine().commit(t);
      };
      return np.replicator().commit(TxRequest.of(new TxOp.Put(k, ByteBuffer.wrap(
          value.getBytes(StandardCharsets.UTF_8)), false)), local, behind);
    }

    @Override
    public void close() throws IOException {
      nb.close();
      np.close();
    }
  }

  private TyrServer start(Member m, Ring ring, String name) throws IOException {
    EngineConfig engine = EngineConfig.defaults(dir.resolve(name))
        .withSyncPolicy(SyncPolicy.NONE);
    ServerConfig config = new ServerConfig("127.0.0.1", m.port(), engine, 80 << 20, null, 8,
        64, Duration.ofSeconds(60), 512L << 20, 128L << 20, Duration.ofSeconds(60), null);
    return TyrServer.start(config, new Membership(m, ring));
  }
}
