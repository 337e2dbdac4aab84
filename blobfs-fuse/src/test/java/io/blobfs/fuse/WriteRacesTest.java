package io.blobfs.fuse;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.blobfs.fuse.kernel.Entry;
import io.blobfs.fuse.kernel.FuseException;
import io.blobfs.fuse.kernel.FuseSession;
import io.blobfs.fuse.kernel.LowLevelFs;
import io.blobfs.fuse.kernel.Opened;
import io.blobfs.namespace.BlobNamespace;
import io.blobfs.namespace.FileReader;
import io.blobfs.namespace.FsPath;
import io.blobfs.namespace.NamespaceOptions;
import io.blobfs.namespace.StoreCallCounters;
import io.blobfs.store.FaultInjectingBlobStore;
import io.blobfs.store.StoreLimits;
import io.blobfs.store.memory.InMemoryBlobStore;
import java.lang.reflect.Field;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Predicate;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Races of the write path that lost an acknowledged write or made an open for writing
 * start its copy again (the review of the early-upload branch): each test holds a store
 * call at the racing point with a fault, so the interleaving is forced, not timed.
 */
class WriteRacesTest {
  private static final int MIB = 1 << 20;
  @TempDir
  Path staging;
  private final AtomicLong bytesRead = new AtomicLong();

  private BlobNamespace ns(FaultInjectingBlobStore faults) {
    StoreCallCounters counters = (counter, delta) -> {
      if (counter.equals(StoreCallCounters.BYTES_READ)) {
        bytesRead.addAndGet(delta);
      }
    };
    return new BlobNamespace(faults.store(),
        new NamespaceOptions(MIB, MIB, 8 * MIB, 0, false, 100), counters);
  }

  /** A mount over {@code faults}, staging in this test's directory. */
  private BlobFuseFs mount(FaultInjectingBlobStore faults) throws java.io.IOException {
    return new BlobFuseFs(ns(faults), new BlobFuseFs.Settings(false, 0755, 4096, staging));
  }

  private static FaultInjectingBlobStore store() {
    return FaultInjectingBlobStore.over(new InMemoryBlobStore("review",
        new StoreLimits(200, 1L << 30, Integer.MAX_VALUE)));
  }

  private static byte[] filled(int n, int v) {
    byte[] b = new byte[n];
    Arrays.fill(b, (byte) v);
    return b;
  }

  private static byte[] published(BlobNamespace ns, String path) throws Exception {
    FileReader r = ns.open(FsPath.parse(path));
    ByteBuffer b = ByteBuffer.allocate((int) r.length());
    while (b.hasRemaining() && r.read(b.position(), b).get() > 0) { }
    return b.array();
  }

  /** Waits (bounded, 60 s) until {@code t}'s stack satisfies {@code p} while it is blocked/waiting. */
  private static void awaitStack(Thread t, Thread.State state, Predicate<StackTraceElement[]> p)
      throws InterruptedException {
    long deadline = System.nanoTime() + 60_000_000_000L;
    while (System.nanoTime() < deadline) {
      if (t.getState() == state && p.test(t.getStackTrace())) {
        return;
      }
      Thread.sleep(5);
    }
    throw new AssertionError("thread never reached the expected point: "
        + Arrays.toString(t.getStackTrace()));
  }

  /**
   * A write into a chunk the background upload already sent, racing the publication that
   * takes that upload: before the fix, one that called EarlyUpload.writing() after the
   * take cleared `claimed` (so it did not break the upload) and finished before the
   * publication's reading restarted (reading.sent still null, cursor 0) was counted as
   * carried by the version, which skipped the sent chunk (old bytes). `published` then
   * covers that write: its close/fsync returns at once, the file is clean, and the
   * acknowledged bytes are never published.
   */
  @Test
  void aWriteIntoASentChunkJustBeforeTheReadingRestartsIsNotLost() throws Exception {
    FaultInjectingBlobStore faults = store();
    BlobNamespace ns = ns(faults);
    ExecutorService pool = Executors.newCachedThreadPool();
    StagedFile s = StagedFile.empty(staging).uploadEarly(ns, pool, MIB, new WriteStats());
    FsPath path = FsPath.parse("/f");
    byte[] old = filled(MIB, 1);
    byte[] neu = filled(MIB, 2);
    // the background task's store write of chunk 0 is held: it has claimed chunk 0
    FaultInjectingBlobStore.Fault held =
        faults.on(FaultInjectingBlobStore.Op.WRITE).keys("d/.*").pause();
    s.write(0, ByteBuffer.wrap(old), false, path);
    held.awaitReached();

    AtomicReference<Throwable> failed = new AtomicReference<>();
    Thread publisher = new Thread(() -> {
      try {
        s.publish(ns, path); // an fsync of the file
      } catch (Throwable t) {
        failed.set(t);
      }
    });
    publisher.start();
    // the publication took its snapshot and waits in EarlyUpload for the task
    awaitStack(publisher, Thread.State.WAITING, st -> Arrays.stream(st)
        .anyMatch(f -> f.getClassName().endsWith("EarlyUpload")));

    Field f = StagedFile.class.getDeclaredField("lengthLock");
    f.setAccessible(true);
    Object lengthLock = f.get(s);
    long count;
    synchronized (lengthLock) {
      held.release(); // the task sends chunk 0 (old bytes) and stops; finish() takes it
      // the publication's task is done and it waits for lengthLock (to restart its reading;
      // before the fix, with the upload already taken and `claimed` cleared)
      awaitStack(publisher, Thread.State.BLOCKED,
          st -> st[0].getClassName().endsWith("StagedFile"));
      // another descriptor's write(2) of chunk 0 (re-entrant on lengthLock: it runs here,
      // between finish() and restart(), as any thread may)
      count = s.write(0, ByteBuffer.wrap(neu), false, path);
    }
    publisher.join(60_000);
    assertEquals(null, failed.get());
    // that descriptor's close: publish unless its write is already carried
    s.publish(ns, path, count);
    assertArrayEquals(neu, published(ns, "/f"),
        "write " + count + " acknowledged and closed, dirty=" + s.dirty());
    s.discard();
    pool.shutdown();
  }

