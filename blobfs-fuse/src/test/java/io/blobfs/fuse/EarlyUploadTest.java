package io.blobfs.fuse;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.blobfs.fuse.kernel.Entry;
import io.blobfs.fuse.kernel.Errno;
import io.blobfs.fuse.kernel.FuseException;
import io.blobfs.fuse.kernel.LowLevelFs;
import io.blobfs.fuse.kernel.Opened;
import io.blobfs.fuse.kernel.FuseSession;
import io.blobfs.fuse.kernel.SetAttr;
import io.blobfs.namespace.BlobNamespace;
import io.blobfs.namespace.FileReader;
import io.blobfs.namespace.FsPath;
import io.blobfs.namespace.NamespaceOptions;
import io.blobfs.namespace.StoreCallCounters;
import io.blobfs.store.BlobStore;
import io.blobfs.store.FaultInjectingBlobStore;
import io.blobfs.store.PutMode;
import io.blobfs.store.StoreFullException;
import io.blobfs.store.StoreLimits;
import io.blobfs.store.memory.InMemoryBlobStore;
import java.io.IOException;
import java.lang.reflect.InvocationHandler;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.HashSet;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.logging.Handler;
import java.util.logging.Level;
import java.util.logging.LogRecord;
import java.util.logging.Logger;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Files written through the mount start uploading their next version while they are
 * written, so a close uploads the rest, not the whole file; and whatever happens to the
 * file meanwhile (overwrites of uploaded bytes, truncates, renames) the published bytes
 * are the staged file's.
 */
class EarlyUploadTest {
  private static final int MIB = 1 << 20;
  private static final int RW = FuseSession.O_RDWR;

  @TempDir
  Path staging;
  private final AtomicLong bytesWritten = new AtomicLong();
  private FaultInjectingBlobStore faults;
  /** While set, the store refuses every data write as a full pool does. */
  private final AtomicBoolean full = new AtomicBoolean();
  /** The data keys of the writes refused for lack of space. */
  private final List<String> refused = new CopyOnWriteArrayList<>();
  /** Data bytes sent to each writer (its keys' common prefix), writers in order of first use. */
  private final Map<String, AtomicLong> sentTo = Collections.synchronizedMap(new LinkedHashMap<>());
  private BlobNamespace ns;
  private BlobFuseFs fs;
  private byte[] data;

  @BeforeEach
  void setUp() throws Exception {
    StoreCallCounters counters = (counter, delta) -> {
      if (counter.equals(StoreCallCounters.BYTES_WRITTEN)) {
        bytesWritten.addAndGet(delta);
      }
    };
    faults = FaultInjectingBlobStore.over(new InMemoryBlobStore("early",
        new StoreLimits(200, 1L << 30, Integer.MAX_VALUE)));
    ns = new BlobNamespace(fullable(faults.store()),
        new NamespaceOptions(MIB, MIB, 8 * MIB, 0, false, 100), counters);
    fs = new BlobFuseFs(ns, new BlobFuseFs.Settings(false, 0755, 4096, staging));
    data = new byte[20 * MIB + 777];
    new Random(11).nextBytes(data);
  }

  private byte[] published(String path) throws Exception {
    FileReader r = ns.open(FsPath.parse(path));
    ByteBuffer b = ByteBuffer.allocate((int) r.length());
    while (b.hasRemaining() && r.read(b.position(), b).get() > 0) { }
    return b.array();
  }

  /** Writes {@code data} front to back in 1 MiB writes, as fio and cp do. */
  private void writeAll(Entry e, Opened h) throws Exception {
    for (int off = 0; off < data.length; off += MIB) {
      fs.write(e.node(), h.fh(), off,
          ByteBuffer.wrap(data, off, Math.min(MIB, data.length - off)));
    }
  }

  /** Waits (bounded) until the background has uploaded at least {@code bytes}. */
  /**
   * Writes the file whole, waits until 16 MiB of it went up before its close, closes it,
   * and checks it is published whole with each byte uploaded once (plus records): no
   * second, whole upload at the close.
   */
  private void writeAllUploadedEarlyAndOnce(Entry e, Opened h, String path)
      throws Exception {
    writeAll(e, h);
    awaitUploaded(16L * MIB);
    assertTrue(bytesWritten.get() >= 16L * MIB, "uploaded before close: " + bytesWritten.get());
    fs.flush(e.node(), h.fh());
    assertArrayEquals(data, published(path));
    assertTrue(bytesWritten.get() < data.length + MIB, "uploaded in all: " + bytesWritten.get());
    fs.release(e.node(), h.fh());
  }

  private void awaitUploaded(long bytes) throws InterruptedException {
    awaitUntil(() -> bytesWritten.get() >= bytes);
  }

  /**
   * Waits until {@code done}, at most a minute: the callers check it after, and a loaded
   * machine (two cores at a load of 30) can take seconds where an idle one takes ms.
   */
  private static void awaitUntil(java.util.function.BooleanSupplier done)
      throws InterruptedException {
    long deadline = System.nanoTime() + java.util.concurrent.TimeUnit.SECONDS.toNanos(60);
    while (!done.getAsBoolean() && System.nanoTime() < deadline) {
      Thread.sleep(10);
    }
  }

