package io.blobfs.fuse;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.blobfs.fuse.kernel.Entry;
import io.blobfs.fuse.kernel.FuseSession;
import io.blobfs.fuse.kernel.LowLevelFs;
import io.blobfs.fuse.kernel.Opened;
import io.blobfs.fuse.kernel.SetAttr;
import io.blobfs.namespace.BlobNamespace;
import io.blobfs.namespace.FileReader;
import io.blobfs.namespace.FileWriter;
import io.blobfs.namespace.FsPath;
import io.blobfs.namespace.NamespaceOptions;
import io.blobfs.namespace.StoreCallCounters;
import io.blobfs.store.BlobStore;
import io.blobfs.store.StoreLimits;
import io.blobfs.store.memory.InMemoryBlobStore;
import java.lang.reflect.InvocationHandler;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Shared stripes in the mount (issue 16, {@code wip/shared-stripes/DESIGN.md} §3 and §4
 * step 5, seen writes; {@code fs.blob.fuse.takeover} on): a publication of a file the mount
 * writes sends only the stripes a write or truncate changed since the version before, and
 * names the others; what any client reads is the staged file's bytes, exact. The store
 * counts the data bytes written to it ({@code d/} keys). Over the memory store's
 * transactions here; {@link SharedStripesStepsTest} runs the same without (RADOS's
 * conditional steps), {@link SharedStripesTyrTest} over an in-JVM Týr node.
 */
class SharedStripesTest {
  private static final int S = 64 << 10;
  private static final int RW = FuseSession.O_RDWR;

  @TempDir
  Path staging;
  private BlobStore inner;
  private BlobStore store;
  /** Data bytes written to the store ({@code d/} keys). */
  private final AtomicLong dataBytes = new AtomicLong();
  /** The next this-many data writes fail. */
  private final java.util.concurrent.atomic.AtomicInteger failData =
      new java.util.concurrent.atomic.AtomicInteger();
  /** While set, the next data write waits: {@link #entered} counts down, then {@link #go}. */
  private final AtomicBoolean holdNext = new AtomicBoolean();
  private final CountDownLatch entered = new CountDownLatch(1);
  private final CountDownLatch go = new CountDownLatch(1);
  private BlobNamespace ns;
  private BlobFuseFs fs;

  @BeforeEach
  void setUp() throws Exception {
    inner = inner();
    store = counting(inner);
    ns = namespace();
    fs = mount(0);
  }

  @org.junit.jupiter.api.AfterEach
  void closeStore() throws Exception {
    inner.close();
  }

  /** The store under test. */
  BlobStore inner() throws Exception {
    return new InMemoryBlobStore("stripes", new StoreLimits(200, 1L << 30, Integer.MAX_VALUE));
  }

  private BlobNamespace namespace() {
    // 64 KiB stripes, no inline bytes: every file has stripes
    return new BlobNamespace(store, new NamespaceOptions(S, S, 4 * S, 0, false, 100),
        StoreCallCounters.NONE);
  }

  private BlobFuseFs mount(long earlyChunk) throws Exception {
    return new BlobFuseFs(ns, new BlobFuseFs.Settings(false, 0755, 4096, staging, earlyChunk,
        true));
  }

  private BlobStore counting(BlobStore inner) {
    Class<?>[] shown = interfaces(inner);
    InvocationHandler h = (proxy, m, args) -> {
      if (m.getName().equals("write") && args.length == 3
          && ((String) args[0]).startsWith("d/")) {
        dataBytes.addAndGet(((ByteBuffer) args[2]).remaining());
        if (failData.get() > 0 && failData.decrementAndGet() >= 0) {
          return java.util.concurrent.CompletableFuture.failedFuture(
              new java.io.IOException("injected data write failure"));
        }
        if (holdNext.compareAndSet(true, false)) {
          entered.countDown();
          go.await(30, TimeUnit.SECONDS);
        }
      }
      try {
        return m.invoke(inner, args);
      } catch (InvocationTargetException ex) {
        throw ex.getCause();
      }
    };
    return (BlobStore) Proxy.newProxyInstance(getClass().getClassLoader(), shown, h);
  }

