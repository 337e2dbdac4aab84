package io.blobfs.namespace;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.blobfs.store.FaultInjectingBlobStore;
import io.blobfs.store.FaultInjectingBlobStore.Fault;
import io.blobfs.store.FaultInjectingBlobStore.Op;
import io.blobfs.store.VersionedBytes;
import java.io.IOException;
import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/**
 * A mover slower than its lease, its lock settled or taken while it stalls, against the
 * orphan sweeper and deletes of the new name: the fourth review's reproductions, with
 * the outcomes the fixes give. A settler fences a mover that has not marked the source
 * yet (it rewrites the source unchanged, so the mark conflicts); the sweeper settles a
 * rename's expired lock instead of taking it over; a finisher of a committed move
 * removes the moved source whatever the destination became after the commit.
 */
class StalledMoverFencingTest extends StalledMoveFixture {
  private static final FsPath F = FsPath.parse("/a/f");
  private static final FsPath G = FsPath.parse("/a/g");
  private static final FsPath H = FsPath.parse("/a/h");

  /**
   * MF1. The sweeper's first scan misses the file (renamed h to f during it); M2's rename
   * f to g takes the lock, reads f and stalls past its lease before marking. Before, the
   * sweeper took M2's expired lock over as it was; M2 resumed, marked, committed and
   * finished while the second scan ran, which found neither name: the data /a/g names
   * was deleted. Now the sweeper settles the lock (fencing M2, whose mark conflicts) and
   * leaves the file to the next sweep.
   */
  @Test
  void theSweeperSettlesAStalledMoversLockAndTheMoverIsFenced() throws Exception {
    byte[] bytes = write(H, 3 * 4096 + 5);
    FaultInjectingBlobStore sw = faults();
    FaultInjectingBlobStore m2 = faults();
    Fault scan1Read = sw.on(Op.READ).keys("n/a/h").nth(1).pause();
    Fault scan2Read = sw.on(Op.READ).keys("n/a/f").nth(1).pause(); // see below
    Fault m2Mark = m2.on(Op.PUT).keys("n/a/f").nth(1).pause();
    BlobNamespace sweeperNs = namespace(sw);
    awaitOlderThanNow(); // the data blobs are older than the sweep's cutoff (minAge 0)
    Future<OrphanSweeper.Report> sweep = threads.submit(
        () -> new OrphanSweeper(sweeperNs, Duration.ofMinutes(10)).sweep(Duration.ZERO, false));
    scan1Read.awaitReached(); // first scan listed n/a/h only, about to read it
    assertTrue(reader.rename(H, F), "R1, an ordinary rename during the first scan");
    Future<Object> mover = renameInThread(m2, F, G);
    Object moved;
    m2Mark.awaitReached(); // M2 holds the lock and read f: about to mark it
    awaitLeaseOver(); // M2 stalls past its lease
    scan1Read.release();
    scan2Read.awaitReached(); // the sweeper's first read of f
    String id = reader.probe(F).get().record().fileId();
    if (reader.locks().read(id).get().owner() == DataLocks.Owner.SWEEPER) {
      // Before the fix: the sweeper took the lock over and its second scan listed n/a/f
      // only; M2 completes f to g meanwhile, and the scan then finds f gone.
      m2Mark.release();
      moved = mover.get(30, TimeUnit.SECONDS);
      scan2Read.release();
    } else {
      // Now: the sweeper settles M2's lock (taken over, the move kept in it) and reads f
      // to settle it; it fences f before M2 resumes, and ends without a second scan.
      scan2Read.release();
      sweep.get(30, TimeUnit.SECONDS);
      m2Mark.release();
      moved = mover.get(30, TimeUnit.SECONDS);
    }
    OrphanSweeper.Report report = sweep.get(30, TimeUnit.SECONDS);
    assertEquals(0, report.deletedBlobs(), "the sweeper deleted named data: " + report);
    assertInstanceOf(IOException.class, moved, "M2 was fenced by the sweeper's settling");
    assertTrue(reader.probe(G).isEmpty(), "no name g");
    assertArrayEquals(bytes, readAll(F));
    OrphanSweeper.Report next = new OrphanSweeper(reader, LEASE).sweep(Duration.ZERO, false);
    assertEquals(0, next.deletedBlobs(), "the next sweep: " + next);
    assertArrayEquals(bytes, readAll(F));
  }

