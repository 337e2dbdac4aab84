package io.blobfs.rados;

import static org.junit.jupiter.api.Assertions.*;

import io.blobfs.namespace.BlobNamespace;
import io.blobfs.namespace.FileWriter;
import io.blobfs.namespace.FsPath;
import io.blobfs.namespace.NamespaceOptions;
import io.blobfs.namespace.StoreCallCounters;
import io.blobfs.store.PutMode;
import io.blobfs.store.ScanPage;
import io.blobfs.store.StoreOptions;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.DirectoryNotEmptyException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.stream.Stream;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * The librados objects a store holds: listing contexts of probes that stop at the first
 * page are closed, closing a store under scans, reads and writes from several threads
 * gives IOExceptions (never a crash of the JVM), and a connect that fails leaves no
 * handle (threads, sockets) behind.
 */
@ExtendWith(CephClusterExtension.class)
class RadosNativeHandlesIT {
  private static CephTestCluster.Env env;

  @BeforeAll
  static void cluster(CephTestCluster.Env cluster) {
    env = cluster;
  }

  private static Map<String, String> options(String namespace) {
    return CephTestCluster.storeOptions(env, env.pool(), namespace);
  }

  private static RadosBlobStore open(Map<String, String> options) throws IOException {
    return (RadosBlobStore) new RadosBlobStoreProvider().open("t",
        new StoreOptions("fs.blob.store.t.", options));
  }

  private static void write(BlobNamespace ns, String path) throws IOException {
    byte[] b = path.getBytes(StandardCharsets.UTF_8);
    try (FileWriter out = ns.create(FsPath.parse(path), false)) {
      out.write(b, 0, b.length);
    }
  }

  @Test
  void probesThatStopAtTheFirstPageLeaveNoListingOpen() throws Exception {
    try (RadosBlobStore store = open(options("probe-" + System.nanoTime()))) {
      BlobNamespace ns = new BlobNamespace(store,
          new NamespaceOptions(1 << 20, 1 << 20, 1 << 20, 4096, true, 100),
          StoreCallCounters.NONE);
      for (int i = 0; i < 3; i++) {
        write(ns, "/d/f" + i);
      }
      for (int i = 0; i < 50; i++) {
        assertTrue(ns.probe(FsPath.parse("/d")).orElseThrow().isDirectory());
        assertThrows(DirectoryNotEmptyException.class,
            () -> ns.delete(FsPath.parse("/d"), false));
        assertThrows(DirectoryNotEmptyException.class, () -> ns.delete(FsPath.ROOT, false));
      }
      assertEquals(0, store.openListings(), "listing contexts left open by probes");
      // A scan read to its end closes its listing by itself.
      assertEquals(3, ns.list(FsPath.parse("/d")).size());
      assertEquals(0, store.openListings());
    }
  }

  @Test
  void listingsBeyondTheBoundCloseTheOldestWithAClearError() throws Exception {
    try (RadosBlobStore store = open(options("bound-" + System.nanoTime()))) {
      for (int i = 0; i < 3; i++) {
        store.put("d/k" + i, ByteBuffer.wrap(new byte[1]), PutMode.OVERWRITE);
      }
      String first = store.scan("d/", null, 1).nextCursor();
      assertNotNull(first);
      for (int i = 0; i < RadosListings.MAX_OPEN; i++) {
        assertNotNull(store.scan("d/", null, 1).nextCursor());
      }
      assertEquals(RadosListings.MAX_OPEN, store.openListings());
      IOException e = assertThrows(IOException.class, () -> store.scan("d/", first, 1));
      assertTrue(e.getMessage().contains("least recently used"), e.getMessage());
    }
  }

  /** An IOException, directly or as the cause of a failed future. */
  private static void assertIoFailure(Throwable t) {
    Throwable c = t;
    while ((c instanceof CompletionException || c instanceof ExecutionException)
        && c.getCause() != null) {
      c = c.getCause();
    }
    if (!(c instanceof IOException)) {
      throw new AssertionError("expected an IOException, got " + t, t);
    }
  }

