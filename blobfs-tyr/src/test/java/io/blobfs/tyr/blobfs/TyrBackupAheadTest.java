package io.blobfs.tyr.blobfs;

import static org.assertj.core.api.Assertions.assertThat;

import io.blobfs.store.BlobMutation;
import io.blobfs.store.PutMode;
import io.blobfs.store.VersionedBytes;
import io.blobfs.tyr.ring.Member;
import io.blobfs.tyr.ring.Ring;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A ring change that reaches a key's backup before its primary (nodes load the ring file
 * about once a second, each on its own), while neither changes role: the primary commits
 * a transaction under the old epoch, the backup refuses its replication for its epoch,
 * and the primary hands the backup's {@code WRONG_EPOCH} to the client. The client takes
 * that as "refused before anything was done", adopts the ring and makes the transaction
 * again; once the primary has the ring, the retry's check fails on the primary's own
 * applied write, and the caller gets {@code TransactionConflictException} ("nothing
 * applied") for a transaction that is applied on the primary, and not on the backup.
 * Failed before the fix ("blob b/key was read at version 1 and is now at 2; retry" with
 * v1 on the primary); in a recorded history ({@code TyrClusterHistoryIT}) it showed as
 * increments reported as conflicts and read back. Now the primary answers
 * {@code UNAVAILABLE} after its own apply, whatever the backup said, and the caller gets
 * an indeterminate {@code StoreUnavailableException}.
 */
class TyrBackupAheadTest {
  @TempDir
  Path dir;

  private static ByteBuffer utf8(String s) {
    return ByteBuffer.wrap(s.getBytes(StandardCharsets.UTF_8));
  }

  private static String onNode(LocalTyrCluster c, Member m, String key) throws IOException {
    if (!c.server(m).engine().stat(key).exists()) {
      return null;
    }
    ByteBuffer b = ByteBuffer.allocate((int) c.server(m).engine().stat(key).size());
    c.server(m).engine().read(key, 0, b);
    return new String(b.array(), StandardCharsets.UTF_8);
  }

  /**
   * Starts a thread that installs {@code next} on {@code target} once {@code key} holds
   * "v1" on {@code primary} and {@code afterMillis} more have passed, as a node loads a new
   * ring within its second. It polls every millisecond (a spin would starve the servers on
   * a loaded machine) and gives up after a minute rather than outlive the cluster; what it
   * failed with goes to {@code failure}.
   */
  private static Thread installOnceV1IsOn(LocalTyrCluster c, Member primary, String key,
      Member target, Ring next, long afterMillis, AtomicReference<Throwable> failure) {
    Thread t = new Thread(() -> {
      try {
        long end = System.nanoTime() + Duration.ofMinutes(1).toNanos();
        while (!"v1".equals(onNode(c, primary, key))) {
          if (System.nanoTime() > end) {
            throw new IllegalStateException("v1 never reached the primary " + primary);
          }
          Thread.sleep(1);
        }
        Thread.sleep(afterMillis);
        c.server(target).membership().install(next);
      } catch (IOException | RuntimeException | InterruptedException e) {
        failure.set(e);
      }
    });
    t.start();
    return t;
  }

  /**
   * Commits v1 over v0 on {@code key} while a ring change (the key's roles unchanged) has
   * reached its backup and not yet its primary, which loads it once v1 is applied there.
   * Returns the commit's error, null if it succeeded.
   */
  private static IOException commitWhileTheBackupIsAhead(LocalTyrCluster c,
      TyrClusterBlobStore store, String key) throws Exception {
    store.put(key, utf8("v0"), PutMode.OVERWRITE);
    Member primary = c.ring.primary(key);
    Member backup = c.ring.owners(key).get(1);
    Member third = c.members.stream().filter(m -> !m.equals(primary) && !m.equals(backup))
        .findFirst().orElseThrow();
    Ring next = c.ring.withState(third, Ring.State.DOWN, 2); // the key's roles unchanged
    c.server(backup).membership().install(next);
    // The primary loads the ring once its local apply is there, as it would within its
    // second; the client is meanwhile retrying under the backup's ring. The watcher polls
    // every millisecond (a spin would starve the servers on a loaded machine) and gives
    // up after a minute rather than outlive the cluster.
    AtomicReference<Throwable> watcher = new AtomicReference<>();
    Thread primaryLoads = installOnceV1IsOn(c, primary, key, primary, next, 0, watcher);
    VersionedBytes v = store.readWithVersion(key, 64);
    IOException failed = null;
    try {
      store.commit(List.of(new BlobMutation.Check(key, v.version()),
          new BlobMutation.Put(key, utf8("v1"), PutMode.OVERWRITE)));
    } catch (IOException e) {
      failed = e;
    }
    primaryLoads.join(Duration.ofMinutes(2).toMillis());
    assertThat(primaryLoads.isAlive()).as("the watcher ended").isFalse();
    assertThat(watcher.get()).isNull();
    return failed;
  }

  @Test
  void aTransactionRefusedByABackupAheadOfItsPrimaryIsNotReportedAsNotApplied()
      throws Exception {
    try (LocalTyrCluster c = new LocalTyrCluster(dir, 3, 64, 2);
        TyrClusterBlobStore store = c.store("b", "op-timeout", "5s")) {
      String key = "b/key";
      IOException failed = commitWhileTheBackupIsAhead(c, store, key);
      // Applied on the primary and not confirmed by the backup: the outcome is unknown to
      // the caller, who must hear so, never "nothing applied" (a conflict).
      assertThat(failed).isInstanceOf(io.blobfs.store.StoreUnavailableException.class)
          .hasMessageContaining("applied on the primary but a backup did not confirm it");
      assertThat(onNode(c, c.ring.primary(key), key)).isEqualTo("v1");
    }
  }

  /**
   * What follows the race above (review finding 5): the backup refused v1 and nothing
   * sends it again (the primary's replication stream to it is broken and numbered afresh),
   * so the two replicas differ until the key is written again. A plain read, served by any
   * replica, may return v1 or v0 for a key nobody writes, and a failover to the backup
   * reverts v1, which readers may have seen. Failed before (the backup kept v0, checked for
   * 10 s after the commit returned); now the primary owes the key to the backup and
   * repairs it (OwedKeys: the key's current state made a write again, in stream order).
   */
  @Test
  void theReplicasAgreeAfterABackupRefusedAWriteItsPrimaryApplied() throws Exception {
    try (LocalTyrCluster c = new LocalTyrCluster(dir, 3, 64, 2);
        TyrClusterBlobStore store = c.store("b", "op-timeout", "5s")) {
      String key = "b/key";
      IOException failed = commitWhileTheBackupIsAhead(c, store, key);
      assertThat(failed).isInstanceOf(io.blobfs.store.StoreUnavailableException.class);
      Member backup = c.ring.owners(key).get(1);
      long end = System.nanoTime() + Duration.ofSeconds(10).toNanos();
      while (!"v1".equals(onNode(c, backup, key)) && System.nanoTime() < end) {
        Thread.sleep(50);
      }
      assertThat(onNode(c, c.ring.primary(key), key)).isEqualTo("v1");
      assertThat(onNode(c, backup, key)).as("the backup " + backup + "'s own copy")
          .isEqualTo("v1");
    }
  }

  /**
   * Until the primary's repair reaches it, the backup that refused v1 holds v0, which a
   * plain read served by any replica could return after another read saw v1 on the
   * primary: the read goes back in time. The backup serves no plain read of a key whose
   * write it refused until a later write of it is applied there (the repair). Failed
   * before (the backup answered v0); passes whether the repair came first (v1) or not (a
   * refusal that sends the reader to another replica).
   */
  @Test
  void aBackupThatRefusedAWriteDoesNotServeTheOlderValueToPlainReads() throws Exception {
    try (LocalTyrCluster c = new LocalTyrCluster(dir, 3, 64, 2);
        TyrClusterBlobStore store = c.store("b", "op-timeout", "5s")) {
      String key = "b/key";
      assertThat(commitWhileTheBackupIsAhead(c, store, key)).isNotNull();
      Member backup = c.ring.owners(key).get(1);
      try (io.blobfs.tyr.client.TyrClient raw = new io.blobfs.tyr.client.TyrClient(
          io.blobfs.tyr.client.ClientConfig.of(backup.host(), backup.port()))) {
        raw.routeUnder(() -> c.server(backup).membership().ring().epoch());
        String served;
        try {
          io.blobfs.tyr.api.ReadResult r =
              io.blobfs.tyr.client.TyrClient.await(raw.read(key, 0, 64));
          served = StandardCharsets.UTF_8.decode(r.data()).toString();
        } catch (io.blobfs.tyr.api.TyrException e) {
          assertThat(e.code()).isEqualTo(io.blobfs.tyr.api.ErrorCode.UNAVAILABLE);
          assertThat(e).hasMessageContaining("read it from another replica");
          served = null;
        }
        assertThat(served).as("what the backup served").isNotEqualTo("v0");
      }
      // Through the cluster store, reads go to a replica that serves them: v1 every time.
      for (int i = 0; i < 20; i++) {
        ByteBuffer dst = ByteBuffer.allocate(64);
        int n = store.read(key, 0, dst).get();
        assertThat(new String(dst.array(), 0, n, StandardCharsets.UTF_8)).isEqualTo("v1");
      }
    }
  }

  /**
   * The other order (a ring change that reached the primary first, its backup a ring
   * behind): the primary applies an overwrite, the backup refuses it for its epoch, and the
   * primary answers that a backup did not confirm. No newer ring will come to fail over
   * to, so waiting for one failed the put after the request timeout, although making an
   * overwrite again is safe; the client now makes it again on the same primary, and it
   * succeeds once the backup has loaded the ring. Failed before (a
   * {@code StoreUnavailableException} "is unreachable, and it holds"; seen in
   * {@code TyrClusterFailoverIT}).
   */
  @Test
  void anOverwriteRefusedByABackupBehindItsPrimaryIsMadeAgainAndSucceeds() throws Exception {
    try (LocalTyrCluster c = new LocalTyrCluster(dir, 3, 64, 2);
        TyrClusterBlobStore store = c.store("b", "op-timeout", "3s")) {
      String key = "b/behind";
      store.put(key, utf8("v0"), PutMode.OVERWRITE);
      Member primary = c.ring.primary(key);
      Member backup = c.ring.owners(key).get(1);
      Member third = c.members.stream().filter(m -> !m.equals(primary) && !m.equals(backup))
          .findFirst().orElseThrow();
      Ring next = c.ring.withState(third, Ring.State.DOWN, 2); // the key's roles unchanged
      c.server(primary).membership().install(next);
      c.server(third).membership().install(next);
      // The backup loads the ring once the primary has applied v1 (its refusal is then
      // certain to have happened), as it would within its second.
      AtomicReference<Throwable> watcher = new AtomicReference<>();
      Thread backupLoads = installOnceV1IsOn(c, primary, key, backup, next, 200, watcher);
      store.put(key, utf8("v1"), PutMode.OVERWRITE);
      backupLoads.join(Duration.ofMinutes(2).toMillis());
      assertThat(watcher.get()).isNull();
      assertThat(onNode(c, primary, key)).isEqualTo("v1");
      assertThat(onNode(c, backup, key)).as("the backup's own copy").isEqualTo("v1");
    }
  }

  /**
   * As the test above, but the backup loads the ring only after the primary's repair of
   * its backups (OwedKeys, about a second after the refusal) has rewritten the key: the
   * client's next conditional attempt then finds the key moved on, by the repair of its
   * own bytes, not by another writer. Failed before with an indeterminate
   * {@code StoreUnavailableException} ("it changed since: the outcome is unknown"; seen in
   * {@code TyrClusterFailoverIT}); now the client finds its own bytes there and has them
   * confirmed at the version they are at.
   */
  @Test
  void anOverwriteWhoseKeyTheRepairMovedOnIsConfirmedAndSucceeds() throws Exception {
    try (LocalTyrCluster c = new LocalTyrCluster(dir, 3, 64, 2);
        TyrClusterBlobStore store = c.store("b", "op-timeout", "10s")) {
      String key = "b/repaired";
      store.put(key, utf8("v0"), PutMode.OVERWRITE);
      Member primary = c.ring.primary(key);
      Member backup = c.ring.owners(key).get(1);
      Member third = c.members.stream().filter(m -> !m.equals(primary) && !m.equals(backup))
          .findFirst().orElseThrow();
      Ring next = c.ring.withState(third, Ring.State.DOWN, 2); // the key's roles unchanged
      c.server(primary).membership().install(next);
      c.server(third).membership().install(next);
      AtomicReference<Throwable> watcher = new AtomicReference<>();
      // past the repair's first pass (a second after the refusal) and the client's attempts
      Thread backupLoads = installOnceV1IsOn(c, primary, key, backup, next, 2500, watcher);
      store.put(key, utf8("v1"), PutMode.OVERWRITE);
      backupLoads.join(Duration.ofMinutes(2).toMillis());
      assertThat(watcher.get()).isNull();
      assertThat(onNode(c, primary, key)).isEqualTo("v1");
      assertThat(onNode(c, backup, key)).as("the backup's own copy").isEqualTo("v1");
    }
  }

  /**
   * The stale register read of {@code TyrClusterHistoryIT} (OPEN_BUGS (3), seed
   * 40404071680335): a put applied on its primary and not confirmed by a backup a ring
   * behind is read from the primary, then another writer's put is acknowledged over it,
   * and then the first client makes its put again on the same primary (an overwrite is
   * idempotent) and brings the overwritten value back: a read after both acknowledgements
   * returns a value that a read saw before the newer write began. The first put must take
   * effect once, before the second; so the client's second attempt is conditional on the
   * key still being at the version the primary applied (typed in the primary's answer),
   * and fails as indeterminate when another write came in between. Failed before (the
   * key ended at v1 on both replicas) whenever the second put was acknowledged before the
   * first client's next attempt (at least a quarter second: it first asks the members for
   * a newer ring), which is the usual order; passes whatever the order.
   */
  @Test
  void anUnconfirmedPutSeenByAReaderDoesNotComeBackOverALaterAcknowledgedPut()
      throws Exception {
    try (LocalTyrCluster c = new LocalTyrCluster(dir, 3, 64, 2);
        TyrClusterBlobStore first = c.store("b", "op-timeout", "5s");
        TyrClusterBlobStore second = c.store("b", "op-timeout", "5s")) {
      String key = "b/register";
      first.put(key, utf8("v0"), PutMode.OVERWRITE);
      Member primary = c.ring.primary(key);
      Member backup = c.ring.owners(key).get(1);
      Member third = c.members.stream().filter(m -> !m.equals(primary) && !m.equals(backup))
          .findFirst().orElseThrow();
      Ring next = c.ring.withState(third, Ring.State.DOWN, 2); // the key's roles unchanged
      c.server(primary).membership().install(next);
      c.server(third).membership().install(next);
      AtomicReference<Throwable> other = new AtomicReference<>();
      AtomicReference<String> seen = new AtomicReference<>();
      Thread secondWriter = new Thread(() -> {
        try {
          long end = System.nanoTime() + Duration.ofMinutes(1).toNanos();
          while (!"v1".equals(onNode(c, primary, key))) {
            if (System.nanoTime() > end) {
              throw new IllegalStateException("v1 never reached the primary " + primary);
            }
            Thread.sleep(1);
          }
          // A reader sees v1 (from the primary, where it is applied, unconfirmed) ...
          VersionedBytes v = second.readWithVersion(key, 64);
          seen.set(new String(v.bytes(), StandardCharsets.UTF_8));
          // ... then the backup loads the ring and another put is acknowledged over v1.
          c.server(backup).membership().install(next);
          second.put(key, utf8("v2"), PutMode.OVERWRITE);
        } catch (IOException | RuntimeException | InterruptedException e) {
          other.set(e);
        }
      });
      secondWriter.start();
      IOException firstFailed = null;
      try {
        first.put(key, utf8("v1"), PutMode.OVERWRITE);
      } catch (IOException e) {
        firstFailed = e; // indeterminate: v1 was applied, then overwritten
      }
      secondWriter.join(Duration.ofMinutes(2).toMillis());
      assertThat(secondWriter.isAlive()).as("the second writer ended").isFalse();
      assertThat(other.get()).isNull();
      assertThat(seen.get()).isEqualTo("v1");
      if (firstFailed != null) {
        assertThat(firstFailed).isInstanceOf(io.blobfs.store.StoreUnavailableException.class);
      }
      // v1 was seen before v2 began, so v2, acknowledged, is the last write of the key.
      assertThat(onNode(c, primary, key)).as("the primary's copy").isEqualTo("v2");
      assertThat(onNode(c, backup, key)).as("the backup's copy").isEqualTo("v2");
      assertThat(new String(first.readWithVersion(key, 64).bytes(), StandardCharsets.UTF_8))
          .isEqualTo("v2");
    }
  }

  /**
   * As the test above, but the other writer deletes the key: the first client's next
   * conditional attempt finds the key moved on, and reads it to see whether its own bytes
   * are there. It is gone, which says nothing of the first put (it was applied, then
   * deleted): the outcome is unknown, never "not found" (a put that answers
   * {@code BlobNotFoundException} tells its caller nothing was there to write over, or
   * that the store lost its key). The backup stays a ring behind meanwhile, so every
   * attempt is unconfirmed; the delete is made by construction between the first attempt
   * and the second (the client's hook before an unconfirmed call is made again). Failed
   * before ({@code BlobNotFoundException} out of the put); with the delete left to a
   * thread racing the put, it passed whenever the delete came after the put's attempts.
   */
  @Test
  void anUnconfirmedPutWhoseKeyAnotherWriterDeletedIsUnknownNotNotFound() throws Exception {
    try (LocalTyrCluster c = new LocalTyrCluster(dir, 3, 64, 2);
        TyrClusterBlobStore first = c.store("b", "op-timeout", "5s");
        TyrClusterBlobStore second = c.store("b", "op-timeout", "5s")) {
      String key = "b/deleted";
      first.put(key, utf8("v0"), PutMode.OVERWRITE);
      Member primary = c.ring.primary(key);
      Member backup = c.ring.owners(key).get(1);
      Member third = c.members.stream().filter(m -> !m.equals(primary) && !m.equals(backup))
          .findFirst().orElseThrow();
      Ring next = c.ring.withState(third, Ring.State.DOWN, 2); // the key's roles unchanged
      c.server(primary).membership().install(next);
      c.server(third).membership().install(next);
      AtomicReference<Throwable> other = new AtomicReference<>();
      AtomicReference<String> beforeDelete = new AtomicReference<>();
      java.util.concurrent.atomic.AtomicInteger again =
          new java.util.concurrent.atomic.AtomicInteger();
      first.beforeAgainOnPrimary(() -> {
        if (again.getAndIncrement() > 0) {
          return; // once, between the first attempt and the second
        }
        try {
          beforeDelete.set(onNode(c, primary, key));
          try {
            second.delete(key);
          } catch (io.blobfs.store.StoreUnavailableException unconfirmed) {
            // applied on the primary; the backup, a ring behind, refused it too
          }
        } catch (IOException | RuntimeException e) {
          other.set(e);
        }
      });
      IOException firstFailed = null;
      try {
        first.put(key, utf8("v1"), PutMode.OVERWRITE);
      } catch (IOException e) {
        firstFailed = e;
      }
      assertThat(other.get()).isNull();
      assertThat(again.get()).as("attempts made again after the first").isPositive();
      assertThat(beforeDelete.get()).as("the first attempt, applied").isEqualTo("v1");
      assertThat(firstFailed).as("the first put, unconfirmed each time")
          .isInstanceOf(io.blobfs.store.StoreUnavailableException.class);
      // Deleted after v1 was applied: the conditional attempts did not bring v1 back.
      assertThat(onNode(c, primary, key)).as("the primary's copy").isNull();
    }
  }
}
