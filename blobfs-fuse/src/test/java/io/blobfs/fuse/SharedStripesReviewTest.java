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
class SharedStripesReviewTest {
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
  /** Review: the next this-many data writes fail. */
  private final java.util.concurrent.atomic.AtomicInteger failData =
      new java.util.concurrent.atomic.AtomicInteger();
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
              new java.io.IOException("review: injected data write failure"));
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

  /** The file as this mount shows it now (the staged copy while open). */
  private byte[] mounted(long n, long fh) throws Exception {
    long size = fs.getattr(n).size();
    ByteBuffer b = ByteBuffer.allocate((int) size);
    fs.read(n, fh, 0, b);
    return b.array();
  }

  /** Review: a rename by this mount while the file is open; the next version is at the new name. */
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
    long before = dataBytes.get();
    fs.write(n, h.fh(), S, ByteBuffer.wrap(c2));
    put(file, S, c2);
    fs.fsync(n, h.fh(), false);
    assertArrayEquals(file, published("/g"));
    System.out.println("REVIEW rename early=" + early + ": fsync after rename sent "
        + (dataBytes.get() - before));
    fs.release(n, h.fh());
    assertArrayEquals(file, published("/g"));
  }

  /**
   * Review: random writes, truncates, replacements behind the mount and fsyncs, one
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
   * Review: 4 threads, random writes and fsyncs (and a truncate now and then) on one
   * open file: once all are done, a last fsync makes the store hold exactly what the
   * mount shows; and each thread's own fsync must have published its own writes: checked
   * at the end by the final image only (concurrency).
   */
  @Test
  void randomConcurrentNoEarly() throws Exception {
    for (long seed = 1; seed <= Long.getLong("review.seeds", 8); seed++) {
      randomConcurrent(seed, 0);
    }
  }

  @Test
  void randomConcurrentEarly() throws Exception {
    for (long seed = 50; seed <= 50 + Long.getLong("review.seeds", 8); seed++) {
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
   * Review: a publication that fails (its data write refused) ORs its dirty set back; a
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
