package io.blobfs.namespace;

import static org.junit.jupiter.api.Assertions.*;

import io.blobfs.store.BeforeTimeout;
import io.blobfs.store.FaultInjectingBlobStore;
import io.blobfs.store.FaultInjectingBlobStore.Fault;
import io.blobfs.store.FaultInjectingBlobStore.Op;
import io.blobfs.store.Futures;
import io.blobfs.store.StoreLimits;
import io.blobfs.store.TransactionalBlobStore;
import io.blobfs.store.memory.InMemoryBlobStore;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.List;
import java.util.Random;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The orphan sweeper removes what no record names and nothing else: not the data of a
 * writer at work however idle (within its lease), nor of a file renamed while it sweeps,
 * on a store with transactions (Týr, memory) and on one without (RADOS).
 */
class OrphanSweeperTest {
  private static final Duration NO_AGE = Duration.ZERO;
  private final InMemoryBlobStore store =
      new InMemoryBlobStore("sweep", new StoreLimits(1024, 1L << 30, Integer.MAX_VALUE));
  private final ExecutorService racer = Executors.newSingleThreadExecutor();
  private FaultInjectingBlobStore faults = FaultInjectingBlobStore.over(store);
  private BlobNamespace ns = namespace(NamespaceOptions.DEFAULT_WRITER_LEASE, 100);

  @AfterEach
  void stop() throws InterruptedException {
    faults.clear();
    racer.shutdownNow();
    assertTrue(racer.awaitTermination(10, TimeUnit.SECONDS));
  }

  private BlobNamespace namespace(Duration lease, int scanPage) {
    return new BlobNamespace(faults.store(),
        new NamespaceOptions(64 << 10, 16 << 10, 64 << 10, 1024, false, scanPage)
            .withWriterLease(lease), StoreCallCounters.NONE);
  }

  /** Over a store without transactions, pages of one key: every scan call is a step. */
  private void openStepwise(boolean transactional) {
    faults = transactional ? FaultInjectingBlobStore.over(store)
        : FaultInjectingBlobStore.over(store, TransactionalBlobStore.class);
    ns = namespace(NamespaceOptions.DEFAULT_WRITER_LEASE, 1);
    assertEquals(transactional, ns.hasAtomicRename());
  }

  private static byte[] data(int n) {
    byte[] b = new byte[n];
    new Random(n).nextBytes(b);
    return b;
  }

  private FileWriter started(BlobNamespace on, String path, int bytes) throws IOException {
    FileWriter w = on.create(FsPath.parse(path), false);
    w.write(data(bytes), 0, bytes);
    return w; // not closed (yet)
  }

  private void write(String path, int bytes) throws IOException {
    started(ns, path, bytes).close();
  }

  private byte[] read(String path) throws IOException {
    FileReader r = ns.open(FsPath.parse(path));
    ByteBuffer back = ByteBuffer.allocate((int) r.length());
    while (back.hasRemaining()) {
      assertTrue(Futures.await(r.read(back.position(), back)) > 0);
    }
    return back.array();
  }

  private OrphanSweeper.Report sweep() throws IOException {
    return new OrphanSweeper(ns).sweep(NO_AGE, false);
  }

  @Test
  void removesTheDataOfDeadWritersOnceTheirLeaseRunsOutAndNothingElse() throws Exception {
    write("/live/big", 300_000);
    write("/live/small", 10);
    // Writers that "died": never closed, their lease short.
    BlobNamespace shortLease = namespace(Duration.ofMillis(50), 100);
    started(shortLease, "/dead/a", 200_000);
    started(shortLease, "/dead/b", 100_000);
    started(ns, "/alive", 100_000); // a lease of a day: still at work
    Thread.sleep(100);
    int blobsBefore = store.blobCount();

    OrphanSweeper.Report dry = new OrphanSweeper(ns).sweep(Duration.ofMillis(10), true);
    assertEquals(2, dry.orphanFileIds().size());
    assertEquals(1, dry.heldByWriters());
    assertEquals(0, dry.deletedBlobs());
    assertEquals(blobsBefore, store.blobCount(), "a dry run deletes nothing");

    OrphanSweeper.Report r = new OrphanSweeper(ns).sweep(Duration.ofMillis(10), false);
    assertEquals(dry.orphanFileIds(), r.orphanFileIds());
    assertEquals(dry.orphanBlobs(), r.deletedBlobs());
    // What the dead writers had sent: all of it (a write this large is not buffered).
    assertEquals(300_000, r.orphanBytes());
    // Their blobs and their locks are gone; the live ones' are not.
    assertEquals(blobsBefore - r.orphanBlobs() - 2, store.blobCount());
    assertArrayEquals(data(300_000), read("/live/big"), "live files untouched");
    assertArrayEquals(data(10), read("/live/small"));
    assertTrue(ns.probe(FsPath.parse("/dead/a")).isEmpty());
  }