  /** What the store shows the namespace: all its interfaces (transactions among them). */
  Class<?>[] interfaces(BlobStore store) {
    return store.getClass().getInterfaces();
  }

  private static byte[] random(int n, long seed) {
    byte[] b = new byte[n];
    new Random(seed).nextBytes(b);
    return b;
  }

  /** Publishes {@code bytes} at {@code path} through blob:// (a namespace of its own). */
  private void publishElsewhere(String path, byte[] bytes) throws Exception {
    try (FileWriter w = namespace().create(FsPath.parse(path), true)) {
      w.write(bytes, 0, bytes.length);
    }
  }

  /** The file as a fresh namespace over the same store reads it. */
  private byte[] published(String path) throws Exception {
    FileReader r = namespace().open(FsPath.parse(path));
    ByteBuffer b = ByteBuffer.allocate((int) r.length());
    while (b.hasRemaining() && r.read(b.position(), b).get() > 0) { }
    return b.array();
  }

  private long node(String name) throws Exception {
    return fs.lookup(LowLevelFs.ROOT, name).node();
  }

  private static void put(byte[] file, int at, byte[] bytes) {
    System.arraycopy(bytes, 0, file, at, bytes.length);
  }

  /**
   * 8 KiB into stripe 2 of a published 4-stripe file, fsync: exactly that stripe goes to
   * the store, and the version reads whole and exact from another namespace. (Without the
   * change, or with the gate off: the whole file, 4 stripes.)
   */
  @Test
  void anEightKibWriteIntoStripeTwoSendsThatStripeOnly() throws Exception {
    byte[] file = random(4 * S, 1);
    publishElsewhere("/f", file);
    long n = node("f");
    Opened h = fs.open(n, RW);
    byte[] change = random(8 << 10, 2);
    long before = dataBytes.get();
    fs.write(n, h.fh(), 2L * S + 1000, ByteBuffer.wrap(change));
    fs.fsync(n, h.fh(), false);
    assertEquals(S, dataBytes.get() - before, "one stripe sent");
    put(file, 2 * S + 1000, change);
    assertArrayEquals(file, published("/f"));
    fs.release(n, h.fh());
    assertEquals(S, dataBytes.get() - before, "the release after the fsync sends nothing");
    assertArrayEquals(file, published("/f"));
  }

  /**
   * 4 threads each fill their part of one published file, one stripe per round, each
   * fsyncing after its write (fio's jobs on a shared file): every publication sends the
   * stripes changed since the one before, not the whole file, so the store gets less than
   * twice the file (here about once). Without the change each round's publication is the
   * whole file again: 4 rounds, at least 4 times the file. With early upload on (a chunk
   * of one stripe): its writer is a version too.
   */
  @Test
  void fourWritersOfDisjointPartsSendLessThanTwiceTheFile() throws Exception {
    fs = mount(S);
    int threads = 4;
    int rounds = 4;
    int length = threads * rounds * S;
    byte[] file = random(length, 3);
    publishElsewhere("/shared", new byte[length]);
    long n = node("shared");
    long before = dataBytes.get();
    CyclicBarrier round = new CyclicBarrier(threads);
    AtomicReference<Throwable> failed = new AtomicReference<>();
    List<Thread> workers = new ArrayList<>();
    for (int t = 0; t < threads; t++) {
      int part = t;
      workers.add(new Thread(() -> {
        try {
          Opened h = fs.open(n, RW);
          for (int r = 0; r < rounds; r++) {
            round.await(30, TimeUnit.SECONDS);
            int at = (part * rounds + r) * S;
            fs.write(n, h.fh(), at, ByteBuffer.wrap(file, at, S));
            fs.fsync(n, h.fh(), false);
          }
          fs.release(n, h.fh());
        } catch (Throwable e) {
          failed.compareAndSet(null, e);
          round.reset();
        }
      }));
    }
    workers.forEach(Thread::start);
    for (Thread w : workers) {
      w.join(60_000);
    }
    if (failed.get() != null) {
      throw new AssertionError(failed.get());
    }
    long sent = dataBytes.get() - before;
    assertTrue(sent < 2L * length, "sent " + sent + " for a file of " + length);
    assertArrayEquals(file, published("/shared"));
  }