  /**
   * MF2, path A. M commits f to g and stalls before its finish past its lease; a delete of
   * /a/g (kept in its record: no lock) meets the expired lock, and a settler S takes it
   * over first. Before, D's settle failed and D deleted g at once; S and M then found g
   * gone and kept f, moved, for good: /a/f could never be made again. Now D waits under
   * the lock (and settles the move once S's lease runs out), and any finisher removes
   * the moved source whatever became of g.
   */
  @Test
  void anInlineDeleteRacingASettlerLeavesBothNamesFree() throws Exception {
    write(F, 100);
    String id = reader.probe(F).get().record().fileId();
    String lockKey = Pattern.quote(reader.locks().key(id));
    FaultInjectingBlobStore m = faults();
    FaultInjectingBlobStore s = faults();
    FaultInjectingBlobStore d = faults();
    Fault mFinish = m.on(Op.PUT).keys("n/a/g").nth(2).pause();
    Fault sMakePlain = s.on(Op.PUT).keys("n/a/g").nth(1).pause();
    Fault dTakeOver = d.on(Op.PUT).keys(lockKey).nth(1).pause();
    Future<Object> mover = renameInThread(m, F, G);
    mFinish.awaitReached(); // committed: f moved, g incoming; M stalls
    awaitLeaseOver();
    BlobNamespace dNs = namespace(d);
    Future<Object> del = threads.submit(() -> {
      try {
        return dNs.delete(G, false);
      } catch (IOException e) {
        return e;
      }
    });
    dTakeOver.awaitReached(); // D read g (there) and the expired lock: about to take it over
    BlobNamespace sNs = namespace(s);
    Optional<DataLocks.Lock> lock = sNs.locks().read(id);
    assertTrue(lock.isPresent() && lock.get().interruptedMove(System.currentTimeMillis()));
    Future<Boolean> settler = threads.submit(() -> MoveSettler.settle(sNs, lock.get()));
    sMakePlain.awaitReached(); // S took the lock over, read g incoming and f moved
    // D's takeOver conflicts. Before, it deleted g at once. Now it waits under the lock:
    // S holds it, stalled, until its lease runs out; then D settles the move itself
    // (finishing it: g plain, f gone) and deletes g.
    dTakeOver.release();
    assertEquals(Boolean.TRUE, del.get(30, TimeUnit.SECONDS), "delete(/a/g)");
    sMakePlain.release();
    settler.get(30, TimeUnit.SECONDS);
    mFinish.release();
    assertEquals(Boolean.TRUE, mover.get(30, TimeUnit.SECONDS), "rename");
    assertNameFreeForGood(F);
  }

  /**
   * MF2, path B. The mover stalls before marking past its lease; a settler finds no mark.
   * Before, it released the lock and left the mover free: it marked, committed without a
   * lock, a delete of /a/g took the free lock, and the mover's finish kept f for good.
   * Now the settler rewrites f unchanged, so the mover's mark conflicts: the rename fails
   * and changes nothing.
   */
  @Test
  void aSettlerFencesAMoverThatHasNotMarkedYet() throws Exception {
    byte[] bytes = write(F, 3 * 4096 + 5);
    String id = reader.probe(F).get().record().fileId();
    FaultInjectingBlobStore m = faults();
    Fault mMark = m.on(Op.PUT).keys("n/a/f").nth(1).pause();
    Future<Object> mover = renameInThread(m, F, G);
    mMark.awaitReached();
    awaitLeaseOver(); // M outlives its lease before marking
    Optional<DataLocks.Lock> lock = reader.locks().read(id);
    assertTrue(lock.isPresent() && lock.get().interruptedMove(System.currentTimeMillis()));
    assertTrue(MoveSettler.settle(reader, lock.get()), "a settler: fences f, releases");
    mMark.release();
    assertInstanceOf(IOException.class, mover.get(30, TimeUnit.SECONDS), "M was fenced");
    assertTrue(reader.probe(G).isEmpty(), "no name g");
    assertTrue(reader.locks().read(id).isEmpty(), "no lock left");
    assertArrayEquals(bytes, readAll(F));
    assertTrue(reader.rename(F, G), "the file can be renamed again");
    assertArrayEquals(bytes, readAll(G));
  }