  @Test
  void aWriterIdleLongerThanMinAgeKeepsItsData() throws Exception {
    FileWriter w = started(ns, "/busy", 200_000);
    Thread.sleep(20);
    OrphanSweeper.Report r = sweep(); // before: its stripes went, and close() published
    assertEquals(List.of(), r.orphanFileIds());
    assertEquals(1, r.heldByWriters());
    w.write(data(10), 0, 10);
    w.close();
    byte[] expected = new byte[200_010];
    System.arraycopy(data(200_000), 0, expected, 0, 200_000);
    System.arraycopy(data(10), 0, expected, 200_000, 10);
    assertArrayEquals(expected, read("/busy"));
    assertEquals(0, sweep().orphanFileIds().size(), "a published file is no orphan");
    assertEquals(4, store.scan("d/", null, 100).keys().size(), "4 stripes; the lock went");
    assertTrue(store.scan("d/", null, 100).keys().stream().noneMatch(k -> k.endsWith("/lock")));
  }

  @Test
  void aWriterWhoseLeaseRanOutAndWasSweptPublishesNothing() throws Exception {
    FileWriter w = started(namespace(Duration.ofMillis(50), 100), "/late", 200_000);
    Thread.sleep(100);
    assertEquals(1, sweep().orphanFileIds().size());
    IOException e = assertThrows(IOException.class, w::close);
    assertTrue(e.getMessage().contains("will not be created")
        || e.getCause().getMessage().contains("lease"), e.toString());
    assertTrue(ns.probe(FsPath.parse("/late")).isEmpty(), "no record names swept data");
  }

  /**
   * The first scan of the names misses a file that a rename moves from a name not yet
   * scanned to one already scanned: the second scan, under the sweeper's lock, sees it.
   */
  @ParameterizedTest(name = "transactional={0}")
  @ValueSource(booleans = {true, false})
  void aFileRenamedDuringTheFirstScanKeepsItsData(boolean transactional) throws Exception {
    openStepwise(transactional);
    write("/b", 10);
    write("/z/big", 200_000);
    Thread.sleep(5); // older than the sweep's minimum age of 0: blobs of its own ms are kept
    // Page 1 of the names is n/b; the sweeper is held before page 2.
    Fault held = faults.on(Op.SCAN).keys("n/").nth(2).pause();
    Future<OrphanSweeper.Report> sweep = racer.submit(this::sweep);
    held.awaitReached();
    assertTrue(ns.rename(FsPath.parse("/z/big"), FsPath.parse("/a/big")));
    held.release();
    OrphanSweeper.Report r = sweep.get(30, TimeUnit.SECONDS);
    assertEquals(List.of(), r.orphanFileIds());
    assertEquals(1, r.stillNamed(), r + " " + store.scan("d/", null, 100).keys());
    assertArrayEquals(data(200_000), read("/a/big"));
  }

  /**
   * A rename during the second scan waits, keeping the old name, until the sweeper, which
   * holds the lock, has looked: before, the move could slip past the second scan too.
   */
  @ParameterizedTest(name = "transactional={0}")
  @ValueSource(booleans = {true, false})
  void aRenameDuringTheSecondScanWaitsForTheSweeper(boolean transactional) throws Exception {
    openStepwise(transactional);
    write("/b", 10);
    write("/z/big", 200_000);
    Thread.sleep(5); // older than the sweep's minimum age of 0: blobs of its own ms are kept
    Fault first = faults.on(Op.SCAN).keys("n/").nth(2).pause();
    Future<OrphanSweeper.Report> sweep = racer.submit(this::sweep);
    first.awaitReached();
    assertTrue(ns.rename(FsPath.parse("/z/big"), FsPath.parse("/a/big")));
    // The second scan (pages n/a/big, n/b, end) is held after its first page.
    Fault second = faults.on(Op.SCAN).keys("n/").nth(2).pause();
    first.release();
    second.awaitReached();
    ExecutorService renamer = Executors.newSingleThreadExecutor();
    try {
      Future<Boolean> back = renamer.submit(
          () -> ns.rename(FsPath.parse("/a/big"), FsPath.parse("/y/big")));
      Thread.sleep(300);
      assertFalse(back.isDone(), "the rename waits while the sweeper holds the lock");
      second.release();
      OrphanSweeper.Report r = sweep.get(30, TimeUnit.SECONDS);
      assertTrue(back.get(30, TimeUnit.SECONDS));
      assertEquals(List.of(), r.orphanFileIds());
      assertEquals(1, r.stillNamed());
    } finally {
      renamer.shutdownNow();
    }
    assertArrayEquals(data(200_000), read("/y/big"));
    assertTrue(ns.probe(FsPath.parse("/a/big")).isEmpty());
  }

