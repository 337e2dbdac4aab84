package io.blobfs.tyr.blobfs;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.blobfs.store.BlobMutation;
import io.blobfs.store.PutMode;
import io.blobfs.store.TransactionConflictException;
import io.blobfs.store.VersionedBytes;
import io.blobfs.tyr.api.CommitResult;
import io.blobfs.tyr.api.TxOp;
import io.blobfs.tyr.api.TxRequest;
import io.blobfs.tyr.client.ClientConfig;
import io.blobfs.tyr.client.TyrClient;
import io.blobfs.tyr.ring.Member;
import io.blobfs.tyr.ring.Ring;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A commit on one primary whose keys have different backups (the history IT's "fourth
 * point"): p is the primary of a (backup x) and of b (backup y). The ring that marks p
 * DOWN reaches y first (each node loads the ring file on its own). Before the fix, p
 * applied the commit, x confirmed a's part and y refused b's for its epoch; the client
 * heard "not confirmed" (indeterminate), and once x and p loaded the ring too, a's new
 * primary x held the commit and b's new primary y did not: half-applied for good. Now
 * such a commit takes the two-phase path: the backups hold their shares before anything
 * is applied, y's refusal aborts it, and x's share is dropped as aborted.
 */
class TyrSplitOwnersCommitTest {
  @TempDir
  Path dir;

  private static ByteBuffer utf8(String s) {
    return ByteBuffer.wrap(s.getBytes(StandardCharsets.UTF_8));
  }

  /** Key {@code k/n} for the first n whose owners, in order, are {@code owners}. */
  private static String keyOwnedBy(Ring ring, Member... owners) {
    return keyOwnedBy(ring, "k/", owners);
  }

  private static String keyOwnedBy(Ring ring, String prefix, Member... owners) {
    for (int i = 0; ; i++) {
      if (ring.owners(prefix + i).equals(List.of(owners))) {
        return prefix + i;
      }
    }
  }

  /** {@code m}'s own copy of {@code key}, read from its engine; null if absent. */
  private static String onNode(LocalTyrCluster c, Member m, String key) throws IOException {
    if (!c.server(m).engine().stat(key).exists()) {
      return null;
    }
    ByteBuffer b = ByteBuffer.allocate((int) c.server(m).engine().stat(key).size());
    c.server(m).engine().read(key, 0, b);
    return new String(b.array(), StandardCharsets.UTF_8);
  }

  /** What a plain read through the cluster store returns (any replica that serves it). */
  private static String read(TyrClusterBlobStore store, String key) throws Exception {
    ByteBuffer dst = ByteBuffer.allocate(64);
    int n = store.read(key, 0, dst).get();
    return new String(dst.array(), 0, n, StandardCharsets.UTF_8);
  }

  /** The decision records (commit or abort) that node {@code i} took as coordinator. */
  private long decisions(int i) throws IOException {
    Path txs = dir.resolve("node" + i).resolve("transactions");
    if (!Files.isDirectory(txs)) {
      return 0;
    }
    try (Stream<Path> files = Files.list(txs)) {
      return files.filter(f -> f.toString().endsWith(".commit")
          || f.toString().endsWith(".abort")).count();
    }
  }

  @Test
  void aCommitWhoseKeysHaveDifferentBackupsIsWholeWhenOneBackupRefusedItForTheNextRing()
      throws Exception {
    try (LocalTyrCluster c = new LocalTyrCluster(dir, 3, 64, 2);
        TyrClusterBlobStore store = c.store("b", "op-timeout", "5s")) {
      Member p = c.members.get(0);
      Member x = c.members.get(1);
      Member y = c.members.get(2);
      String a = keyOwnedBy(c.ring, p, x);
      String b = keyOwnedBy(c.ring, p, y);
      store.put(a, utf8("a0"), PutMode.OVERWRITE);
      store.put(b, utf8("b0"), PutMode.OVERWRITE);
      VersionedBytes va = store.readWithVersion(a, 64);
      VersionedBytes vb = store.readWithVersion(b, 64);

      Ring next = c.ring.withState(p, Ring.State.DOWN, 2); // p lost: x serves a, y serves b
      c.server(y).membership().install(next); // y loads the ring file first
      IOException failed = null;
      try {
        // A transfer: both read, checked and written, on their one primary p.
        store.commit(List.of(new BlobMutation.Check(a, va.version()),
            new BlobMutation.Check(b, vb.version()),
            new BlobMutation.Put(a, utf8("a1"), PutMode.OVERWRITE),
            new BlobMutation.Put(b, utf8("b1"), PutMode.OVERWRITE)));
      } catch (IOException e) {
        failed = e;
      }
      // The failover completes: x and p load the ring too.
      c.server(x).membership().install(next);
      c.server(p).membership().install(next);

      assertThat(failed).as("acknowledged although y refused its part").isNotNull();
      // The keys' primaries now: both at the commit or both before it.
      String onX = onNode(c, x, a);
      String onY = onNode(c, y, b);
      assertThat(List.of(onX, onY)).as("a on its new primary x, b on its new primary y")
          .isIn(List.of("a0", "b0"), List.of("a1", "b1"));
      // Exactly: y's refusal aborted it before anything applied, on p too.
      assertThat(List.of(onNode(c, p, a), onNode(c, p, b), onX, onY))
          .as("p's a and b, x's a, y's b").containsExactly("a0", "b0", "a0", "b0");
      assertThat(List.of(read(store, a), read(store, b))).as("a reader's a and b")
          .containsExactly("a0", "b0");

      // Nothing holds the keys for good: x took its share over with the ring and resolved
      // it with p (abort). A transfer under the new ring (across x and y) then commits.
      long end = System.nanoTime() + Duration.ofSeconds(60).toNanos();
      while (true) {
        VersionedBytes ra = store.readWithVersion(a, 64);
        VersionedBytes rb = store.readWithVersion(b, 64);
        try {
          store.commit(List.of(new BlobMutation.Check(a, ra.version()),
              new BlobMutation.Check(b, rb.version()),
              new BlobMutation.Put(a, utf8("a2"), PutMode.OVERWRITE),
              new BlobMutation.Put(b, utf8("b2"), PutMode.OVERWRITE)));
          break;
        } catch (TransactionConflictException held) {
          assertThat(System.nanoTime()).as("a and b still held: " + held).isLessThan(end);
          Thread.sleep(50);
        }
      }
      assertThat(List.of(onNode(c, x, a), onNode(c, y, b), read(store, a), read(store, b)))
          .containsExactly("a2", "b2", "a2", "b2");
      assertThat(c.server(x).preparedTransactions()).as("x's parts").isEmpty();
    }
  }

  /**
   * The two-phase path acknowledged: every replica holds the commit, and the answer is the
   * local apply's (an append's offset), as on the one-batch path. A commit whose keys
   * share their owners keeps the one-batch path: no decision recorded.
   */
  @Test
  void aWholeCommitIsOnEveryReplicaAndAnswersLikeOneBatch() throws Exception {
    try (LocalTyrCluster c = new LocalTyrCluster(dir, 3, 64, 2);
        TyrClusterBlobStore store = c.store("b", "op-timeout", "5s");
        TyrClient raw = new TyrClient(ClientConfig.of(c.members.get(0).host(),
            c.members.get(0).port()))) {
      Member p = c.members.get(0);
      Member x = c.members.get(1);
      Member y = c.members.get(2);
      raw.routeUnder(() -> c.server(p).membership().ring().epoch());
      String a = keyOwnedBy(c.ring, p, x);
      String b = keyOwnedBy(c.ring, p, y);
      store.put(a, utf8("a0"), PutMode.OVERWRITE);
      store.put(b, utf8("bb0"), PutMode.OVERWRITE);

      CommitResult r = TyrClient.await(raw.commit(new TxRequest(List.of(), List.of(
          new TxOp.Append(a, utf8("xy")), new TxOp.Append(b, utf8("z"))))));
      assertThat(r.values()).as("each append's offset").containsExactly(2L, 3L);
      assertThat(List.of(onNode(c, p, a), onNode(c, x, a), onNode(c, p, b), onNode(c, y, b)))
          .containsExactly("a0xy", "a0xy", "bb0z", "bb0z");
      assertThat(decisions(0)).as("p's decision for the two-phase commit").isEqualTo(1);

      String sameAsA = keyOwnedBy(c.ring, "s/", p, x);
      store.commit(List.of(new BlobMutation.Put(a, utf8("a1"), PutMode.OVERWRITE),
          new BlobMutation.Put(sameAsA, utf8("s1"), PutMode.OVERWRITE)));
      assertThat(List.of(onNode(c, x, a), onNode(c, x, sameAsA))).containsExactly("a1", "s1");
      assertThat(decisions(0)).as("no decision for keys with one owner list").isEqualTo(1);
    }
  }

  /** A broken check on the two-phase path: a conflict, nothing applied, nothing decided. */
  @Test
  void aWholeCommitWhoseCheckFailsAppliesNothing() throws Exception {
    try (LocalTyrCluster c = new LocalTyrCluster(dir, 3, 64, 2);
        TyrClusterBlobStore store = c.store("b", "op-timeout", "5s")) {
      Member p = c.members.get(0);
      String a = keyOwnedBy(c.ring, p, c.members.get(1));
      String b = keyOwnedBy(c.ring, p, c.members.get(2));
      store.put(a, utf8("a0"), PutMode.OVERWRITE);
      long stale = store.readWithVersion(a, 64).version();
      store.put(a, utf8("a1"), PutMode.OVERWRITE);
      assertThatThrownBy(() -> store.commit(List.of(new BlobMutation.Check(a, stale),
          new BlobMutation.Put(a, utf8("a2"), PutMode.OVERWRITE),
          new BlobMutation.Put(b, utf8("b2"), PutMode.OVERWRITE))))
          .isInstanceOf(TransactionConflictException.class);
      assertThat(List.of(read(store, a), String.valueOf(onNode(c, p, b))))
          .containsExactly("a1", "null");
      assertThat(decisions(0)).isZero();
      assertThat(c.server(p).preparedTransactions()).isEmpty();
    }
  }
}