  /**
   * Truncates, shrinking into a stripe and growing past the old end, then fsync: the
   * versions read exact (zeros where the file grew), and the stripes below the new end
   * that no truncate touched are not sent again. (Without the change, every fsync sends
   * the whole file.)
   */
  @Test
  void truncatesShrinkingAndGrowingPublishExactly() throws Exception {
    byte[] file = random(4 * S + 100, 4);
    publishElsewhere("/t", file);
    long n = node("t");
    Opened h = fs.open(n, RW);
    long before = dataBytes.get();
    fs.setattr(n, new SetAttr(h.fh(), S + S / 2, -1, false)); // into stripe 1
    fs.fsync(n, h.fh(), false);
    assertArrayEquals(Arrays.copyOf(file, S + S / 2), published("/t"));
    assertEquals(S / 2, dataBytes.get() - before, "stripe 0 taken over, half of 1 sent");

    before = dataBytes.get();
    fs.setattr(n, new SetAttr(h.fh(), 3L * S, -1, false)); // grows: zeros
    byte[] tail = random(10, 5);
    fs.write(n, h.fh(), 2L * S + 7, ByteBuffer.wrap(tail));
    fs.fsync(n, h.fh(), false);
    byte[] want = Arrays.copyOf(Arrays.copyOf(file, S + S / 2), 3 * S);
    put(want, 2 * S + 7, tail);
    assertArrayEquals(want, published("/t"));
    assertEquals(2L * S, dataBytes.get() - before, "stripe 0 taken over, 1 and 2 sent");
    fs.release(n, h.fh());

    // a closed file, truncated through setattr: the stripes below the cut stay
    before = dataBytes.get();
    fs.setattr(n, new SetAttr(-1, 2L * S + 5, -1, false));
    assertArrayEquals(Arrays.copyOf(want, 2 * S + 5), published("/t"));
    assertEquals(5, dataBytes.get() - before, "stripes 0 and 1 taken over, 5 bytes of 2 sent");
  }

  /**
   * Another client replaces the file behind the mount while it is open here: the version
   * over the old one fails its commit (BaseChangedException, nothing applied) and the
   * publication uploads the staged file whole instead; the bytes are the mount's, as any
   * publication of the mount wins. (Without the change the upload is whole anyway; without
   * the fallback on BaseChangedException the fsync fails with EIO.)
   */
  @Test
  void aFileReplacedBehindTheMountIsUploadedWholeWithTheMountsBytes() throws Exception {
    byte[] file = random(4 * S, 6);
    publishElsewhere("/r", file);
    long n = node("r");
    Opened h = fs.open(n, RW);
    byte[] change = random(8 << 10, 7);
    fs.write(n, h.fh(), 2L * S, ByteBuffer.wrap(change));
    publishElsewhere("/r", random(5 * S, 8)); // blob:// replaces it meanwhile
    long before = dataBytes.get();
    fs.fsync(n, h.fh(), false);
    put(file, 2 * S, change);
    assertArrayEquals(file, published("/r"));
    assertTrue(dataBytes.get() - before >= 4L * S, "whole: " + (dataBytes.get() - before));

    // and the next publication is a version over the one the mount published
    before = dataBytes.get();
    fs.write(n, h.fh(), 0, ByteBuffer.wrap(change));
    fs.fsync(n, h.fh(), false);
    put(file, 0, change);
    assertArrayEquals(file, published("/r"));
    assertEquals(S, dataBytes.get() - before, "stripe 0 only");
    fs.release(n, h.fh());
  }