  @Test
  void aFileWrittenFrontToBackIsMostlyUploadedBeforeItsCloseAndOnlyOnce() throws Exception {
    Opened[] h = new Opened[1];
    Entry e = create("seq", h);
    writeAllUploadedEarlyAndOnce(e, h[0], "/seq");
  }

  @Test
  void anOverwriteOfUploadedBytesStillPublishesTheStagedBytes() throws Exception {
    Opened[] h = new Opened[1];
    Entry e = create("over", h);
    writeAll(e, h[0]);
    awaitUploaded(16L * MIB);
    byte[] patch = new byte[5000];
    Arrays.fill(patch, (byte) 7);
    fs.write(e.node(), h[0].fh(), 1234, ByteBuffer.wrap(patch));
    System.arraycopy(patch, 0, data, 1234, patch.length);
    fs.flush(e.node(), h[0].fh());
    assertArrayEquals(data, published("/over"));
    fs.release(e.node(), h[0].fh());
  }

  @Test
  void aTruncateAfterAnUploadPublishesTheTruncatedFile() throws Exception {
    Opened[] h = new Opened[1];
    Entry e = create("cut", h);
    writeAll(e, h[0]);
    awaitUploaded(16L * MIB);
    fs.setattr(e.node(), new SetAttr(h[0].fh(), 3L * MIB + 5, -1, false));
    fs.flush(e.node(), h[0].fh());
    assertArrayEquals(Arrays.copyOf(data, 3 * MIB + 5), published("/cut"));
    // grown again past the old end: a hole of zeros, then new bytes
    fs.write(e.node(), h[0].fh(), 12L * MIB, ByteBuffer.wrap(data, 0, 100));
    fs.flush(e.node(), h[0].fh());
    byte[] want = new byte[12 * MIB + 100];
    System.arraycopy(data, 0, want, 0, 3 * MIB + 5);
    System.arraycopy(data, 0, want, 12 * MIB, 100);
    assertArrayEquals(want, published("/cut"));
    fs.release(e.node(), h[0].fh());
  }

  @Test
  void aTruncateThroughARangeWrittenAheadOfTheRestKeepsItsStart() throws Exception {
    Opened[] h = new Opened[1];
    Entry e = create("gap", h);
    fs.write(e.node(), h[0].fh(), 0, ByteBuffer.wrap(data, 0, MIB));
    fs.write(e.node(), h[0].fh(), 5L * MIB, ByteBuffer.wrap(data, 5 * MIB, 5 * MIB));
    fs.setattr(e.node(), new SetAttr(h[0].fh(), 7L * MIB, -1, false)); // through [5, 10) MiB
    fs.write(e.node(), h[0].fh(), MIB, ByteBuffer.wrap(data, MIB, 4 * MIB)); // the gap
    fs.write(e.node(), h[0].fh(), 7L * MIB, ByteBuffer.wrap(data, 7 * MIB, 13 * MIB));
    fs.flush(e.node(), h[0].fh());
    assertArrayEquals(Arrays.copyOf(data, 20 * MIB), published("/gap"));
    fs.release(e.node(), h[0].fh());
  }

  @Test
  void aRenameDuringTheUploadPublishesUnderTheNewNameOnly() throws Exception {
    Opened[] h = new Opened[1];
    Entry e = create("old", h);
    writeAll(e, h[0]);
    awaitUploaded(8L * MIB);
    fs.rename(LowLevelFs.ROOT, "old", LowLevelFs.ROOT, "new", false);
    fs.write(e.node(), h[0].fh(), data.length, ByteBuffer.wrap(data, 0, 10));
    fs.flush(e.node(), h[0].fh());
    byte[] want = Arrays.copyOf(data, data.length + 10);
    System.arraycopy(data, 0, want, data.length, 10);
    assertArrayEquals(want, published("/new"));
    assertTrue(ns.probe(FsPath.parse("/old")).isEmpty(), "nothing under the old name");
    fs.release(e.node(), h[0].fh());
  }

  @Test
  void fourWritersFillingTheirQuartersPublishTheWholeFile() throws Exception {
    Opened[] h = new Opened[1];
    Entry e = create("n1", h);
    Opened[] w = new Opened[4];
    for (int i = 0; i < 4; i++) {
      w[i] = fs.open(e.node(), RW);
    }
    int quarter = data.length / 4;
    for (int off = 0; off < quarter; off += 64 << 10) { // interleaved, as 4 processes
      for (int i = 0; i < 4; i++) {
        int at = i * quarter + off;
        int end = i == 3 ? data.length : (i + 1) * quarter;
        int n = Math.min(64 << 10, Math.min(end - at, quarter - off));
        fs.write(e.node(), w[i].fh(), at, ByteBuffer.wrap(data, at, n));
      }
    }
    fs.write(e.node(), w[3].fh(), 4L * quarter,
        ByteBuffer.wrap(data, 4 * quarter, data.length - 4 * quarter));
    for (Opened o : w) {
      fs.fsync(e.node(), o.fh(), false);
      assertArrayEquals(data, published("/n1"));
    }
    for (Opened o : w) {
      fs.release(e.node(), o.fh());
    }
    fs.release(e.node(), h[0].fh());
    assertEquals(data.length, published("/n1").length);
  }

