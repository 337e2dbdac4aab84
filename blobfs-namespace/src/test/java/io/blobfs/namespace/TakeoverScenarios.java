package io.blobfs.namespace;

import static org.junit.jupiter.api.Assertions.*;

import io.blobfs.store.BlobStore;
import io.blobfs.store.FaultInjectingBlobStore;
import io.blobfs.store.Futures;
import java.io.FileNotFoundException;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.Arrays;
import java.util.BitSet;
import java.util.Optional;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The takeover commit's scenarios (shared stripes step 3, issue 16, DESIGN §2.3, §4 step 3)
 * on any store: a new version made with {@link BlobNamespace#createVersion} takes over the
 * unchanged stripes of its base, and its commit adopts the base's keys and deletes exactly
 * {@code keys(A) − keys(B)}. Run on a memory store with and without transactions
 * ({@code TakeoverCommitTest}) and on a real Ceph cluster ({@code RadosTakeoverIT}, RADOS's
 * seven conditional steps against the OSD's versions). Every scenario starts on an empty
 * store holding nothing but what it writes.
 */
public abstract class TakeoverScenarios extends SharedStripesFixture {
  static final FsPath F = FsPath.parse("/d/f");
  final ExecutorService racer = Executors.newSingleThreadExecutor();

  /** An empty store for one scenario; closed by {@link #closeStore}. */
  protected abstract BlobStore openStore() throws IOException;

  /** Whether the namespace sees the store's transactions (if it has any). */
  protected abstract boolean transactional();

  /** After a scenario: leaves the store as found. */
  protected void closeStore(BlobStore s) throws IOException {}

  @BeforeEach
  public void openNamespace() throws IOException {
    store = openStore();
    open(transactional());
  }

  @AfterEach
  public void stop() throws Exception {
    racer.shutdownNow();
    assertTrue(racer.awaitTermination(10, TimeUnit.SECONDS));
    closeStore(store);
  }

  /** The file's bytes, written whole by a plain writer: returns its file id. */
  String publish(byte[] content) throws IOException {
    try (FileWriter w = ns.create(F, true)) {
      w.write(content, 0, content.length);
    }
    return id();
  }

  String id() throws IOException {
    return ns.getFileInfo(F).record().fileId();
  }

  /** A version of F rewriting stripe 2, written and not closed. */
  FileWriter pendingVersion() throws IOException {
    FileWriter w = ns.createVersion(F, ns.getFileInfo(F));
    w.setLength(LENGTH);
    w.takeOver(stripes(0, 1, 3));
    writeUntaken(w, rewritten(bytes, 2, 11), stripes(0, 1, 3));
    return w;
  }

  Set<String> expected(String... keys) {
    return new TreeSet<>(Arrays.asList(keys));
  }

  /** The bytes at {@code path} read by a namespace of its own (no cache, no writer state). */
  byte[] readFresh(String path) throws IOException {
    return read(new BlobNamespace(faults.store(), ns.options(), StoreCallCounters.NONE), path);
  }

  @Test
  public void rewritingStripeTwoLeavesExactlyTheBasesOtherStripesAdopted() throws Exception {
    String a = publish(bytes);
    byte[] next = rewritten(bytes, 2, 11);
    String b = version(F, next, stripes(0, 1, 3));
    assertEquals(expected("d/" + a + "/0", "d/" + a + "/1", "d/" + a + "/3",
        "d/" + b + "/2", "d/" + a + "/lock"), keys("d/"));
    DataLocks.Lock lock = ns.locks().read(a).get();
    assertEquals(DataLocks.Owner.ADOPTED, lock.owner());
    assertEquals(b, lock.adopter());
    assertArrayEquals(next, read(F.toString()));
    assertArrayEquals(next, readFresh(F.toString()));
    FileRecord r = ns.getFileInfo(F).record();
    assertEquals(b, r.fileId());
    assertEquals(java.util.List.of(a), r.map().ids());
    assertEquals(java.util.List.of(), r.dues()); // nothing left to a crash: no due
  }

  @Test
  public void threeVersionsChainedThenDeletedLeaveNoKey() throws Exception {
    String a = publish(bytes);
    byte[] v2 = rewritten(bytes, 2, 11);
    String b = version(F, v2, stripes(0, 1, 3));
    byte[] v3 = rewritten(v2, 1, 12);
    String c = version(F, v3, stripes(0, 2, 3)); // 0, 3 are A's keys, 2 is B's: flattened
    assertEquals(expected("d/" + a + "/0", "d/" + a + "/3", "d/" + a + "/lock",
        "d/" + b + "/2", "d/" + b + "/lock", "d/" + c + "/1"), keys("d/"));
    assertArrayEquals(v3, read(F.toString()));
    assertArrayEquals(v3, readFresh(F.toString()));
    byte[] v4 = rewritten(v3, 0, 13);
    String d = version(F, v4, stripes(1)); // takes C's 1 only: A and B dropped, locks too
    assertEquals(expected("d/" + c + "/1", "d/" + c + "/lock", "d/" + d + "/0",
        "d/" + d + "/2", "d/" + d + "/3"), keys("d/"));
    assertArrayEquals(v4, readFresh(F.toString()));
    assertTrue(ns.delete(F, false));
    assertEquals(Set.of(), keys("d/"));
  }

  @Test
  public void aVersionTakingNothingReplacesAMappedFileAndItsAdoptions() throws Exception {
    publish(bytes);
    version(F, rewritten(bytes, 2, 11), stripes(0, 1, 3));
    byte[] whole = rewritten(bytes, 0, 14);
    String c = version(F, whole, new BitSet());
    assertEquals(expected("d/" + c + "/0", "d/" + c + "/1", "d/" + c + "/2", "d/" + c + "/3"),
        keys("d/"));
    assertArrayEquals(whole, read(F.toString()));
  }

  /** The base replaced by another writer meanwhile: typed, nothing applied, theirs intact. */
  @Test
  public void aReplacedBaseFailsTypedAndPublishesNothing() throws Exception {
    publish(bytes);
    FileWriter w = pendingVersion();
    byte[] theirs = rewritten(bytes, 1, 15);
    String other = publish(theirs);
    assertThrows(BaseChangedException.class, w::close);
    assertArrayEquals(theirs, readFresh(F.toString()));
    assertEquals(other, id()); // nothing of the version published
    assertEquals(expected("d/" + other + "/0", "d/" + other + "/1", "d/" + other + "/2",
        "d/" + other + "/3"), keys("d/"));
  }

  @Test
  public void aBaseRenamedAwayFailsTypedAndStaysWhole() throws Exception {
    String a = publish(bytes);
    FileWriter w = pendingVersion();
    assertTrue(ns.rename(F, FsPath.parse("/d/g")));
    assertThrows(BaseChangedException.class, w::close);
    assertFalse(ns.probe(F).isPresent());
    assertArrayEquals(bytes, read("/d/g"));
    assertEquals(expected("d/" + a + "/0", "d/" + a + "/1", "d/" + a + "/2", "d/" + a + "/3"),
        keys("d/"));
  }
  /** I4: what a takeover refuses, each before any put. */
  @Test
  public void theWriterRulesRefuseBeforeAnyPut() throws Exception {
    String a = publish(bytes);
    Set<String> before = keys("");
    FileInfo base = ns.getFileInfo(F);

    // A stripe it wrote into; a stripe past the new length, or not whole in it; one past
    // the base's stripes.
    FileWriter w = ns.createVersion(F, base);
    w.setLength(2L * S + 10);
    w.seek(0);
    w.write(bytes, 0, 10);
    assertEquals(stripes(1), w.takeOver(stripes(0, 1, 2, 3, 7)));
    assertThrows(IllegalArgumentException.class, () -> w.setLength(S + 5)); // cuts stripe 1
    w.abort();

    // A stripe not whole in the base: the base is 2 stripes and a bit; the version longer.
    byte[] shortBase = Arrays.copyOf(bytes, 2 * S + 10);
    publish(shortBase);
    FileWriter longer = ns.createVersion(F, ns.getFileInfo(F));
    longer.setLength(LENGTH);
    assertEquals(stripes(0, 1), longer.takeOver(stripes(0, 1, 2)));
    longer.abort();
    publish(bytes);
    a = id();
    before = keys("");
    base = ns.getFileInfo(F);

    // An untaken stripe never written: close fails, nothing published.
    FileWriter gap = ns.createVersion(F, base);
    gap.setLength(LENGTH);
    gap.takeOver(stripes(0, 1));
    gap.seek(3L * S);
    gap.write(bytes, 3 * S, LENGTH - 3 * S);
    IOException missing = assertThrows(IOException.class, gap::close);
    assertTrue(missing.getMessage().contains("stripe 2 was neither taken over nor written whole"),
        missing.getMessage());
    assertEquals(before, keys(""));

    // A write into a taken stripe fails the writer.
    FileWriter into = ns.createVersion(F, base);
    into.setLength(LENGTH);
    into.takeOver(stripes(0, 1, 3));
    into.seek(S);
    assertThrows(IOException.class, () -> {
      into.write(bytes, S, S); // sent now, or buffered and sent at the next seek
      into.seek(2L * S);
    });
    assertThrows(IOException.class, into::close);
    assertEquals(before, keys(""));

    // Taken with the base's length assumed, then a shorter file: refused at close.
    FileWriter shorter = ns.createVersion(F, base);
    assertEquals(stripes(3), shorter.takeOver(stripes(3)));
    shorter.seek(0);
    shorter.write(bytes, 0, 3 * S);
    assertThrows(IOException.class, shorter::close);
    assertEquals(before, keys(""));

    // Only a version takes over.
    FileWriter plain = ns.create(F, true);
    assertThrows(IllegalStateException.class, () -> plain.takeOver(stripes(0)));
    plain.abort();
    assertEquals(before, keys(""));
    assertArrayEquals(bytes, read(F.toString()));
    assertEquals(a, id());
  }

  /**
   * The delete leak (DESIGN §2.4): a delete of a mapped version cut after the name went and
   * before any of its data: its will, once expired, is carried out by the next sweep, and
   * nothing is left (the borrowed keys and their ADOPTED lock included).
   */
  @Test
  public void aDeleteCutBeforeItsDataIsFinishedByTheNextSweep() throws Exception {
    Duration lease = Duration.ofMillis(300);
    ns = new BlobNamespace(faults.store(), ns.options().withWriterLease(lease),
        StoreCallCounters.NONE);
    publish(bytes);
    version(F, rewritten(bytes, 2, 11), stripes(0, 1, 3));
    faults.on(FaultInjectingBlobStore.Op.DELETE).keys("d/.*").always().failBefore();
    assertThrows(IOException.class, () -> ns.delete(F, false));
    faults.clear();
    assertFalse(ns.probe(F).isPresent());
    // A's 0, 1, 3 and its ADOPTED lock; B's 2 and its lock, which holds the will.
    assertEquals(6, keys("d/").size());
    Thread.sleep(lease.toMillis() + 50);
    OrphanSweeper.Report swept = new OrphanSweeper(ns).sweep(Duration.ZERO, false);
    assertEquals(1, swept.willsCarriedOut());
    assertEquals(Set.of(), keys("d/"));
  }

  /** A reader of A open across B reads A's bytes or FileNotFound, never B's. */
  @Test
  public void aReaderOfTheBaseNeverSeesTheNewVersionsBytes() throws Exception {
    publish(bytes);
    FileReader old = ns.open(F);
    byte[] next = rewritten(bytes, 2, 11);
    version(F, next, stripes(0, 1, 3));
    for (int s = 0; s < 4; s++) {
      int n = Math.min(S, LENGTH - s * S);
      ByteBuffer got = ByteBuffer.allocate(n);
      try {
        while (got.hasRemaining()) {
          assertTrue(Futures.await(old.read((long) s * S + got.position(), got)) > 0);
        }
        assertArrayEquals(Arrays.copyOfRange(bytes, s * S, s * S + n), got.array(),
            "stripe " + s);
      } catch (FileNotFoundException gone) {
        assertEquals(2, s, "only the stripe B wrote itself is gone for A's reader");
      }
    }
    assertArrayEquals(next, read(F.toString()));
  }

  /** A sweep after the commit keeps every named key; a sweeper's expired lock stands down. */
  @Test
  public void aSweepKeepsEveryNamedKey() throws Exception {
    String a = publish(bytes);
    // A sweeper that took A's lock and stalled past it: the commit overwrites it.
    Optional<DataLocks.Lock> swept =
        ns.locks().takeForSweeper(a, ns.locks().read(a), Duration.ofMillis(1));
    assertTrue(swept.isPresent());
    Thread.sleep(5);
    byte[] next = rewritten(bytes, 2, 11);
    String b = version(F, next, stripes(0, 1, 3));
    assertEquals(DataLocks.Owner.ADOPTED, ns.locks().read(a).get().owner());
    Set<String> named = keys("d/");
    Thread.sleep(5);
    new OrphanSweeper(ns).sweep(Duration.ZERO, false);
    assertEquals(named, keys("d/"));
    assertArrayEquals(next, read(F.toString()));
    assertTrue(named.contains("d/" + b + "/2"));
  }

  /**
   * A sweep whose data scan met a version's lock before its stripe (the writer at work) and
   * whose names scan met that version already adopted by the next one: the id has no data
   * blob in the data scan and is no record's own id, yet its ADOPTED lock is not spent (the
   * race {@code sweepsDuringTakeoversLoseNoNamedKey} met under load). Before, the sweep
   * removed it: the next sweep could then take the id and delete a stripe a record names.
   */
  @Test
  public void anAdoptionMadeBetweenTheScansIsNotTakenForSpent() throws Exception {
    publish(bytes);
    ExecutorService writer = Executors.newSingleThreadExecutor();
    try {
      // X's writer holds its lock and is held before writing its own stripe 1.
      FaultInjectingBlobStore.Fault stripe =
          faults.on(FaultInjectingBlobStore.Op.WRITE).keys("d/.*/1").pause();
      byte[] vx = rewritten(bytes, 1, 21);
      Future<String> x = writer.submit(() -> version(F, vx, stripes(0, 2, 3)));
      stripe.awaitReached();
      // The sweep lists the data (X's lock, none of X's stripes) and is held before the names.
      FaultInjectingBlobStore.Fault names =
          faults.on(FaultInjectingBlobStore.Op.SCAN).keys("n/.*").pause();
      Future<OrphanSweeper.Report> sweep =
          racer.submit(() -> new OrphanSweeper(ns).sweep(Duration.ZERO, false));
      names.awaitReached();
      stripe.release();
      String xid = x.get(30, TimeUnit.SECONDS);
      // Y takes X's stripe 1 over: X's lock is ADOPTED by Y before the names scan runs.
      byte[] vy = rewritten(vx, 0, 22);
      String y = version(F, vy, stripes(1, 2, 3));
      assertEquals(DataLocks.Owner.ADOPTED, ns.locks().read(xid).get().owner());
      names.release();
      OrphanSweeper.Report report = sweep.get(30, TimeUnit.SECONDS);
      assertEquals(0, report.adoptedLocksRemoved());
      Optional<DataLocks.Lock> lock = ns.locks().read(xid);
      assertTrue(lock.isPresent(), "X's ADOPTED lock removed while Y names d/" + xid + "/1");
      assertEquals(DataLocks.Owner.ADOPTED, lock.get().owner());
      assertEquals(y, lock.get().adopter());
      assertTrue(ns.getFileInfo(F).record().map().ids().contains(xid));
      assertTrue(keys("d/").contains("d/" + xid + "/1"));
      assertArrayEquals(vy, readFresh(F.toString()));
    } finally {
      writer.shutdownNow();
    }
  }

  /**
   * The same race one step later: the names scan ran before X published (it names X
   * nowhere), and Y adopts X before the sweep reads X's lock. The lock then reads ADOPTED
   * by an id no scanned record names: only the listing made after that read (adopt-race
   * review M1: one for all such ids) shows X's stripe, and keeps the lock.
   */
  @Test
  public void anAdoptionMadeAfterTheNamesScanIsNotTakenForSpent() throws Exception {
    String a = publish(bytes);
    ExecutorService writer = Executors.newSingleThreadExecutor();
    try {
      Set<String> before = keys("d/");
      FaultInjectingBlobStore.Fault stripe =
          faults.on(FaultInjectingBlobStore.Op.WRITE).keys("d/.*/1").pause();
      byte[] vx = rewritten(bytes, 1, 31);
      Future<String> x = writer.submit(() -> version(F, vx, stripes(0, 2, 3)));
      stripe.awaitReached();
      String xLock = keys("d/").stream().filter(k -> k.endsWith("/lock"))
          .filter(k -> !before.contains(k) && !k.startsWith("d/" + a + "/"))
          .findFirst().orElseThrow();
      // The sweep lists the data (X's lock only) and the names (F is A), then is held at
      // its read of X's lock.
      FaultInjectingBlobStore.Fault lockRead = faults.on(FaultInjectingBlobStore.Op.READ)
          .keys(java.util.regex.Pattern.quote(xLock)).pause();
      Future<OrphanSweeper.Report> sweep =
          racer.submit(() -> new OrphanSweeper(ns).sweep(Duration.ZERO, false));
      lockRead.awaitReached();
      stripe.release();
      String xid = x.get(30, TimeUnit.SECONDS);
      assertEquals("d/" + xid + "/lock", xLock);
      byte[] vy = rewritten(vx, 0, 32);
      String y = version(F, vy, stripes(1, 2, 3));
      assertEquals(DataLocks.Owner.ADOPTED, ns.locks().read(xid).get().owner());
      lockRead.release();
      OrphanSweeper.Report report = sweep.get(30, TimeUnit.SECONDS);
      assertEquals(0, report.adoptedLocksRemoved());
      Optional<DataLocks.Lock> lock = ns.locks().read(xid);
      assertTrue(lock.isPresent(), "X's ADOPTED lock removed while Y names d/" + xid + "/1");
      assertEquals(y, lock.get().adopter());
      assertTrue(keys("d/").contains("d/" + xid + "/1"));
      assertArrayEquals(vy, readFresh(F.toString()));
    } finally {
      writer.shutdownNow();
    }
  }

  /** Sweeps running all along while versions are published: no named key is lost. */
  @Test
  public void sweepsDuringTakeoversLoseNoNamedKey() throws Exception {
    publish(bytes);
    AtomicBoolean done = new AtomicBoolean();
    Future<?> sweeps = racer.submit(() -> {
      while (!done.get()) {
        new OrphanSweeper(ns).sweep(Duration.ZERO, false);
      }
      return null;
    });
    byte[] now = bytes;
    for (int i = 0; i < 20; i++) {
      int s = i % 4;
      now = rewritten(now, s, 100 + i);
      BitSet take = stripes(0, 1, 2, 3);
      take.clear(s);
      version(F, now, take);
      assertArrayEquals(now, read(F.toString()), "version " + i);
    }
    done.set(true);
    sweeps.get(30, TimeUnit.SECONDS);
    new OrphanSweeper(ns).sweep(Duration.ZERO, false);
    assertArrayEquals(now, read(F.toString()));
    FileRecord last = ns.getFileInfo(F).record();
    Set<String> named = new TreeSet<>();
    for (long s = 0; s < last.stripeCount(); s++) {
      named.add(last.stripeKey(ns.layout(), s));
    }
    last.map().ids().forEach(id -> named.add("d/" + id + "/lock"));
    assertEquals(named, keys("d/"));
  }
}