  /**
   * As above, the version being the background upload's writer (early upload of whole
   * stripes): its commit fails on the replaced base, and the publication uploads whole.
   * (Without the fallback on BaseChangedException the fsync fails with EIO.)
   */
  @Test
  void anEarlyUploadOverAReplacedBaseFallsBackToAWholeUpload() throws Exception {
    fs = mount(S);
    byte[] file = random(4 * S, 13);
    publishElsewhere("/e", file);
    long n = node("e");
    Opened h = fs.open(n, RW);
    byte[] change = random(S, 14);
    long before = dataBytes.get();
    fs.write(n, h.fh(), S, ByteBuffer.wrap(change)); // a whole chunk: goes up early
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
    while (dataBytes.get() - before < S && System.nanoTime() < deadline) {
      Thread.sleep(5);
    }
    assertEquals(S, dataBytes.get() - before, "stripe 1 sent early, alone");
    publishElsewhere("/e", random(3 * S, 15)); // blob:// replaces it meanwhile
    fs.fsync(n, h.fh(), false);
    put(file, S, change);
    assertArrayEquals(file, published("/e"));
    fs.release(n, h.fh());
  }

  /**
   * A new time (utimensat) or a mode (chmod) set on a closed file sends no data: the
   * version names every stripe of the one before. (Without the change, utimensat sends the
   * whole file.)
   */
  @Test
  void utimensatAndChmodOfAClosedFileSendNoData() throws Exception {
    byte[] file = random(4 * S + 123, 9);
    publishElsewhere("/u", file);
    long n = node("u");
    long before = dataBytes.get();
    fs.setattr(n, new SetAttr(-1, -1, 1_000_000_000L, false));
    assertEquals(1_000_000_000L, namespace().getFileInfo(FsPath.parse("/u")).modificationTime());
    fs.setattr(n, new SetAttr(-1, -1, -1, true));
    assertEquals(0, dataBytes.get() - before, "no data sent");
    assertArrayEquals(file, published("/u"));
  }

  /**
   * A write finishing while a publication runs, into a stripe that publication takes
   * over (clean at its snapshot), is not in that version: it is counted as not published,
   * and its descriptor's close publishes it. Here the publication of a write into stripe 1
   * is held in its store write while another descriptor writes into stripe 3. (Without the
   * change's rule in Reading, the write counts as carried: the close returns at once and
   * the store never gets it.)
   */
  @Test
  void aWriteInFlightAtTheSnapshotIsSentByTheNextPublication() throws Exception {
    byte[] file = random(4 * S, 10);
    publishElsewhere("/w", file);
    long n = node("w");
    Opened a = fs.open(n, RW);
    Opened b = fs.open(n, RW);
    byte[] first = random(100, 11);
    byte[] second = random(100, 12);
    fs.write(n, a.fh(), S + 5, ByteBuffer.wrap(first));
    holdNext.set(true);
    AtomicReference<Throwable> failed = new AtomicReference<>();
    Thread fsync = new Thread(() -> {
      try {
        fs.fsync(n, a.fh(), false);
      } catch (Throwable e) {
        failed.set(e);
      }
    });
    fsync.start();
    assertTrue(entered.await(30, TimeUnit.SECONDS), "the publication sends stripe 1");
    fs.write(n, b.fh(), 3L * S + 9, ByteBuffer.wrap(second)); // after the snapshot
    go.countDown();
    fsync.join(30_000);
    if (failed.get() != null) {
      throw new AssertionError(failed.get());
    }
    put(file, S + 5, first);
    byte[] withFirst = file.clone();
    put(file, 3 * S + 9, second);
    byte[] now = published("/w");
    assertTrue(Arrays.equals(withFirst, now) || Arrays.equals(file, now),
        "the first version holds the first write, and the second wholly or not at all");
    fs.flush(n, b.fh()); // close(2) of the second descriptor
    assertArrayEquals(file, published("/w"));
    fs.release(n, a.fh());
    fs.release(n, b.fh());
    assertArrayEquals(file, published("/w"));
  }