  /**
   * N processes writing one file, one of them fsyncing: the others' writes go on while its
   * publication uploads (before, they stood still until it ended, so their own fsyncs came
   * one after another, each a whole upload). The version carries every write finished
   * when the fsync began; the writes racing it are published whole by the next fsync.
   */
  @Test
  void writesGoOnWhileAnotherDescriptorsFsyncPublishes() throws Exception {
    Opened[] h = new Opened[1];
    Entry e = create("race", h);
    Opened a = fs.open(e.node(), RW);
    Opened b = fs.open(e.node(), RW);
    int half = data.length / 2;
    fs.write(e.node(), a.fh(), 0, ByteBuffer.wrap(data, 0, half));
    fs.write(e.node(), b.fh(), half, ByteBuffer.wrap(data, half, MIB));
    byte[] atFsync = Arrays.copyOf(data, half + MIB);
    // the publication's record commit is held: its upload is under way
    FaultInjectingBlobStore.Fault held = faults.on(FaultInjectingBlobStore.Op.PUT,
        FaultInjectingBlobStore.Op.COMMIT).keys("n/race").pause();
    CompletableFuture<Void> fsyncA = CompletableFuture.runAsync(() -> {
      try {
        fs.fsync(e.node(), a.fh(), false);
      } catch (FuseException ex) {
        throw new IllegalStateException(ex);
      }
    });
    held.awaitReached();
    // these writes take milliseconds; the bound only keeps a hang from stalling the build
    assertTimeoutPreemptively(Duration.ofSeconds(60), () -> {
      for (int off = half + MIB; off < data.length; off += MIB) {
        fs.write(e.node(), b.fh(), off,
            ByteBuffer.wrap(data, off, Math.min(MIB, data.length - off)));
      }
    }, "writes of another descriptor waited for the fsync's publication");
    // before, the writes waited for the held commit (let go only by the fault's own 30 s
    // limit), so the fsync was over by the time they returned
    assertTrue(!fsyncA.isDone(), "the writes waited for the fsync's publication to end");
    held.release();
    fsyncA.get();
    assertArrayEquals(atFsync, published("/race"),
        "the fsynced version: every write finished when it began, none racing it");
    fs.fsync(e.node(), b.fh(), false); // the racing writes are still to publish
    assertArrayEquals(data, published("/race"));
    for (Opened o : new Opened[] {a, b, h[0]}) {
      fs.release(e.node(), o.fh());
    }
    assertArrayEquals(data, published("/race"));
  }

  /** A close whose writes an fsync already published does not wait for another's upload. */
  @Test
  void aCloseAfterItsOwnFsyncDoesNotWaitForAnotherPublication() throws Exception {
    Opened[] h = new Opened[1];
    Entry e = create("closing", h);
    Opened a = fs.open(e.node(), RW);
    Opened b = fs.open(e.node(), RW);
    fs.write(e.node(), a.fh(), 0, ByteBuffer.wrap(data, 0, MIB));
    fs.fsync(e.node(), a.fh(), false);
    fs.write(e.node(), b.fh(), MIB, ByteBuffer.wrap(data, MIB, MIB));
    FaultInjectingBlobStore.Fault held = faults.on(FaultInjectingBlobStore.Op.PUT,
        FaultInjectingBlobStore.Op.COMMIT).keys("n/closing").pause();
    CompletableFuture<Void> fsyncB = CompletableFuture.runAsync(() -> {
      try {
        fs.fsync(e.node(), b.fh(), false);
      } catch (FuseException ex) {
        throw new IllegalStateException(ex);
      }
    });
    held.awaitReached();
    assertTimeoutPreemptively(Duration.ofSeconds(60), () -> fs.flush(e.node(), a.fh()));
    // before, the close waited for the held commit (let go only by the fault's 30 s limit)
    assertTrue(!fsyncB.isDone(), "the close waited for the other descriptor's publication");
    held.release();
    fsyncB.get();
    assertArrayEquals(Arrays.copyOf(data, 2 * MIB), published("/closing"));
    for (Opened o : new Opened[] {a, b, h[0]}) {
      fs.release(e.node(), o.fh());
    }
  }