  /**
   * An open for writing copies the file outside the map and starts
   * the copy again whenever any staged file of the mount, of any other file, left the map
   * meanwhile (stagedRemovals is mount-wide): every release of an unrelated file during
   * the copy costs a whole copy more, and a mount where files close more often than a copy
   * takes never completes the open.
   */
  @Test
  void anOpenForWritingIsNotCopiedAgainBecauseAnotherFileClosed() throws Exception {
    FaultInjectingBlobStore faults = store();
    BlobFuseFs fs = mount(faults);
    byte[] data = filled(8 * MIB, 7);
    Entry big = createClosed(fs, "big", data);
    Entry other = createClosed(fs, "other", new byte[0]);

    FaultInjectingBlobStore.Fault held =
        faults.on(FaultInjectingBlobStore.Op.READ).keys("d/.*").pause();
    bytesRead.set(0);
    CompletableFuture<Opened> opening = CompletableFuture.supplyAsync(() -> open(fs, big));
    held.awaitReached(); // the copy of /big is under way
    // an unrelated file is opened for writing, written and closed meanwhile
    Opened w = fs.open(other.node(), FuseSession.O_RDWR);
    fs.write(other.node(), w.fh(), 0, ByteBuffer.wrap(data, 0, 100));
    fs.release(other.node(), w.fh());
    held.release();
    Opened b = opening.get();
    fs.release(big.node(), b.fh());
    assertTrue(bytesRead.get() < 2L * data.length,
        "bytes read to open /big once: " + bytesRead.get() + " (file " + data.length + ")");
  }

  /**
   * Two processes opening one large file for writing at once: the second waits for the
   * first's copy and shares it, rather than copying the whole file a second time.
   */
  @Test
  void concurrentOpensOfOneFileCopyItOnce() throws Exception {
    FaultInjectingBlobStore faults = store();
    BlobFuseFs fs = mount(faults);
    byte[] data = filled(8 * MIB, 7);
    Entry big = createClosed(fs, "big", data);

    FaultInjectingBlobStore.Fault held =
        faults.on(FaultInjectingBlobStore.Op.READ).keys("d/.*").pause();
    bytesRead.set(0);
    CompletableFuture<Opened> first = CompletableFuture.supplyAsync(() -> open(fs, big));
    held.awaitReached(); // the first open's copy is under way
    AtomicReference<Opened> second = new AtomicReference<>();
    Thread opener = new Thread(() -> second.set(open(fs, big)));
    opener.start();
    // the second open either waits for the first's copy or (before the fix) made its own
    long deadline = System.nanoTime() + 60_000_000_000L;
    while (opener.isAlive() && !(opener.getState() == Thread.State.WAITING
        && Arrays.stream(opener.getStackTrace())
            .anyMatch(e -> e.getClassName().endsWith("CompletableFuture")))) {
      assertTrue(System.nanoTime() < deadline, "the second open never waited nor finished");
      Thread.sleep(5);
    }
    held.release();
    Opened a = first.get();
    opener.join(60_000);
    Opened b = second.get();
    ByteBuffer got = ByteBuffer.allocate(data.length);
    fs.read(big.node(), b.fh(), 0, got);
    fs.release(big.node(), a.fh());
    fs.release(big.node(), b.fh());
    assertArrayEquals(data, Arrays.copyOf(got.array(), got.position()));
    assertTrue(bytesRead.get() < 2L * data.length,
        "bytes read for two opens of /big: " + bytesRead.get() + " (file " + data.length + ")");
  }

  /** Creates {@code name} in the mount's root, writes it in writes of 1 MiB, closes it. */
  private static Entry createClosed(BlobFuseFs fs, String name, byte[] data)
      throws FuseException {
    Opened[] h = new Opened[1];
    Entry e = fs.create(LowLevelFs.ROOT, name, FuseSession.O_RDWR, h);
    for (int off = 0; off < data.length; off += MIB) {
      fs.write(e.node(), h[0].fh(), off,
          ByteBuffer.wrap(data, off, Math.min(MIB, data.length - off)));
    }
    fs.release(e.node(), h[0].fh());
    return e;
  }

  private static Opened open(BlobFuseFs fs, Entry e) {
    try {
      return fs.open(e.node(), FuseSession.O_RDWR);
    } catch (FuseException ex) {
      throw new IllegalStateException(ex);
    }
  }
}