  /** The file as this mount shows it now (the staged copy while open). */
  private byte[] mounted(long n, long fh) throws Exception {
    long size = fs.getattr(n).size();
    ByteBuffer b = ByteBuffer.allocate((int) size);
    fs.read(n, fh, 0, b);
    return b.array();
  }

  /** a rename by this mount while the file is open; the next version is at the new name. */
  @Test
  void renameWhileOpenThenFsyncPublishesAVersionAtTheNewName() throws Exception {
    renameWhileOpen(0);
  }

  @Test
  void renameWhileOpenWithEarlyUpload() throws Exception {
    renameWhileOpen(S);
  }

  private void renameWhileOpen(long early) throws Exception {
    fs = mount(early);
    byte[] file = random(4 * S, 21);
    publishElsewhere("/f", file);
    long n = node("f");
    Opened h = fs.open(n, RW);
    byte[] c1 = random(S, 22);
    fs.write(n, h.fh(), 2L * S, ByteBuffer.wrap(c1));
    put(file, 2 * S, c1);
    fs.rename(LowLevelFs.ROOT, "f", LowLevelFs.ROOT, "g", false);
    assertArrayEquals(file, published("/g"));
    byte[] c2 = random(S, 23);
    fs.write(n, h.fh(), S, ByteBuffer.wrap(c2));
    put(file, S, c2);
    fs.fsync(n, h.fh(), false);
    assertArrayEquals(file, published("/g"));
    fs.release(n, h.fh());
    assertArrayEquals(file, published("/g"));
  }

  /**
   * random writes, truncates, replacements behind the mount and fsyncs, one
   * thread: after every fsync the store holds exactly what the mount shows.
   */
  @Test
  void randomSingleThreadNoEarly() throws Exception {
    for (long seed = 1; seed <= 15; seed++) {
      randomOps(seed, 0);
    }
  }

  @Test
  void randomSingleThreadEarly() throws Exception {
    for (long seed = 100; seed <= 115; seed++) {
      randomOps(seed, S);
    }
  }

  private void randomOps(long seed, long early) throws Exception {
    fs = mount(early);
    Random r = new Random(seed);
    String name = "rnd" + seed + "_" + early;
    publishElsewhere("/" + name, random(4 * S + r.nextInt(S), seed));
    long n = node(name);
    Opened h = fs.open(n, RW);
    for (int op = 0; op < 60; op++) {
      int k = r.nextInt(10);
      if (k < 6) {
        int len = 1 + r.nextInt(r.nextBoolean() ? 200 : 2 * S);
        long at = r.nextInt(7 * S);
        fs.write(n, h.fh(), at, ByteBuffer.wrap(random(len, r.nextLong())));
      } else if (k < 7) {
        fs.setattr(n, new SetAttr(h.fh(), r.nextInt(7 * S), -1, false));
      } else if (k < 8 && r.nextInt(4) == 0) {
        publishElsewhere("/" + name, random(r.nextInt(5 * S), r.nextLong()));
        // then a change here (an fsync with nothing new publishes nothing, by design)
        fs.write(n, h.fh(), r.nextInt(5 * S), ByteBuffer.wrap(random(1 + r.nextInt(100), r.nextLong())));
      } else {
        fs.fsync(n, h.fh(), false);
        assertArrayEquals(mounted(n, h.fh()), published("/" + name),
            "seed " + seed + " early " + early + " op " + op);
      }
    }
    fs.fsync(n, h.fh(), false);
    byte[] want = mounted(n, h.fh());
    assertArrayEquals(want, published("/" + name), "seed " + seed + " final fsync");
    fs.release(n, h.fh());
    assertArrayEquals(want, published("/" + name), "seed " + seed + " release");
  }

