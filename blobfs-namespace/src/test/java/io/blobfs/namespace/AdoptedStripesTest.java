package io.blobfs.namespace;

import static org.junit.jupiter.api.Assertions.*;

import io.blobfs.namespace.FileRecord.Due;
import io.blobfs.namespace.StripeMap.Run;
import io.blobfs.store.FaultInjectingBlobStore.Fault;
import io.blobfs.store.FaultInjectingBlobStore.Op;
import io.blobfs.store.PutMode;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Shared stripes, step 2 (issue 16, DESIGN §2.2 I2, §2.5): the ADOPTED lock of an id whose
 * keys a later version names, as the sweeper, deletes and renames honour it; the
 * sweeper's running of cleanup dues. Locks and records are made by hand (no writer makes
 * them yet), on a store with transactions (Týr, memory) and on one without (RADOS).
 */
class AdoptedStripesTest extends SharedStripesFixture {
  private final ExecutorService racer = Executors.newSingleThreadExecutor();

  @AfterEach
  void stop() throws InterruptedException {
    if (faults != null) {
      faults.clear();
    }
    racer.shutdownNow();
    assertTrue(racer.awaitTermination(10, TimeUnit.SECONDS));
  }

  /** A's four stripes, adopted (its until already past: the sweeper ignores it). */
  private void adoptedBase() throws IOException {
    for (int s = 0; s < 4; s++) {
      putStripe("A", s);
    }
    ns.locks().adopt("A", Optional.empty(), "B", Duration.ZERO);
  }

  /**
   * B over A with its cleanup cut: B names d/A/0,1,3 and its own d/B/2; A's stripe 2 and
   * the stripes of Z (an id A had borrowed, adopted too) are left, listed in B's dues.
   */
  private void cutCleanup() throws IOException {
    adoptedBase();
    putStripe("B", 2);
    putBlob("d/Z/0", bytes, 0, 100);
    putBlob("d/Z/1", bytes, 0, 10);
    ns.locks().adopt("Z", Optional.empty(), "A", Duration.ZERO);
    FileRecord b = FileRecord.striped("B", LENGTH, 1, S).withStripes(
        new StripeMap(List.of("A"), List.of(new Run(0, 2, 0), new Run(3, 1, 0))),
        List.of(new Due("A", 4, Due.Scope.UNNAMED), new Due("Z", 2, Due.Scope.ALL)));
    store.put("n/a/b", b.encode(), PutMode.CREATE);
  }

  private OrphanSweeper.Report sweep() throws Exception {
    Thread.sleep(5); // every blob older than the sweep's cutoff
    return new OrphanSweeper(ns).sweep(Duration.ZERO, false);
  }

  @Test
  void anAdoptedLockReadsBackAndAnOlderClientSeesANeverExpiringUnknownLock()
      throws Exception {
    open(false);
    DataLocks.Lock lock = ns.locks().adopt("A", Optional.empty(), "B", Duration.ofMinutes(1));
    Optional<DataLocks.Lock> read = ns.locks().read("A");
    assertEquals(DataLocks.Owner.ADOPTED, read.get().owner());
    assertEquals("B", read.get().adopter());
    assertEquals(lock.expiresMillis(), read.get().expiresMillis());
    assertTrue(read.get().expiresMillis() > System.currentTimeMillis() + 50_000);
    // A client of 02332d4 reads the owner byte ('W', 'S', 'R', else UNKNOWN) and the
    // expiry at 2..9: an UNKNOWN lock that never expires, which its sweeper never takes
    // and its renames do not wait for.
    ByteBuffer raw = ByteBuffer.wrap(store.readWithVersion("d/A/lock", 1024).bytes());
    assertEquals('L', raw.get(0));
    assertEquals('A', raw.get(1));
    assertEquals(Long.MAX_VALUE, raw.getLong(2));
  }

  /**
   * No record was seen naming A (the record that does may have moved past both scans):
   * its keys stay, whatever the age of the lock's until.
   */
  @ParameterizedTest(name = "transactional={0}")
  @ValueSource(booleans = {true, false})
  void anAdoptedIdIsNeverSwept(boolean transactional) throws Exception {
    open(transactional);
    adoptedBase();
    OrphanSweeper.Report r = sweep();
    assertEquals(Set.of("d/A/0", "d/A/1", "d/A/2", "d/A/3", "d/A/lock"), keys("d/"));
    assertEquals(1, r.adopted());
    assertEquals(List.of(), r.orphanFileIds());
  }