  /**
   * A truncate of a file whose publication is under way waits for that publication (it
   * never shrinks the file under an upload reading it), but only that file's calls wait:
   * before, it waited holding the mount's map of open files, so an open of any other
   * file stalled until the upload ended.
   */
  @Test
  void aTruncateWaitingForItsFilesUploadStallsNoOtherFile() throws Exception {
    Opened[] other = new Opened[1];
    Entry o = create("other", other);
    fs.write(o.node(), other[0].fh(), 0, ByteBuffer.wrap(data, 0, 100));
    fs.release(o.node(), other[0].fh());
    Opened[] h = new Opened[1];
    Entry e = create("uploading", h);
    fs.write(e.node(), h[0].fh(), 0, ByteBuffer.wrap(data, 0, 2 * MIB));
    FaultInjectingBlobStore.Fault held = faults.on(FaultInjectingBlobStore.Op.PUT,
        FaultInjectingBlobStore.Op.COMMIT).keys("n/uploading").pause();
    CompletableFuture<Void> fsync = CompletableFuture.runAsync(() -> {
      try {
        fs.fsync(e.node(), h[0].fh(), false);
      } catch (FuseException ex) {
        throw new IllegalStateException(ex);
      }
    });
    held.awaitReached();
    Thread truncate = new Thread(() -> {
      try {
        fs.setattr(e.node(), new SetAttr(h[0].fh(), MIB, -1, false));
      } catch (FuseException ex) {
        throw new IllegalStateException(ex);
      }
    });
    truncate.start();
    awaitUntil(() -> truncate.getState() == Thread.State.WAITING); // parked on the upload
    assertEquals(Thread.State.WAITING, truncate.getState());
    assertTimeoutPreemptively(Duration.ofSeconds(60), () -> {
      Opened r = fs.open(o.node(), 0 /* O_RDONLY */);
      ByteBuffer got = ByteBuffer.allocate(100);
      fs.read(o.node(), r.fh(), 0, got);
      assertArrayEquals(Arrays.copyOf(data, 100), got.array());
      fs.release(o.node(), r.fh());
    });
    // before, the open waited for the held commit (let go only by the fault's time limit)
    assertTrue(truncate.isAlive(), "the open of another file waited for this upload");
    held.release();
    fsync.get();
    truncate.join(60_000);
    assertTrue(!truncate.isAlive());
    fs.flush(e.node(), h[0].fh());
    assertArrayEquals(Arrays.copyOf(data, MIB), published("/uploading"));
    fs.release(e.node(), h[0].fh());
  }

  /**
   * An fsync while another descriptor appends faster than the store takes the bytes: the
   * background upload stops at the version's end, and the fsync sends only the rest of
   * it. Before, the task kept claiming the appended bytes for as long as they came (the
   * fsync waited all that time), then its writer, past the version, was thrown away and
   * the whole file sent again.
   */
  @Test
  void anFsyncWhileAnotherDescriptorAppendsUploadsTheVersionOnce() throws Exception {
    fs = new BlobFuseFs(ns, new BlobFuseFs.Settings(false, 0755, 4096, staging, MIB));
    int cap = 64 * MIB; // where the appends stop if nothing else stops them
    byte[] want = new byte[cap];
    for (int off = 0; off < cap; off += data.length) {
      System.arraycopy(data, 0, want, off, Math.min(data.length, cap - off));
    }
    Opened[] h = new Opened[1];
    Entry e = create("appended", h);
    Opened a = fs.open(e.node(), RW);
    Opened b = fs.open(e.node(), RW);
    for (int off = 0; off < 10 * MIB; off += MIB) {
      fs.write(e.node(), a.fh(), off, ByteBuffer.wrap(want, off, MIB));
    }
    // the store takes the data slower than the appends come (20 ms a stripe)
    faults.on(FaultInjectingBlobStore.Op.WRITE).always().delay(Duration.ofMillis(20));
    awaitUploaded(MIB); // the early writer is the first to receive data
    // the fsync's record is held: B stops appending once the data is sent
    FaultInjectingBlobStore.Fault held = faults.on(FaultInjectingBlobStore.Op.PUT,
        FaultInjectingBlobStore.Op.COMMIT).keys("n/appended").pause();
    AtomicBoolean stop = new AtomicBoolean();
    CompletableFuture<Integer> appends = CompletableFuture.supplyAsync(() -> {
      int off = 10 * MIB;
      try {
        for (; off < cap && !stop.get(); off += MIB) {
          fs.write(e.node(), b.fh(), off, ByteBuffer.wrap(want, off, MIB));
        }
      } catch (FuseException ex) {
        throw new IllegalStateException(ex);
      }
      return off;
    });
    CompletableFuture<Void> fsyncA = CompletableFuture.runAsync(() -> {
      try {
        fs.fsync(e.node(), a.fh(), false);
      } catch (FuseException ex) {
        throw new IllegalStateException(ex);
      }
    });
    held.awaitReached();
    stop.set(true);
    held.release();
    fsyncA.get();
    int appended = appends.get();
    byte[] version = published("/appended");
    assertTrue(version.length >= 10 * MIB && version.length <= appended,
        "the version's length: " + version.length);
    assertArrayEquals(Arrays.copyOf(want, version.length), version);
    // the early writer carried the version: its bytes and no more (before: every byte
    // appended until the cap, then thrown away, the whole file sent again by another)
    Map.Entry<String, AtomicLong> first;
    synchronized (sentTo) {
      first = sentTo.entrySet().iterator().next();
    }
    assertEquals(version.length, first.getValue().get(), "bytes sent to the early writer");
    faults.clear();
    for (Opened o : new Opened[] {a, b, h[0]}) {
      fs.release(e.node(), o.fh());
    }
    assertArrayEquals(Arrays.copyOf(want, appended), published("/appended"));
  }