  @Test
  void closingUnderScansReadsAndWritesGivesIoExceptions() throws Exception {
    ExecutorService closers = Executors.newSingleThreadExecutor();
    for (int round = 0; round < 5; round++) {
      Map<String, String> o = options("close-" + System.nanoTime());
      RadosBlobStore store = open(o);
      for (int i = 0; i < 20; i++) {
        store.put("d/k" + i, ByteBuffer.wrap(new byte[4096]), PutMode.OVERWRITE);
      }
      ExecutorService pool = Executors.newFixedThreadPool(6);
      AtomicBoolean stop = new AtomicBoolean();
      List<Throwable> untyped = Collections.synchronizedList(new ArrayList<>());
      List<Future<?>> work = new ArrayList<>();
      for (int t = 0; t < 6; t++) {
        int kind = t % 3;
        work.add(pool.submit(() -> {
          for (int i = 0; !stop.get(); i++) {
            try {
              switch (kind) {
                case 0 -> {
                  String cursor = null;
                  do {
                    ScanPage page = store.scan("d/", cursor, 1);
                    cursor = page.nextCursor();
                    if (cursor != null && i % 2 == 0) {
                      // closed by another thread while this one may be using it
                      String c = cursor;
                      closers.submit(() -> store.closeScan(c));
                    }
                  } while (cursor != null);
                }
                case 1 -> store.read("d/k" + (i % 20), 0, ByteBuffer.allocateDirect(4096))
                    .join();
                default -> store.write("d/k" + (i % 20), 0, ByteBuffer.allocate(4096)).join();
              }
            } catch (Throwable e) {
              try {
                assertIoFailure(e);
              } catch (AssertionError notIo) {
                untyped.add(e);
              }
            }
          }
        }));
      }
      Thread.sleep(300 + round * 100);
      store.close();
      Thread.sleep(200);
      stop.set(true);
      for (Future<?> f : work) {
        f.get(60, TimeUnit.SECONDS);
      }
      pool.shutdown();
      assertEquals(List.of(), untyped, "failures that are not IOExceptions");
      // after close every call fails, typed
      assertThrows(IOException.class, () -> store.stat("d/k0"));
      assertThrows(IOException.class, () -> store.scan("d/", null, 1));
      assertIoFailure(assertThrows(CompletionException.class,
          () -> store.read("d/k0", 0, ByteBuffer.allocate(1)).join()));
      assertIoFailure(assertThrows(CompletionException.class,
          () -> store.write("d/k0", 0, ByteBuffer.allocate(1)).join()));
      try (RadosBlobStore cleanup = open(o)) {
        for (int i = 0; i < 20; i++) {
          cleanup.delete("d/k" + i);
        }
      }
    }
    closers.shutdown();
  }

  /**
   * close() returns only once every AIO call it may free the context of has completed:
   * reads in flight when a store closes used to be left running (rados_aio_flush waits
   * for writes only), and a completion arriving after the context was destroyed killed
   * the JVM with SIGSEGV inside librados (CI, 2026-11-25, in the test above).
   */
  @Test
  void closeReturnsOnlyOnceEveryReadInFlightHasCompleted() throws Exception {
    Map<String, String> o = options("drain-" + System.nanoTime());
    int objects = 8;
    int size = 4 << 20;
    try (RadosBlobStore setup = open(o)) {
      for (int i = 0; i < objects; i++) {
        setup.put("d/k" + i, ByteBuffer.wrap(new byte[size]), PutMode.OVERWRITE);
      }
    }
    for (int round = 0; round < 3; round++) {
      RadosBlobStore store = open(o);
      List<java.util.concurrent.CompletableFuture<Integer>> reads = new ArrayList<>();
      for (int i = 0; i < 64; i++) {
        reads.add(store.read("d/k" + (i % objects), 0, ByteBuffer.allocateDirect(size)));
      }
      // 256 MiB asked for: some reads are still inside librados as close() starts, or the
      // round proves nothing
      long inFlight = reads.stream().filter(f -> !f.isDone()).count();
      store.close();
      assertTrue(inFlight > 0, "every read done before close(): round " + round
          + " tests nothing");
      long pending = reads.stream().filter(f -> !f.isDone()).count();
      assertEquals(0, pending, "reads still in flight after close() returned (round "
          + round + ")");
      // completed, not failed: the reads librados had taken ran to their end
      for (java.util.concurrent.CompletableFuture<Integer> r : reads) {
        assertEquals(size, r.join(), "bytes read");
      }
    }
    try (RadosBlobStore cleanup = open(o)) {
      for (int i = 0; i < objects; i++) {
        cleanup.delete("d/k" + i);
      }
    }
  }

  private static long count(String procDir) throws IOException {
    try (Stream<Path> s = Files.list(Path.of(procDir))) {
      return s.count();
    }
  }

  @Test
  void failedConnectsLeaveNoHandleBehind() throws Exception {
    Map<String, String> o = options("x");
    o.remove("conf");
    o.put("conf", "");
    o.put("mon-host", "127.0.0.1:9");
    o.put("connect-timeout", "1s");
    o.remove("keyring");
    o.put("client-id", "admin");
    // one first, so that lazily started JVM threads do not count
    assertThrows(IOException.class, () -> open(o));
    long threads = count("/proc/self/task");
    long fds = count("/proc/self/fd");
    for (int i = 0; i < 8; i++) {
      assertThrows(IOException.class, () -> open(o));
    }
    Thread.sleep(3000); // a connector that was abandoned finishes and shuts down
    long moreThreads = count("/proc/self/task") - threads;
    long moreFds = count("/proc/self/fd") - fds;
    // a librados handle that stays has a dozen threads and several descriptors
    assertTrue(moreThreads < 8, moreThreads + " more threads after 8 failed connects");
    assertTrue(moreFds < 8, moreFds + " more file descriptors after 8 failed connects");
  }
}