  @Test
  void aLockLeftByADeadSweeperIsTakenOverAndItsOrphanRemoved() throws Exception {
    BlobNamespace shortLease = namespace(Duration.ofMillis(1), 100);
    started(shortLease, "/dead", 100_000);
    Thread.sleep(20);
    // The first sweeper "dies" after taking its lock: its deletes never happen, not even
    // the release of its lock.
    faults.on(Op.DELETE).keys("d/.*").always().failBefore();
    assertThrows(IOException.class, () -> new OrphanSweeper(ns, Duration.ofMillis(1))
        .sweep(Duration.ofMillis(1), false));
    faults.clear();
    Thread.sleep(20);
    OrphanSweeper.Report r = new OrphanSweeper(ns, Duration.ofMillis(1))
        .sweep(Duration.ofMillis(1), false);
    assertEquals(1, r.orphanFileIds().size());
    assertEquals(List.of(), store.scan("d/", null, 100).keys(), "data and lock gone");
  }

  /** Leaves a sweeper's lock on the data of a named file, as a sweeper that died would. */
  private String deadSweepersLockOn(String path, Duration hold) throws IOException {
    String id = ns.getFileInfo(FsPath.parse(path)).record().fileId();
    assertTrue(ns.locks().takeForSweeper(id, java.util.Optional.empty(), hold).isPresent());
    return id;
  }

  @ParameterizedTest(name = "transactional={0}")
  @ValueSource(booleans = {true, false})
  void aRenameRemovesTheExpiredLockOfADeadSweeper(boolean transactional) throws Exception {
    openStepwise(transactional);
    write("/f", 200_000);
    String id = deadSweepersLockOn("/f", Duration.ofMillis(1));
    Thread.sleep(10);
    assertTrue(ns.rename(FsPath.parse("/f"), FsPath.parse("/g")), "no wait, no failure");
    assertTrue(ns.locks().read(id).isEmpty(), "the expired lock went with the rename");
    assertArrayEquals(data(200_000), read("/g"));
  }

  @ParameterizedTest(name = "transactional={0}")
  @ValueSource(booleans = {true, false})
  void aRenameWaitsForALiveSweepersLockAndFailsCleanlyAfterItsBound(boolean transactional)
      throws Exception {
    openStepwise(transactional);
    // The rename must begin before the sweeper's hold of 1.5 s runs out, or it takes the
    // expired lock at once and the check that it waited fails: on a loaded machine a try
    // that overran the hold runs again with a longer one (on names of its own).
    BeforeTimeout.check(Duration.ofMillis(1500), 3, (hold, window) -> {
      String f = "/f-" + hold.toMillis();
      String g = "/g-" + hold.toMillis();
      write(f, 200_000);
      window.began();
      String id = deadSweepersLockOn(f, hold);
      long start = System.nanoTime();
      // Released within the wait: the rename goes on.
      racer.submit(() -> {
        Thread.sleep(300);
        ns.locks().release(ns.locks().read(id).orElseThrow());
        return null;
      });
      assertTrue(ns.rename(FsPath.parse(f), FsPath.parse(g)));
      assertTrue(System.nanoTime() - start > 250_000_000L, "it waited for the sweeper");
      window.done();
      assertArrayEquals(data(200_000), read(g));
    });
  }

  @Test
  void aSweepRemovesAnExpiredLockLeftOnANamedFile() throws Exception {
    write("/f", 200_000);
    String id = deadSweepersLockOn("/f", Duration.ofMillis(1));
    Thread.sleep(10);
    OrphanSweeper.Report r = sweep();
    assertEquals(List.of(), r.orphanFileIds());
    assertTrue(ns.locks().read(id).isEmpty());
    assertArrayEquals(data(200_000), read("/f"));
  }

  @Test
  void aCloseWhoseOutcomeIsUnknownKeepsItsLockSoALateRecordFindsItsData() throws Exception {
    FileWriter w = started(ns, "/f", 200_000);
    faults.on(Op.PUT).keys("n/f").applyThenFail(); // the record is put, its answer lost
    faults.on(Op.READ).keys("n/f").always().failBefore(); // and cannot be read back
    assertThrows(IOException.class, w::close);
    faults.clear();
    String id = ns.getFileInfo(FsPath.parse("/f")).record().fileId();
    assertTrue(ns.locks().read(id).isPresent(), "kept until its lease runs out");
    assertEquals(List.of(), sweep().orphanFileIds());
    assertArrayEquals(data(200_000), read("/f"));
  }
}