  /**
   * 4 threads, random writes and fsyncs (and a truncate now and then) on one
   * open file: once all are done, a last fsync makes the store hold exactly what the
   * mount shows; and each thread's own fsync must have published its own writes: checked
   * at the end by the final image only (concurrency).
   */
  @Test
  void randomConcurrentNoEarly() throws Exception {
    for (long seed = 1; seed <= Long.getLong("blobfs.fuse.model.seeds", 8); seed++) {
      randomConcurrent(seed, 0);
    }
  }

  @Test
  void randomConcurrentEarly() throws Exception {
    for (long seed = 50; seed <= 50 + Long.getLong("blobfs.fuse.model.seeds", 8); seed++) {
      randomConcurrent(seed, S);
    }
  }

  private void randomConcurrent(long seed, long early) throws Exception {
    fs = mount(early);
    String name = "conc" + seed + "_" + early;
    publishElsewhere("/" + name, random(8 * S + 77, seed));
    long n = node(name);
    int threads = 4;
    AtomicReference<Throwable> failed = new AtomicReference<>();
    List<Thread> workers = new ArrayList<>();
    Opened main = fs.open(n, RW);
    for (int t = 0; t < threads; t++) {
      long mySeed = seed * 31 + t;
      workers.add(new Thread(() -> {
        try {
          Random r = new Random(mySeed);
          Opened h = fs.open(n, RW);
          for (int op = 0; op < 40; op++) {
            int k = r.nextInt(20);
            if (k < 14) {
              int len = 1 + r.nextInt(r.nextBoolean() ? 300 : S + S / 2);
              long at = r.nextInt(9 * S);
              fs.write(n, h.fh(), at, ByteBuffer.wrap(random(len, r.nextLong())));
            } else if (k < 15) {
              fs.setattr(n, new SetAttr(h.fh(), 4 * S + r.nextInt(5 * S), -1, false));
            } else {
              fs.fsync(n, h.fh(), false);
            }
          }
          fs.flush(n, h.fh());
          fs.release(n, h.fh());
        } catch (Throwable e) {
          failed.compareAndSet(null, e);
        }
      }));
    }
    workers.forEach(Thread::start);
    for (Thread w : workers) {
      w.join(120_000);
    }
    if (failed.get() != null) {
      throw new AssertionError(failed.get());
    }
    byte[] want = mounted(n, main.fh());
    // every writer closed (flush publishes its own writes): the store must hold them all
    assertArrayEquals(want, published("/" + name), "seed " + seed + " early " + early
        + ": after every writer's close");
    fs.fsync(n, main.fh(), false);
    assertArrayEquals(want, published("/" + name), "seed " + seed + " after fsync");
    fs.release(n, main.fh());
    assertArrayEquals(want, published("/" + name), "seed " + seed + " release");
  }

  /**
   * a publication that fails (its data write refused) ORs its dirty set back; a
   * write into another stripe comes in; the next fsync must publish both changes.
   */
  @Test
  void aFailedPublicationKeepsItsStripesDirty() throws Exception {
    for (long early : new long[] {0, S}) {
      fs = mount(early);
      String name = "fail" + early;
      byte[] file = random(4 * S + 50, 31);
      publishElsewhere("/" + name, file);
      long n = node(name);
      Opened h = fs.open(n, RW);
      byte[] c1 = random(300, 32);
      fs.write(n, h.fh(), 2L * S + 10, ByteBuffer.wrap(c1));
      put(file, 2 * S + 10, c1);
      failData.set(1);
      boolean threw = false;
      try {
        fs.fsync(n, h.fh(), false);
      } catch (Exception expected) {
        threw = true;
      }
      failData.set(0);
      assertTrue(threw, "the fsync failed");
      byte[] c2 = random(300, 33);
      fs.write(n, h.fh(), 10, ByteBuffer.wrap(c2));
      put(file, 10, c2);
      fs.fsync(n, h.fh(), false);
      assertArrayEquals(file, published("/" + name), "early " + early);
      fs.release(n, h.fh());
      assertArrayEquals(file, published("/" + name), "early " + early);
    }
  }
}
