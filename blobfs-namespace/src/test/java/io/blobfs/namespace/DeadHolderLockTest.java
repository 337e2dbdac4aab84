package io.blobfs.namespace;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.io.IOException;
import java.time.Duration;
import java.util.Optional;
import java.util.Random;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * A file whose lock was left by a client that died mid-rename, mid-delete or
 * mid-publication, without transactions (RADOS's path). Such a lock lasts a whole rename
 * lease (90 s by default) while a waiter gave up after a fixed minute, so the next rename,
 * delete or publication of the file in the lease's last 30 s failed "retry" instead of
 * taking the lock over (a FUSE mount killed mid-publication: the fresh mount's close got
 * EIO, CrashIT). Callers holding nothing now wait the lock out ({@link DataLocks.Patience});
 * a caller holding a lock already still gives up within the fixed wait. The wait is
 * shortened here below a 2 s lease, to show the same without waiting minutes.
 */
class DeadHolderLockTest extends DeadHolderFixture {
  private static final FsPath F = FsPath.parse("/a/f");
  private static final FsPath G = FsPath.parse("/a/g");

  @Test
  void aRenameWaitsOutTheLockOfADeadHolderAndTakesItOver() throws Exception {
    byte[] bytes = write(F, 3 * 4096 + 5);
    diedHoldingTheLockOf(F, Duration.ofSeconds(2));
    long start = System.nanoTime();

    assertTrue(client(SHORT).rename(F, G), "taken over once the dead holder's lease ran out");

    assertTrue(millisSince(start) > WAIT.toMillis(), "it waited past the fixed wait");
    assertArrayEquals(bytes, readAll(G));
    assertTrue(reader.probe(F).isEmpty(), "no name f");
  }

  @Test
  void aDeleteOfOneFileWaitsOutTheLockOfADeadHolder() throws Exception {
    write(F, 3 * 4096 + 5);
    diedHoldingTheLockOf(F, Duration.ofSeconds(2));

    assertTrue(client(SHORT).delete(F, false));

    assertTrue(reader.probe(F).isEmpty(), "no name f");
  }

  /** The mount's case: a fresh writer publishes over the file a killed one was replacing. */
  @Test
  void aPublicationOverAFileWaitsOutTheLockOfADeadHolder() throws Exception {
    write(F, 3 * 4096 + 5);
    diedHoldingTheLockOf(F, Duration.ofSeconds(2));
    byte[] next = new byte[5 * 4096 + 1];
    new Random(7).nextBytes(next);

    try (FileWriter w = client(SHORT).create(F, true)) {
      w.write(next, 0, next.length);
    } // the close publishes: it used to fail "retry" after the fixed wait

    assertArrayEquals(next, readAll(F));
  }

  @Test
  void aWaiterStillFailsWithinTheWaitPlusOneLeaseOfALockThatOutlivesIt() throws Exception {
    byte[] bytes = write(F, 3 * 4096 + 5);
    // a holder with a minute's lease: alive, as far as this waiter can tell
    diedHoldingTheLockOf(F, Duration.ofMinutes(1));
    long start = System.nanoTime();

    IOException e = assertThrows(IOException.class, () -> client(SHORT).rename(F, G));

    // the cap (wait + this client's 2 s lease), a 500 ms poll, and slack for 2 busy cores
    assertTrue(millisSince(start) < WAIT.toMillis() + 2000 + 3000, "bounded");
    assertTrue(e.getMessage().contains("retry"), e.getMessage());
    assertArrayEquals(bytes, readAll(F), "the file is untouched");
    assertTrue(reader.probe(G).isEmpty(), "no name g");
  }

  /**
   * Session 17's review of rename-wait, M1: a rename over a file holds the first of its
   * two locks while it waits for the second. That wait stays the fixed one, so it never
   * outlives the lock it holds: it gives up and lets it go before anyone could take it
   * over from a live holder.
   */
  @Test
  void aRenameOverNeverOutlivesTheLockItAlreadyHolds() throws Exception {
    write(F, 3 * 4096 + 5);
    write(G, 3 * 4096 + 5);
    String idF = reader.probe(F).get().record().fileId();
    String idG = reader.probe(G).get().record().fileId();
    // the lower id first: the rename over dst takes dst's lock, then waits for src's
    FsPath dst = idF.compareTo(idG) < 0 ? F : G;
    FsPath src = dst == F ? G : F;
    String dstId = dst == F ? idF : idG;
    diedHoldingTheLockOf(src, Duration.ofMinutes(1));
    BlobNamespace live = client(SHORT);
    FileInfo target = live.probe(dst).get();
    Future<Object> rename = threads.submit(() -> {
      try {
        live.renameOver(src, target);
        return "renamed";
      } catch (IOException e) {
        return e;
      }
    });
    long heldUntil;
    long lookUntil = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
    while (true) { // it holds dst's lock and waits for src's
      Optional<DataLocks.Lock> l = live.locks().read(dstId);
      if (l.isPresent() && l.get().owner() == DataLocks.Owner.RENAMER) {
        heldUntil = l.get().expiresMillis();
        break;
      }
      if (rename.isDone()) {
        fail("the rename over dst ended before it took dst's lock: " + rename.get());
      }
      assertTrue(System.nanoTime() < lookUntil, "dst's lock not taken within 10 s");
      Thread.sleep(5);
    }

    // a third client (a delete, holding nothing) waits for dst's lock: it gets it only once
    // the rename over dst gave up and released it, within dst's 2 s lease
    BlobNamespace third = client(SHORT);
    DataLocks.Lock taken = third.locks().takeForRename(dstId, dst, null,
        DataLocks.Patience.OUTWAIT);
    long gotIt = System.currentTimeMillis();
    Object outcome = rename.get();

    // before the lock's expiry, only a release lets anyone have it: never a takeover from
    // the rename, alive and waiting (review S6: not rename.isDone(), which races with the
    // future's completion after the release)
    assertTrue(gotIt < heldUntil, "dst's lock was taken over at its expiry, " + (gotIt
        - heldUntil) + " ms late, from the rename over it (it ended: " + outcome + ")");
    assertInstanceOf(IOException.class, outcome);
    assertTrue(((IOException) outcome).getMessage().contains("retry"), outcome.toString());
    assertTrue(third.locks().stillHeld(taken));
  }
}