  /**
   * The fence on a source carrying a stray mark of an earlier move to another name (its
   * mark applied after its mover gave up: it reads as there): the settler rewrites it as it
   * is, so the stalled mover's mark still conflicts, and the settling ends (a settler that
   * kept looking for this move's mark there would keep the lock for ever).
   */
  @Test
  void aSourceWithAStrayMarkOfAnotherMoveIsFencedAsItIs() throws Exception {
    byte[] bytes = write(F, 3 * 4096 + 5);
    String id = reader.probe(F).get().record().fileId();
    VersionedBytes raw = memory.readWithVersion("n/a/f", 1 << 16);
    FileRecord plain = FileRecord.decode("n/a/f", raw.bytes(), raw.bytes().length, true);
    memory.putIfVersion("n/a/f", plain.marked(FileRecord.Mark.MOVING, "n/a/h", 42).encode(),
        raw.version());
    FaultInjectingBlobStore m = faults();
    Fault mMark = m.on(Op.PUT).keys("n/a/f").nth(1).pause();
    Future<Object> mover = renameInThread(m, F, G);
    mMark.awaitReached();
    awaitLeaseOver();
    Optional<DataLocks.Lock> lock = reader.locks().read(id);
    assertTrue(lock.isPresent() && lock.get().interruptedMove(System.currentTimeMillis()));
    assertTrue(MoveSettler.settle(reader, lock.get()), "settled");
    assertTrue(reader.locks().read(id).isEmpty(), "no lock left");
    mMark.release();
    assertInstanceOf(IOException.class, mover.get(30, TimeUnit.SECONDS), "M was fenced");
    assertArrayEquals(bytes, readAll(F));
    assertTrue(reader.rename(F, G), "the file can be renamed again");
    assertArrayEquals(bytes, readAll(G));
  }

  /**
   * MF2's general case: a committed move whose destination was removed after the commit
   * by a client that ignores the lock (here: the record deleted in the store directly).
   * Before, the mover's finish kept the moved source for good with a warning; the name
   * /a/f could never be made again.
   */
  @Test
  void aMovedSourceWhoseDestinationWentAfterTheCommitIsRemoved() throws Exception {
    write(F, 100);
    FaultInjectingBlobStore m = faults();
    Fault mFinish = m.on(Op.PUT).keys("n/a/g").nth(2).pause();
    Future<Object> mover = renameInThread(m, F, G);
    mFinish.awaitReached(); // committed: f moved, g incoming
    assertTrue(memory.delete(reader.layout().recordKey(G)), "g removed behind the lock");
    mFinish.release();
    assertEquals(Boolean.TRUE, mover.get(30, TimeUnit.SECONDS), "rename");
    assertFalse(memory.stat(reader.layout().recordKey(F)).exists(), "the moved source went");
    write(F, 10);
    assertTrue(reader.probe(F).isPresent());
  }

  /** Waits until the wall clock is past the millisecond a blob written just now got. */
  private static void awaitOlderThanNow() throws InterruptedException {
    long now = System.currentTimeMillis();
    while (System.currentTimeMillis() <= now + 1) {
      Thread.sleep(1);
    }
  }

  private void assertNameFreeForGood(FsPath p) throws Exception {
    assertTrue(reader.probe(F).isEmpty() && reader.probe(G).isEmpty(), "rename then delete");
    awaitLeaseOver();
    reader.finishInterruptedRenames();
    new OrphanSweeper(reader, LEASE).sweep(Duration.ZERO, false);
    assertFalse(memory.stat(reader.layout().recordKey(p)).exists(), "a record left at " + p);
    write(p, 10); // the name is free: a new file there
    assertTrue(reader.probe(p).isPresent());
  }
}
