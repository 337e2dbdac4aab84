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
}