  @Test
  void aFailedCommitIsReportedNotUploadedAgain() throws Exception {
    Opened[] h = new Opened[1];
    Entry e = create("commitfail", h);
    writeAll(e, h[0]);
    awaitUploaded(16L * MIB);
    // the record's put fails and nothing was applied: the publication's own failure, which
    // a second, whole upload through another writer would only repeat
    FaultInjectingBlobStore.Fault put = faults.on(FaultInjectingBlobStore.Op.PUT,
        FaultInjectingBlobStore.Op.COMMIT).keys("n/commitfail").failBefore();
    FuseException err = assertThrows(FuseException.class, () -> fs.flush(e.node(), h[0].fh()));
    assertEquals(Errno.EIO, err.errno());
    assertEquals(1, put.fired());
    assertTrue(bytesWritten.get() < data.length + MIB, "uploaded in all: " + bytesWritten.get());
    assertEquals(0, published("/commitfail").length, "the version created empty is still the file");
    fs.flush(e.node(), h[0].fh()); // the close after: the changes are still to publish
    assertArrayEquals(data, published("/commitfail"));
    fs.release(e.node(), h[0].fh());
  }

  @Test
  void aFullStoreIsReportedWithoutASecondWholeUpload() throws Exception {
    Opened[] h = new Opened[1];
    Entry e = create("full", h);
    writeAll(e, h[0]);
    awaitUploaded(16L * MIB);
    full.set(true);
    FuseException err = assertThrows(FuseException.class, () -> fs.flush(e.node(), h[0].fh()));
    assertTrue(causedBy(err, StoreFullException.class), "reported: " + err);
    Set<String> writers = new HashSet<>();
    for (String key : refused) {
      writers.add(key.substring(0, key.lastIndexOf('/')));
    }
    assertEquals(1, writers.size(), "refused writes of one writer only: " + refused);
    full.set(false);
    fs.flush(e.node(), h[0].fh());
    assertArrayEquals(data, published("/full"));
    fs.release(e.node(), h[0].fh());
  }

  @Test
  void aFailedWholeUploadAfterAFailedEarlyWriterCarriesTheFirstError() throws Exception {
    Opened[] h = new Opened[1];
    Entry e = create("twice", h);
    writeAll(e, h[0]);
    awaitUploaded(16L * MIB);
    // the early writer's rest fails (its own writes: a whole upload may do better), then
    // the whole upload fails too: both errors reach the caller
    faults.on(FaultInjectingBlobStore.Op.WRITE).always().failBefore();
    FuseException err = assertThrows(FuseException.class, () -> fs.flush(e.node(), h[0].fh()));
    Throwable thrown = err.getCause();
    assertEquals(1, thrown.getSuppressed().length, "the early writer's error: " + thrown);
    assertTrue(thrown.getSuppressed()[0] instanceof IOException);
    faults.clear();
    fs.release(e.node(), h[0].fh());
    assertArrayEquals(data, published("/twice"));
  }

  @Test
  void aFailingBackgroundUploadIsLoggedOncePerVersion() throws Exception {
    List<LogRecord> warnings = new CopyOnWriteArrayList<>();
    Logger log = Logger.getLogger(EarlyUpload.class.getName());
    Handler capture = new Handler() {
      @Override
      public void publish(LogRecord r) {
        if (r.getLevel().intValue() >= Level.WARNING.intValue()) {
          warnings.add(r);
        }
      }

      @Override
      public void flush() { }

      @Override
      public void close() { }
    };
    log.addHandler(capture);
    try {
      Opened[] h = new Opened[1];
      Entry e = create("bg", h);
      FaultInjectingBlobStore.Fault down =
          faults.on(FaultInjectingBlobStore.Op.WRITE).always().failBefore();
      writeAll(e, h[0]); // 20 MiB: two background rounds at least, each failing
      awaitUntil(() -> down.fired() > 0);
      assertTrue(down.fired() > 0, "the background upload ran");
      faults.clear();
      fs.flush(e.node(), h[0].fh()); // no data lost: the publication writes the whole file
      assertArrayEquals(data, published("/bg"));
      assertEquals(1, warnings.size(), "one warning for this version: " + warnings);
      assertTrue(warnings.get(0).getMessage().contains("/bg"), warnings.get(0).getMessage());
      fs.release(e.node(), h[0].fh());
    } finally {
      log.removeHandler(capture);
    }
  }