  /** Due keys go, named keys stay (read back), the spent adoption of Z goes next sweep. */
  @ParameterizedTest(name = "transactional={0}")
  @ValueSource(booleans = {true, false})
  void aSweepRunsTheDuesOfACutCleanup(boolean transactional) throws Exception {
    open(transactional);
    cutCleanup();
    OrphanSweeper.Report first = sweep();
    assertEquals(Set.of("d/A/0", "d/A/1", "d/A/3", "d/A/lock", "d/B/2", "d/Z/lock"),
        keys("d/"));
    assertEquals(3, first.dueBlobsDeleted()); // d/A/2, d/Z/0, d/Z/1
    OrphanSweeper.Report second = sweep();
    assertEquals(Set.of("d/A/0", "d/A/1", "d/A/3", "d/A/lock", "d/B/2"), keys("d/"));
    assertEquals(1, second.adoptedLocksRemoved());
    assertArrayEquals(bytes, read("/a/b"));
    assertEquals(DataLocks.Owner.ADOPTED, ns.locks().read("A").get().owner());
  }

  /**
   * The record naming A's keys moves across the sweep's scan order during both of its
   * scans of the names (pages of one key, each scan call a step), so neither scan sees it:
   * A's keys stay all the same, since its lock is ADOPTED (DESIGN §2.5), where an
   * ordinary unnamed id would be taken and deleted. B has no stripe of its own (a
   * publication that changed no byte, a utimensat): no data of B's own id is listed, so
   * the sweeper takes no lock of B's, and the renames of B, which guard B's own lock only,
   * need not wait for it. (With an own stripe, the sweeper would take B's lock too and the
   * rename during the second scan would wait for it: the existing guard.)
   */
  @ParameterizedTest(name = "transactional={0}")
  @ValueSource(booleans = {true, false})
  void adoptedKeysSurviveTheirRecordMovingPastBothScans(boolean transactional)
      throws Exception {
    open(transactional, 1);
    adoptedBase();
    FileRecord b = FileRecord.striped("B", LENGTH, 1, S).withStripes(
        new StripeMap(List.of("A"), List.of(new Run(0, 4, 0))), List.of());
    store.put("n/z/b", b.encode(), PutMode.CREATE);
    for (String filler : List.of("n/a/0", "n/c/1", "n/c/2", "n/z/0")) {
      store.put(filler, FileRecord.striped(filler.replace('/', '-'), 0, 1, S).encode(),
          PutMode.CREATE);
    }
    FsPath behind = FsPath.parse("/a/b"); // before n/c/1 in the scan order
    FsPath ahead = FsPath.parse("/z/b"); // after it
    // Scan 1: past n/a/0 and n/c/1 (3rd call of the names scan), B moves behind it.
    Fault first = faults.on(Op.SCAN).keys("n/").nth(3).pause();
    Future<?> moves = racer.submit(() -> {
      first.awaitReached();
      assertTrue(ns.rename(ahead, behind));
      // Before a second scan (only an id the sweeper takes gets one): B moves ahead
      // again, then behind it once that scan is past n/c/1.
      Fault taking = faults.on(Op.PUT).keys("d/A/lock").pause();
      first.release();
      taking.awaitReached();
      assertTrue(ns.rename(behind, ahead));
      Fault second = faults.on(Op.SCAN).keys("n/").nth(3).pause();
      taking.release();
      second.awaitReached();
      assertTrue(ns.rename(ahead, behind));
      second.release();
      return null;
    });
    sweep();
    faults.clear(); // a sweep that took nothing made no second scan: nothing to wait for
    racer.shutdownNow();
    assertTrue(racer.awaitTermination(10, TimeUnit.SECONDS));
    assertEquals(Set.of("d/A/0", "d/A/1", "d/A/2", "d/A/3", "d/A/lock"), keys("d/"));
    FsPath now = ns.probe(behind).isPresent() ? behind : ahead;
    assertArrayEquals(bytes, read(now.toString()));
    assertTrue(moves.isDone());
  }

  /** A delete takes the keys, the dues' keys, then the ADOPTED locks: nothing is left. */
  @ParameterizedTest(name = "transactional={0}")
  @ValueSource(booleans = {true, false})
  void aDeleteRemovesTheAdoptedLocksToo(boolean transactional) throws Exception {
    open(transactional);
    cutCleanup();
    assertTrue(ns.delete(FsPath.parse("/a/b"), false));
    assertEquals(Set.of(), keys("d/"));
  }

  /**
   * Without transactions, a rename of a file whose data a publication over it has
   * adopted (committing) waits for the adoption's until, then goes on.
   */
  @Test
  void aRenameWaitsForAPendingAdoption() throws Exception {
    open(false);
    FileWriter w = ns.create(FsPath.parse("/a/f"), false);
    w.write(bytes, 0, LENGTH);
    w.close();
    String id = ns.getFileInfo(FsPath.parse("/a/f")).record().fileId();
    ns.locks().adopt(id, ns.locks().read(id), "next", Duration.ofMillis(1500));
    long start = System.nanoTime();
    assertTrue(ns.rename(FsPath.parse("/a/f"), FsPath.parse("/a/g")));
    long waited = (System.nanoTime() - start) / 1_000_000;
    assertTrue(waited >= 1000, "waited " + waited + " ms");
    assertArrayEquals(bytes, read("/a/g"));
  }
}
