package io.blobfs.rados;

import static org.junit.jupiter.api.Assertions.*;

import io.blobfs.store.BlobAlreadyExistsException;
import io.blobfs.store.BlobNotFoundException;
import io.blobfs.store.BlobStore;
import io.blobfs.store.Futures;
import io.blobfs.store.PutMode;
import io.blobfs.store.ScanPage;
import io.blobfs.store.StoreOptions;
import io.blobfs.store.StoreUnavailableException;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.AccessDeniedException;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/** The RADOS store SPI against the real single-OSD cluster, as client.blobfs. */
@ExtendWith(CephClusterExtension.class)
class RadosBlobStoreIT {
  private static CephTestCluster.Env env;
  private BlobStore store;
  private String namespace;

  @BeforeAll
  static void cluster(CephTestCluster.Env cluster) {
    env = cluster;
  }

  private static Map<String, String> options(String pool, String namespace) {
    Map<String, String> o = new HashMap<>();
    o.put("pool", pool);
    o.put("conf", env.conf());
    o.put("namespace", namespace);
    o.put("client-id", "blobfs");
    o.put("keyring", env.clientKeyring());
    o.put("op-timeout", "10s");
    o.put("connect-timeout", "10s");
    return o;
  }

  private static BlobStore open(Map<String, String> options) throws IOException {
    return new RadosBlobStoreProvider().open("t", new StoreOptions("fs.blob.store.t.", options));
  }

  @BeforeEach
  void setUp() throws IOException {
    namespace = "spi-" + System.nanoTime();
    store = open(options(env.pool(), namespace));
  }

  @AfterEach
  void tearDown() throws IOException {
    // Leave the pool as found: remove what this test wrote in its namespace.
    String cursor = null;
    do {
      ScanPage page = store.scan("", cursor, 1000);
      for (String k : page.keys()) {
        store.delete(k);
      }
      cursor = page.nextCursor();
    } while (cursor != null);
    store.close();
  }

  private static byte[] random(int n, long seed) {
    byte[] b = new byte[n];
    new Random(seed).nextBytes(b);
    return b;
  }

  @Test
  void parallelRangedWritesReadBackExactly() throws IOException {
    byte[] data = random(10 << 20, 1);
    int piece = 1 << 20;
    List<CompletableFuture<Void>> writes = new ArrayList<>();
    for (int off = 0; off < data.length; off += piece) {
      writes.add(store.write("d/file/0", off, ByteBuffer.wrap(data, off, piece)));
    }
    for (CompletableFuture<Void> w : writes) {
      Futures.await(w);
    }
    assertEquals(data.length, store.stat("d/file/0").size());
    assertTrue(store.stat("d/file/0").modifiedMillis() > 0);
    assertArrayEquals(data, store.readFully("d/file/0", 0, data.length));
    byte[] mid = store.readFully("d/file/0", 3 * piece - 7, 100);
    assertArrayEquals(java.util.Arrays.copyOfRange(data, 3 * piece - 7, 3 * piece + 93), mid);
  }

  @Test
  void endOfBlobAndMissingBlobs() throws IOException {
    Futures.await(store.write("d/x/0", 0, ByteBuffer.wrap(random(100, 2))));
    assertEquals(-1, Futures.await(store.read("d/x/0", 100, ByteBuffer.allocate(10))));
    assertEquals(40, Futures.await(store.read("d/x/0", 60, ByteBuffer.allocate(100))));
    CompletionException e = assertThrows(CompletionException.class,
        () -> store.read("d/missing/0", 0, ByteBuffer.allocate(1)).join());
    assertInstanceOf(BlobNotFoundException.class, e.getCause());
    assertFalse(store.stat("d/missing/0").exists());
    assertFalse(store.delete("d/missing/0"));
    assertTrue(store.delete("d/x/0"));
    assertFalse(store.stat("d/x/0").exists());
  }