  @Test
  void aCloseDoesNotWaitForAnUploadStillQueuedBehindOtherFiles() throws Exception {
    // the upload pool is busy with other files: this file's task sits in the queue
    List<Runnable> queue = new CopyOnWriteArrayList<>();
    StagedFile s = StagedFile.empty(staging).uploadEarly(ns, queue::add, MIB, new WriteStats());
    FsPath path = FsPath.parse("/queued");
    s.write(0, ByteBuffer.wrap(data, 0, 4 * MIB), false, path);
    assertEquals(1, queue.size(), "a background upload was queued");
    // the publication withdraws it and uploads the file itself, instead of waiting (for
    // ever: the queue never runs; the bound is generous for a loaded machine)
    assertTimeoutPreemptively(Duration.ofSeconds(60), () -> s.publish(ns, path));
    assertArrayEquals(Arrays.copyOf(data, 4 * MIB), published("/queued"));
    long written = bytesWritten.get();
    queue.get(0).run(); // when the pool reaches it at last, it does nothing
    assertEquals(written, bytesWritten.get(), "the withdrawn task uploaded nothing");
    // and the next version's writes start an upload of their own
    s.write(4L * MIB, ByteBuffer.wrap(data, 4 * MIB, 2 * MIB), false, path);
    assertEquals(2, queue.size(), "the next version's upload was queued");
    queue.get(1).run();
    assertTrue(bytesWritten.get() >= written + 6L * MIB, "uploaded in the background");
    s.publish(ns, path);
    assertArrayEquals(Arrays.copyOf(data, 6 * MIB), published("/queued"));
    s.discard();
  }

  @Test
  void anEarlyWriterWhoseLeaseWasTakenIsReplacedByAWholeUpload() throws Exception {
    Opened[] h = new Opened[1];
    Entry e = create("idle", h);
    writeAll(e, h[0]);
    awaitUploaded(16L * MIB);
    // the file sat open longer than the writer lease: the orphan sweeper took the early
    // writer's lock (a new version of it), so its renewal before publishing fails
    for (String key : faults.store().scan("d/", null, 1000).keys()) {
      if (key.endsWith("/lock")) {
        faults.store().put(key, ByteBuffer.wrap(new byte[] {1}), PutMode.OVERWRITE);
      }
    }
    long before = bytesWritten.get();
    fs.flush(e.node(), h[0].fh());
    assertArrayEquals(data, published("/idle"));
    // the early stripes are given up: the whole file went up once more
    assertTrue(bytesWritten.get() - before >= data.length,
        "uploaded at close: " + (bytesWritten.get() - before));
    fs.release(e.node(), h[0].fh());
  }

  /**
   * N processes each filling their part of one file (fio's jobs on a shared file, MPI-IO's
   * N-to-1): every part goes up in the background while it is written, not only the
   * file's start. Before, only the written prefix did, so with the first quarter still
   * unwritten nothing went up and the fsync sent the whole file (this test waited its
   * minute for 12 MiB that never came).
   */
  @Test
  void partsWrittenAheadOfTheFilesStartGoUpWhileTheyAreWritten() throws Exception {
    fs = new BlobFuseFs(ns, new BlobFuseFs.Settings(false, 0755, 4096, staging, MIB));
    Opened[] h = new Opened[1];
    Entry e = create("quarters", h);
    Opened[] w = new Opened[4];
    for (int i = 0; i < 4; i++) {
      w[i] = fs.open(e.node(), RW);
    }
    int quarter = data.length / 4; // not chunk-aligned: the edges go up at the fsync
    for (int i = 3; i >= 1; i--) {
      int end = i == 3 ? data.length : (i + 1) * quarter;
      for (int off = i * quarter; off < end; off += MIB) {
        fs.write(e.node(), w[i].fh(), off, ByteBuffer.wrap(data, off, Math.min(MIB, end - off)));
      }
    }
    awaitUploaded(12L * MIB); // 14 whole chunks lie in [quarter, end)
    assertTrue(bytesWritten.get() >= 12L * MIB, "uploaded before the first quarter: "
        + bytesWritten.get());
    for (int off = 0; off < quarter; off += MIB) {
      fs.write(e.node(), w[0].fh(), off, ByteBuffer.wrap(data, off, Math.min(MIB, quarter - off)));
    }
    for (Opened o : w) {
      fs.fsync(e.node(), o.fh(), false);
    }
    assertArrayEquals(data, published("/quarters"));
    assertEquals(1, fs.writeStats().publications(), "one version carried every writer's part");
    assertTrue(bytesWritten.get() < data.length + MIB, "each byte went up once: "
        + bytesWritten.get());
    for (Opened o : w) {
      fs.release(e.node(), o.fh());
    }
    fs.release(e.node(), h[0].fh());
    assertArrayEquals(data, published("/quarters"));
  }

  /**
   * A program that sizes its file first (ftruncate, as fio lays a file out) and then
   * writes it keeps its background upload: nothing had been claimed past the new size.
   * Before, any truncate threw the upload away, and the close sent the whole file.
   */
  @Test
  void aTruncateThatSizesTheFileFirstKeepsTheBackgroundUpload() throws Exception {
    Opened[] h = new Opened[1];
    Entry e = create("sized", h);
    fs.setattr(e.node(), new SetAttr(h[0].fh(), data.length, -1, false));
    writeAllUploadedEarlyAndOnce(e, h[0], "/sized");
  }

