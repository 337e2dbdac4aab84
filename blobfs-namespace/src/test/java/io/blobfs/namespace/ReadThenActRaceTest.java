package io.blobfs.namespace;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.blobfs.store.BlobStore;
import io.blobfs.store.FaultInjectingBlobStore;
import io.blobfs.store.FaultInjectingBlobStore.Fault;
import io.blobfs.store.FaultInjectingBlobStore.Op;
import io.blobfs.store.Futures;
import io.blobfs.store.StoreLimits;
import io.blobfs.store.TransactionalBlobStore;
import io.blobfs.store.memory.InMemoryBlobStore;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.util.Optional;
import java.util.Random;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Issue "never lose a file", item 2: a namespace mutation acts on a record it read
 * earlier. Each case holds one operation at the exact store call where it acts on what
 * it read, runs the racing operation to completion, then lets the first go on. Whatever
 * each returns, no name may be left referring to data that is gone, and no file that a
 * finished operation published may be lost. Each case runs with transactions (Týr, the
 * in-memory store) and without (RADOS).
 *
 * <p>{@link #openStore}/{@link #closeStore} are the backend hooks: the Týr and RADOS
 * tests run these cases on their stores (RADOS only without transactions).
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS) // commitPaths() is the backend's to choose
public class ReadThenActRaceTest {
  protected static final int STRIPE = 64 << 10;
  private static final FsPath DIR = FsPath.parse("/dir");
  private static final FsPath DIR_F = FsPath.parse("/dir/f");
  private static final FsPath OUT = FsPath.parse("/out");
  private static final FsPath OUT_F = FsPath.parse("/out/f");
  private static final FsPath F = FsPath.parse("/f");
  private static final FsPath G = FsPath.parse("/g");

  private ExecutorService racer;
  protected FaultInjectingBlobStore faults;
  private BlobStore store;
  private BlobNamespace ns;

  /** A fresh, empty store for one case; the in-memory store here. */
  protected BlobStore openStore() throws IOException {
    return new InMemoryBlobStore("race", new StoreLimits(1024, 1L << 30, Integer.MAX_VALUE));
  }

  /** Disposes of the store; a backend sharing a cluster removes what the case wrote. */
  protected void closeStore(BlobStore s) throws IOException {
    s.close();
  }

  /**
   * The commit paths each case runs: with transactions and without (the namespace without
   * transactions is what RADOS gets). A store without transactions has only the second, so
   * it overrides this instead of skipping cases it cannot run.
   */
  protected Stream<Boolean> commitPaths() {
    return Stream.of(true, false);
  }

  private void open(boolean transactional) throws IOException {
    racer = Executors.newSingleThreadExecutor();
    store = openStore();
    if (transactional && !(store instanceof TransactionalBlobStore)) {
      throw new IllegalStateException("commitPaths() offers transactions the store lacks");
    }
    faults = transactional ? FaultInjectingBlobStore.over(store)
        : FaultInjectingBlobStore.over(store, TransactionalBlobStore.class);
    ns = new BlobNamespace(faults.store(), new NamespaceOptions(STRIPE, 16 << 10, 64 << 10,
        1024, false, 100), StoreCallCounters.NONE);
    assertEquals(transactional, ns.hasAtomicRename());
  }

  @AfterEach
  void stopRacer() throws IOException {
    if (faults != null) {
      faults.clear();
    }
    if (racer != null) {
      racer.shutdownNow();
      racer = null;
    }
    if (store != null) {
      BlobStore s = store;
      store = null;
      faults = null;
      closeStore(s);
    }
  }

  private static byte[] random(int n, long seed) {
    byte[] b = new byte[n];
    new Random(seed).nextBytes(b);
    return b;
  }

  private void write(FsPath p, byte[] data) throws IOException {
    FileWriter w = ns.create(p, true);
    w.write(data, 0, data.length);
    w.close();
  }

  /** The whole file at {@code p}, or empty if no name is there; its data must be there. */
  private Optional<byte[]> contentOf(FsPath p) throws IOException {
    if (ns.probe(p).isEmpty()) {
      return Optional.empty();
    }
    FileReader r = ns.open(p);
    ByteBuffer back = ByteBuffer.allocate((int) r.length());
    while (back.hasRemaining()) {
      assertTrue(Futures.await(r.read(back.position(), back)) > 0, "ended early");
    }
    return Optional.of(back.array());
  }

  private void assertHolds(FsPath p, byte[] expected) throws IOException {
    Optional<byte[]> got = contentOf(p);
    assertTrue(got.isPresent(), p + " is gone");
    assertArrayEquals(expected, got.get(), p + " holds other bytes");
  }

  /** What the held operation ended with: its result, or the IOException it threw. */
  private static Object outcome(Future<?> f) throws InterruptedException {
    try {
      return f.get();
    } catch (ExecutionException e) {
      if (e.getCause() instanceof IOException io) {
        return io;
      }
      throw new AssertionError("not a clean answer", e.getCause());
    }
  }