  @Test
  void exclusivePutAndOverwrite() throws IOException {
    store.put("n/f", ByteBuffer.wrap("one".getBytes(StandardCharsets.UTF_8)), PutMode.CREATE);
    assertThrows(BlobAlreadyExistsException.class, () -> store.put("n/f",
        ByteBuffer.wrap("two".getBytes(StandardCharsets.UTF_8)), PutMode.CREATE));
    assertArrayEquals("one".getBytes(StandardCharsets.UTF_8), store.readFully("n/f", 0, 3));
    store.put("n/f", ByteBuffer.wrap("three".getBytes(StandardCharsets.UTF_8)),
        PutMode.OVERWRITE);
    assertEquals(5, store.stat("n/f").size());
    store.truncate("n/f", 2);
    assertArrayEquals("th".getBytes(StandardCharsets.UTF_8), store.readFully("n/f", 0, 2));
  }

  @Test
  void scansPageThroughOneNamespaceOrAll() throws IOException {
    Set<String> names = new HashSet<>();
    for (int i = 0; i < 120; i++) {
      String k = "n/dir/f" + i;
      store.put(k, ByteBuffer.wrap(new byte[] {1}), PutMode.OVERWRITE);
      names.add(k);
    }
    store.put("n/other", ByteBuffer.wrap(new byte[] {1}), PutMode.OVERWRITE);
    store.put("d/abc/0", ByteBuffer.wrap(new byte[] {1}), PutMode.OVERWRITE);
    assertEquals(names, scanAll("n/dir/", 50));
    Set<String> all = new HashSet<>(names);
    all.add("n/other");
    all.add("d/abc/0");
    assertEquals(all, scanAll("", 1000));
    assertEquals(Set.of("d/abc/0"), scanAll("d/", 7));
  }

  private Set<String> scanAll(String prefix, int page) throws IOException {
    Set<String> seen = new HashSet<>();
    String cursor = null;
    do {
      ScanPage p = store.scan(prefix, cursor, page);
      assertTrue(p.keys().size() <= page);
      for (String k : p.keys()) {
        assertTrue(seen.add(k), "listed twice: " + k);
      }
      cursor = p.nextCursor();
    } while (cursor != null);
    return seen;
  }

  @Test
  void nonAsciiKeysRoundTrip() throws IOException {
    String key = "n/données/ファイル/😀 ü";
    store.put(key, ByteBuffer.wrap(new byte[] {42}), PutMode.CREATE);
    assertTrue(store.stat(key).exists());
    assertEquals(Set.of(key), scanAll("n/données/", 10));
    assertArrayEquals(new byte[] {42}, store.readFully(key, 0, 1));
  }

  @Test
  void aPoolOutsideTheClientsCapsIsRefusedClearly() throws IOException {
    try (BlobStore other = open(options(env.otherPool(), namespace))) {
      CompletionException e = assertThrows(CompletionException.class, () ->
          other.write("d/x/0", 0, ByteBuffer.wrap(new byte[] {1})).join());
      assertInstanceOf(AccessDeniedException.class, e.getCause(), e.getCause().toString());
      assertThrows(AccessDeniedException.class,
          () -> other.put("n/x", ByteBuffer.wrap(new byte[] {1}), PutMode.OVERWRITE));
    }
  }

  @Test
  void aMissingPoolFailsAtOpen() {
    IOException e = assertThrows(IOException.class,
        () -> open(options("no-such-pool-" + System.nanoTime(), namespace)));
    assertTrue(e.getMessage().contains("no-such-pool"), e.getMessage());
  }

  @Test
  void anUnreachableMonitorFailsWithinTheTimeout() {
    Map<String, String> o = options(env.pool(), namespace);
    o.put("mon-host", "127.0.0.1:9");
    o.put("connect-timeout", "3s");
    long start = System.nanoTime();
    IOException e = assertThrows(IOException.class, () -> open(o));
    long seconds = (System.nanoTime() - start) / 1_000_000_000L;
    assertTrue(seconds < 20, "took " + seconds + " s");
    assertInstanceOf(StoreUnavailableException.class, e, e.toString());
  }
}