  /**
   * Another descriptor's write that finishes while a publication reads the file, in bytes
   * the publication has still to read, is in that version whole and counts as published:
   * its own fsync right after returns without a second version. Before, a version carried
   * only what had finished when it began, and N processes fsyncing their parts of one file
   * a moment apart made N versions, each the whole file uploaded again. A write behind
   * what was read is not carried: the next fsync publishes it.
   */
  @ParameterizedTest(name = "second publication held at stripe {0}")
  @ValueSource(ints = {2, 0}) // 0: the one stripe a version sends with takeover on
  void aWriteFinishingAheadOfAPublicationsReadingGoesUpWithIt(int heldAgain) throws Exception {
    Opened[] h = new Opened[1];
    Entry e = create("ahead", h);
    Opened a = fs.open(e.node(), RW);
    Opened b = fs.open(e.node(), RW);
    byte[] want = Arrays.copyOf(data, 6 * MIB);
    fs.write(e.node(), a.fh(), 0, ByteBuffer.wrap(want, 0, 5 * MIB));
    fs.write(e.node(), b.fh(), 5L * MIB, ByteBuffer.wrap(new byte[MIB])); // sized first
    // the publication is held sending its third stripe: from 3 MiB on nothing is read yet
    FaultInjectingBlobStore.Fault held = faults.on(FaultInjectingBlobStore.Op.WRITE)
        .keys("d/.*/2").pause();
    CompletableFuture<Void> fsyncA = CompletableFuture.runAsync(() -> {
      try {
        fs.fsync(e.node(), a.fh(), false);
      } catch (FuseException ex) {
        throw new IllegalStateException(ex);
      }
    });
    held.awaitReached();
    fs.write(e.node(), b.fh(), 5L * MIB, ByteBuffer.wrap(want, 5 * MIB, MIB)); // ahead
    held.release();
    fsyncA.get();
    assertArrayEquals(want, published("/ahead"), "b's write is in a's version");
    assertEquals(1, fs.writeStats().publications());
    fs.fsync(e.node(), b.fh(), false);
    assertEquals(1, fs.writeStats().publications(), "b's fsync found its write published");

    // behind the reading: not carried
    FaultInjectingBlobStore.Fault again = faults.on(FaultInjectingBlobStore.Op.WRITE)
        .keys("d/.*/" + heldAgain).pause();
    fs.write(e.node(), a.fh(), 0, ByteBuffer.wrap(new byte[10])); // a change to publish
    CompletableFuture<Void> fsyncA2 = CompletableFuture.runAsync(() -> {
      try {
        fs.fsync(e.node(), a.fh(), false);
      } catch (FuseException ex) {
        throw new IllegalStateException(ex);
      }
    });
    again.awaitReached();
    byte[] patch = new byte[100];
    Arrays.fill(patch, (byte) 9);
    fs.write(e.node(), b.fh(), 1000, ByteBuffer.wrap(patch));
    again.release();
    fsyncA2.get();
    assertEquals(2, fs.writeStats().publications());
    fs.fsync(e.node(), b.fh(), false);
    assertEquals(3, fs.writeStats().publications(), "b's write behind the reading went up next");
    Arrays.fill(want, 0, 10, (byte) 0);
    System.arraycopy(patch, 0, want, 1000, patch.length);
    assertArrayEquals(want, published("/ahead"));
    for (Opened o : new Opened[] {a, b, h[0]}) {
      fs.release(e.node(), o.fh());
    }
  }

  /**
   * An open for writing of a published file copies it into the staging directory; the
   * copy runs outside the mount's map of open files, so other files' writes, reads and
   * opens go on meanwhile. Before, every one of them waited for the copy (here, for the
   * held store read, until the fault's own 30 s limit failed the open).
   */
  @Test
  void anOpenCopyingALargeFileStallsNoOtherFile() throws Exception {
    Opened[] h = new Opened[1];
    Entry big = create("big", h);
    writeAll(big, h[0]);
    fs.release(big.node(), h[0].fh()); // published, no longer staged
    Opened[] o = new Opened[1];
    Entry other = create("other", o);
    FaultInjectingBlobStore.Fault held = faults.on(FaultInjectingBlobStore.Op.READ)
        .keys("d/.*").pause();
    CompletableFuture<Opened> opening = CompletableFuture.supplyAsync(() -> {
      try {
        return fs.open(big.node(), RW);
      } catch (FuseException ex) {
        throw new IllegalStateException(ex);
      }
    });
    held.awaitReached(); // the copy is under way
    assertTimeoutPreemptively(Duration.ofSeconds(60), () -> {
      fs.write(other.node(), o[0].fh(), 0, ByteBuffer.wrap(data, 0, 100));
      ByteBuffer got = ByteBuffer.allocate(100);
      fs.read(other.node(), o[0].fh(), 0, got);
      assertArrayEquals(Arrays.copyOf(data, 100), got.array());
      Opened r = fs.open(other.node(), 0 /* O_RDONLY */);
      fs.release(other.node(), r.fh());
    });
    assertTrue(!opening.isDone(), "the other file's calls waited for the copy");
    held.release();
    Opened w = opening.get();
    ByteBuffer got = ByteBuffer.allocate(MIB);
    fs.read(big.node(), w.fh(), 5L * MIB, got);
    assertArrayEquals(Arrays.copyOfRange(data, 5 * MIB, 6 * MIB), got.array());
    fs.release(big.node(), w.fh());
    fs.release(other.node(), o[0].fh());
    assertArrayEquals(data, published("/big"));
    assertArrayEquals(Arrays.copyOf(data, 100), published("/other"));
  }