  /**
   * Holds the operation under test where it acts on what it read. Without transactions it
   * acts under the lock of the file it read ({@link DataLocks#takeForReplace}), which the
   * racer would wait for; there the race is between its read and its taking that lock, so
   * it is held at its first read of the lock of {@code file}'s data, and reads the name
   * again once it holds it.
   */
  private Fault holdBeforeActing(boolean transactional,
      java.util.function.Supplier<Fault> withTransactions, FsPath file) throws IOException {
    if (transactional) {
      return withTransactions.get();
    }
    String id = ns.probe(file).orElseThrow().record().fileId();
    return faults.on(Op.READ).keys("d/" + id + "/lock").pause();
  }

  /** (A) A recursive delete scans and reads; a rename moves a file out; the delete acts. */
  @ParameterizedTest(name = "transactional={0}")
  @MethodSource("commitPaths")
  void aFileRenamedOutOfADirectoryBeingDeletedKeepsItsData(boolean transactional)
      throws Exception {
    open(transactional);
    byte[] f = random(3 * STRIPE + 7, 1);
    write(DIR_F, f);
    write(FsPath.parse("/dir/g"), random(2 * STRIPE, 2));
    ns.mkdirs(OUT);
    Fault held = holdBeforeActing(transactional, () -> faults.on(Op.COMMIT).keys("n/dir/.*").pause(),
        DIR_F);

    Future<Boolean> delete = racer.submit(() -> ns.delete(DIR, true));
    held.awaitReached();
    assertTrue(ns.rename(DIR_F, OUT_F));
    held.release();
    Object deleted = outcome(delete);

    assertHolds(OUT_F, f);
    assertEquals(Boolean.TRUE, deleted, "the directory was deleted, less what left it");
    assertTrue(ns.probe(DIR).isEmpty(), "the directory is gone");
  }

  /** (B) A rename reads R0; an overwrite publishes R1 and deletes R0's data; the rename acts. */
  @ParameterizedTest(name = "transactional={0}")
  @MethodSource("commitPaths")
  void aRenameRacingAnOverwriteLosesNeitherFile(boolean transactional) throws Exception {
    open(transactional);
    byte[] r0 = random(3 * STRIPE, 3);
    byte[] r1 = random(2 * STRIPE + 11, 4);
    write(F, r0);
    Fault held = holdBeforeActing(transactional, () -> faults.on(Op.COMMIT).keys("n/g").pause(), F);

    Future<Boolean> rename = racer.submit(() -> ns.rename(F, G));
    held.awaitReached();
    write(F, r1);
    held.release();
    Object renamed = outcome(rename);

    // The overwrite finished first, so the rename found R0 replaced: it must not move R0.
    assertHolds(F, r1);
    assertTrue(contentOf(G).isEmpty(), "R0, replaced, is not renamed: " + renamed);
    assertTrue(renamed instanceof IOException, "a lost race is reported: " + renamed);
  }

  /** An overwrite reads the old record R0; a rename moves R0 away; the overwrite publishes. */
  @ParameterizedTest(name = "transactional={0}")
  @MethodSource("commitPaths")
  void anOverwriteDoesNotDeleteTheDataOfAFileRenamedAwayMeanwhile(boolean transactional)
      throws Exception {
    open(transactional);
    byte[] r0 = random(3 * STRIPE, 5);
    byte[] r1 = random(STRIPE + 3, 6);
    write(F, r0);
    FileWriter w = ns.create(F, true);
    w.write(r1, 0, r1.length);
    Fault held = holdBeforeActing(transactional, () -> faults.on(Op.PUT).keys("n/f").pause(), F);

    Future<Void> close = racer.submit(() -> {
      w.close();
      return null;
    });
    held.awaitReached();
    assertTrue(ns.rename(F, G));
    held.release();
    assertEquals(null, outcome(close));

    assertHolds(G, r0);
    assertHolds(F, r1);
  }

  /** A delete reads R0; a rename moves it away; the delete acts on the name and the data. */
  @ParameterizedTest(name = "transactional={0}")
  @MethodSource("commitPaths")
  void aFileRenamedAwayWhileBeingDeletedKeepsItsData(boolean transactional) throws Exception {
    open(transactional);
    byte[] r0 = random(3 * STRIPE + 1, 7);
    write(F, r0);
    Fault held = holdBeforeActing(transactional, () -> faults.on(Op.DELETE).keys("n/f").pause(), F);

    Future<Boolean> delete = racer.submit(() -> ns.delete(F, false));
    held.awaitReached();
    assertTrue(ns.rename(F, G));
    held.release();
    Object deleted = outcome(delete);

    assertHolds(G, r0);
    assertEquals(Boolean.FALSE, deleted, "nothing was at /f when the delete acted");
  }
}