  /** {@code store}, refusing data writes while {@link #full} is set. */
  private BlobStore fullable(BlobStore store) {
    InvocationHandler h = (proxy, m, args) -> {
      if (full.get() && m.getName().equals("write") && args.length == 3
          && ((String) args[0]).startsWith("d/")) {
        refused.add((String) args[0]);
        return CompletableFuture.failedFuture(new StoreFullException("the pool is full"));
      }
      if (m.getName().equals("write") && args.length == 3
          && ((String) args[0]).startsWith("d/")) {
        String key = (String) args[0];
        sentTo.computeIfAbsent(key.substring(0, key.lastIndexOf('/')), k -> new AtomicLong())
            .addAndGet(((ByteBuffer) args[2]).remaining());
      }
      try {
        return m.invoke(store, args);
      } catch (InvocationTargetException ex) {
        throw ex.getCause();
      }
    };
    return (BlobStore) Proxy.newProxyInstance(getClass().getClassLoader(),
        store.getClass().getInterfaces(), h);
  }

  private static boolean causedBy(Throwable e, Class<? extends Throwable> type) {
    for (Throwable t = e; t != null; t = t.getCause()) {
      if (type.isInstance(t)) {
        return true;
      }
    }
    return false;
  }

  /**
   * An unlinked file's last release drops its staged copy, which waits for its background
   * upload under way: other files' writes go on meanwhile. Before, the drop ran under the
   * monitor every read and write of the mount takes, and a write to any file waited for
   * the other file's store calls to end.
   */
  @Test
  void droppingAnUnlinkedFileWhoseUploadIsHeldStopsNoWriteToAnotherFile() throws Exception {
    Opened[] o = new Opened[1];
    Entry other = create("other", o);
    fs.write(other.node(), o[0].fh(), 0, ByteBuffer.wrap(data, 0, 100)); // below a chunk
    FaultInjectingBlobStore.Fault held = faults.on(FaultInjectingBlobStore.Op.WRITE)
        .keys("d/.*").pause();
    Opened[] h = new Opened[1];
    Entry doomed = create("doomed", h);
    writeAll(doomed, h[0]); // whole chunks: the background upload starts, and is held
    held.awaitReached();
    fs.unlink(LowLevelFs.ROOT, "doomed");
    CompletableFuture<Void> release = CompletableFuture.runAsync(() -> {
      try {
        fs.release(doomed.node(), h[0].fh()); // waits for the held upload, then aborts it
      } catch (FuseException ex) {
        throw new IllegalStateException(ex);
      }
    });
    Thread releasing = awaitThreadIn("discard");
    CompletableFuture<Void> write = CompletableFuture.runAsync(() -> {
      try {
        fs.write(other.node(), o[0].fh(), 100, ByteBuffer.wrap(data, 100, 100));
      } catch (FuseException ex) {
        throw new IllegalStateException(ex);
      }
    });
    try {
      // Before, the write waited for the monitor until the drop ended: only when the held
      // upload gave up (the pause's own 30 s limit), and the drop no longer waited then
      write.get(60, java.util.concurrent.TimeUnit.SECONDS);
      assertTrue(isIn(releasing, "discard"), "the write ended while the drop still waits");
    } finally {
      held.release();
    }
    release.get(60, java.util.concurrent.TimeUnit.SECONDS);
    fs.flush(other.node(), o[0].fh());
    fs.release(other.node(), o[0].fh());
    assertArrayEquals(Arrays.copyOf(data, 200), published("/other"));
    assertThrows(java.io.FileNotFoundException.class, () -> ns.open(FsPath.parse("/doomed")));
  }

  /**
   * The thread whose stack is in a method {@code method} of StagedFile, waiting (a minute
   * at most): where the release under test waits, found by its stack, not by a sleep.
   */
  private static Thread awaitThreadIn(String method) throws InterruptedException {
    long deadline = System.nanoTime() + java.util.concurrent.TimeUnit.SECONDS.toNanos(60);
    while (System.nanoTime() < deadline) {
      for (Map.Entry<Thread, StackTraceElement[]> t : Thread.getAllStackTraces().entrySet()) {
        Thread.State state = t.getKey().getState();
        if (state != Thread.State.WAITING && state != Thread.State.TIMED_WAITING) {
          continue;
        }
        if (inStaged(t.getValue(), method)) {
          return t.getKey();
        }
      }
      Thread.sleep(5);
    }
    throw new AssertionError("no thread waiting in StagedFile." + method + " within 60 s");
  }

  private static boolean isIn(Thread t, String method) {
    return inStaged(t.getStackTrace(), method);
  }

  private static boolean inStaged(StackTraceElement[] stack, String method) {
    for (StackTraceElement f : stack) {
      if (f.getClassName().equals(StagedFile.class.getName())
          && f.getMethodName().equals(method)) {
        return true;
      }
    }
    return false;
  }

  private Entry create(String name, Opened[] h) throws Exception {
    return fs.create(LowLevelFs.ROOT, name, RW, h);
  }
}
