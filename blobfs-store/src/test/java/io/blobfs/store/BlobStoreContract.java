package io.blobfs.store;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.HashSet;
import java.util.List;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The store SPI's semantics, stated once: every backend's store test extends this class
 * and only says how to open and dispose of a store. A backend that is also a
 * {@link TransactionalBlobStore} extends {@link TransactionalBlobStoreContract} instead.
 *
 * <p>Keys follow the namespace's shapes ({@code n/...} for records, {@code d/...} for
 * data), because a backend may treat the first segment specially (RADOS makes it the
 * object's namespace). Each test gets a fresh, empty store: a scan with the empty prefix
 * sees only what the test wrote.
 */
public abstract class BlobStoreContract {
  protected BlobStore store;

  /** A fresh store in which no key exists yet. */
  protected abstract BlobStore openStore() throws IOException;

  /** Disposes of the store; backends sharing a cluster remove what the test wrote. */
  protected void closeStore(BlobStore s) throws IOException {
    s.close();
  }

  @BeforeEach
  final void openTheStore() throws IOException {
    store = openStore();
  }

  @AfterEach
  final void closeTheStore() throws IOException {
    closeStore(store);
  }

  protected static byte[] random(int n, long seed) {
    byte[] b = new byte[n];
    new Random(seed).nextBytes(b);
    return b;
  }

  protected static ByteBuffer utf8(String s) {
    return ByteBuffer.wrap(s.getBytes(StandardCharsets.UTF_8));
  }

  /** Every key under {@code prefix}, paging by {@code page}; fails on a key seen twice. */
  protected Set<String> scanAll(String prefix, int page) throws IOException {
    Set<String> seen = new HashSet<>();
    String cursor = null;
    do {
      ScanPage p = store.scan(prefix, cursor, page);
      assertTrue(p.keys().size() <= page, "page of " + p.keys().size() + " > " + page);
      for (String k : p.keys()) {
        assertTrue(k.startsWith(prefix), "outside the prefix: " + k);
        assertTrue(seen.add(k), "listed twice: " + k);
      }
      cursor = p.nextCursor();
    } while (cursor != null);
    return seen;
  }

  @Test
  void rangedWritesInFlightTogetherReadBackExactly() throws IOException {
    byte[] data = random(3 * (1 << 20) + 123, 1);
    // Odd-sized pieces straddling any power-of-two boundary, submitted out of order and
    // all in flight at once, as a writer with several stripe writes outstanding does.
    int piece = (1 << 20) / 3 + 17;
    List<Integer> offsets = new ArrayList<>();
    for (int off = 0; off < data.length; off += piece) {
      offsets.add(off);
    }
    Collections.shuffle(offsets, new Random(3));
    List<CompletableFuture<Void>> writes = new ArrayList<>();
    for (int off : offsets) {
      writes.add(store.write("d/f/0", off,
          ByteBuffer.wrap(data, off, Math.min(piece, data.length - off))));
    }
    for (CompletableFuture<Void> w : writes) {
      Futures.await(w);
    }
    BlobInfo info = store.stat("d/f/0");
    assertTrue(info.exists());
    assertEquals(data.length, info.size());
    assertTrue(info.modifiedMillis() > 0, "modification time " + info.modifiedMillis());
    assertArrayEquals(data, store.readFully("d/f/0", 0, data.length));
    int mid = 2 * (1 << 20) - 5;
    assertArrayEquals(Arrays.copyOfRange(data, mid, mid + 10), store.readFully("d/f/0", mid, 10));
  }

  /**
   * A range written a second time, once the first writes were acknowledged, holds the
   * second bytes, whole and only there, and a blob written so reads back as one: the FUSE
   * mount sends a chunk of a passed-through file again when it changed after its early
   * upload (StagedFile.checkSent), over the same data blob, before the record is committed.
   */
  @Test
  void aSecondWriteOfARangeReplacesTheFirstsBytes() throws IOException {
    int mib = 1 << 20;
    byte[] first = random(3 * mib, 21);
    List<CompletableFuture<Void>> writes = new ArrayList<>();
    for (int off = 0; off < first.length; off += mib / 2) {
      writes.add(store.write("d/again/0", off, ByteBuffer.wrap(first, off, mib / 2)));
    }
    for (CompletableFuture<Void> w : writes) {
      Futures.await(w);
    }
    // a second send of [1 MiB - 7, 2 MiB + 5): straddling the first writes' boundaries
    byte[] second = random(mib + 12, 22);
    int at = mib - 7;
    writes.clear();
    for (int off = 0; off < second.length; off += 300_001) {
      writes.add(store.write("d/again/0", at + off,
          ByteBuffer.wrap(second, off, Math.min(300_001, second.length - off))));
    }
    for (CompletableFuture<Void> w : writes) {
      Futures.await(w);
    }
    byte[] want = first.clone();
    System.arraycopy(second, 0, want, at, second.length);
    assertEquals(want.length, store.stat("d/again/0").size());
    assertArrayEquals(want, store.readFully("d/again/0", 0, want.length));
  }

  @Test
  void writePastTheEndZeroFillsAndReadsStopAtTheEnd() throws IOException {
    Futures.await(store.write("d/k/0", 5, utf8("xy")));
    assertEquals(7, store.stat("d/k/0").size());
    assertArrayEquals(new byte[] {0, 0, 0, 0, 0, 'x', 'y'}, store.readFully("d/k/0", 0, 7));
    assertEquals(-1, Futures.await(store.read("d/k/0", 7, ByteBuffer.allocate(4))));
    assertEquals(-1, Futures.await(store.read("d/k/0", 100, ByteBuffer.allocate(4))));
    ByteBuffer tail = ByteBuffer.allocate(4);
    assertEquals(1, Futures.await(store.read("d/k/0", 6, tail)));
    assertEquals('y', tail.get(0));
  }

  @Test
  void aMissingBlobIsInfoForStatAndATypedErrorElsewhere() throws IOException {
    assertFalse(store.stat("n/nope").exists());
    CompletionException e = assertThrows(CompletionException.class,
        () -> store.read("n/nope", 0, ByteBuffer.allocate(1)).join());
    assertInstanceOf(BlobNotFoundException.class, e.getCause(), e.getCause().toString());
    assertThrows(BlobNotFoundException.class, () -> store.truncate("n/nope", 1));
    assertFalse(store.delete("n/nope"));
    assertFalse(store.stat("n/nope").exists(), "a failed call created the blob");
  }

  @Test
  void exclusivePutRefusesAnExistingBlobAndKeepsItsContent() throws IOException {
    store.put("n/f", utf8("one"), PutMode.CREATE);
    assertThrows(BlobAlreadyExistsException.class, () -> store.put("n/f", utf8("two"),
        PutMode.CREATE));
    assertArrayEquals("one".getBytes(StandardCharsets.UTF_8), store.readFully("n/f", 0, 3));
    store.put("n/f", utf8("three"), PutMode.OVERWRITE);
    assertEquals(5, store.stat("n/f").size());
    assertArrayEquals("three".getBytes(StandardCharsets.UTF_8), store.readFully("n/f", 0, 5));
    // A put replaces the whole blob, also when the new content is shorter.
    store.put("n/f", utf8("4"), PutMode.OVERWRITE);
    assertEquals(1, store.stat("n/f").size());
    store.put("n/empty", ByteBuffer.allocate(0), PutMode.CREATE);
    assertTrue(store.stat("n/empty").exists());
    assertEquals(0, store.stat("n/empty").size());
  }

  @Test
  void truncateCutsAndZeroExtends() throws IOException {
    store.put("n/t", utf8("abcdef"), PutMode.OVERWRITE);
    store.truncate("n/t", 2);
    assertEquals(2, store.stat("n/t").size());
    assertArrayEquals(new byte[] {'a', 'b'}, store.readFully("n/t", 0, 2));
    store.truncate("n/t", 4);
    assertArrayEquals(new byte[] {'a', 'b', 0, 0}, store.readFully("n/t", 0, 4));
  }

  @Test
  void deleteRemovesOnceAndReportsWhetherItDid() throws IOException {
    store.put("n/x", utf8("x"), PutMode.CREATE);
    assertTrue(store.delete("n/x"));
    assertFalse(store.stat("n/x").exists());
    assertFalse(store.delete("n/x"));
    // The key is free again for an exclusive create.
    store.put("n/x", utf8("y"), PutMode.CREATE);
    assertArrayEquals(new byte[] {'y'}, store.readFully("n/x", 0, 1));
  }

  @Test
  void everyMutationGivesANewVersionNeverGivenBefore() throws IOException {
    assertEquals(0, store.stat("n/v").version(), "a missing blob has no version");
    Set<Long> seen = new HashSet<>();
    store.put("n/v", utf8("abc"), PutMode.CREATE);
    long v = store.stat("n/v").version();
    assertTrue(v > 0, "version " + v);
    assertTrue(seen.add(v));
    VersionedBytes read = store.readWithVersion("n/v", 100);
    assertArrayEquals("abc".getBytes(StandardCharsets.UTF_8), read.bytes());
    assertEquals(v, read.version(), "the bytes' version is the blob's");
    assertArrayEquals(new byte[] {'a', 'b'}, store.readWithVersion("n/v", 2).bytes());
    assertEquals(v, store.stat("n/v").version(), "reads do not change the version");

    Futures.await(store.write("n/v", 1, utf8("X")));
    assertTrue(seen.add(store.stat("n/v").version()), "a write changes the version");
    store.truncate("n/v", 1);
    assertTrue(seen.add(store.stat("n/v").version()), "a truncate changes it");
    store.put("n/v", utf8("abc"), PutMode.OVERWRITE);
    assertTrue(seen.add(store.stat("n/v").version()), "a put of the same bytes changes it");
    assertTrue(store.delete("n/v"));
    assertEquals(0, store.stat("n/v").version());
    store.put("n/v", utf8("abc"), PutMode.CREATE);
    assertTrue(seen.add(store.stat("n/v").version()),
        "a re-created blob does not get an old version back");
    assertThrows(BlobNotFoundException.class, () -> store.readWithVersion("n/none", 10));
  }

  @Test
  void aConditionalPutReplacesOnlyTheVersionRead() throws IOException {
    store.put("n/p", utf8("one"), PutMode.CREATE);
    long v1 = store.readWithVersion("n/p", 10).version();
    store.putIfVersion("n/p", utf8("two"), v1);
    VersionedBytes now = store.readWithVersion("n/p", 10);
    assertArrayEquals("two".getBytes(StandardCharsets.UTF_8), now.bytes());
    assertTrue(now.version() != v1);
    // A caller that read v1 lost the race: refused, nothing applied.
    assertThrows(TransactionConflictException.class,
        () -> store.putIfVersion("n/p", utf8("stale"), v1));
    VersionedBytes after = store.readWithVersion("n/p", 10);
    assertArrayEquals(now.bytes(), after.bytes());
    assertEquals(now.version(), after.version(), "unchanged");
    assertTrue(store.delete("n/p"));
    assertThrows(TransactionConflictException.class,
        () -> store.putIfVersion("n/p", utf8("back"), now.version()));
    assertFalse(store.stat("n/p").exists(), "a refused conditional put creates nothing");
  }

  @Test
  void aConditionalDeleteRemovesOnlyTheVersionRead() throws IOException {
    store.put("n/d", utf8("one"), PutMode.CREATE);
    long v1 = store.stat("n/d").version();
    store.put("n/d", utf8("two"), PutMode.OVERWRITE);
    assertThrows(TransactionConflictException.class, () -> store.deleteIfVersion("n/d", v1));
    assertArrayEquals("two".getBytes(StandardCharsets.UTF_8), store.readFully("n/d", 0, 3));
    long v2 = store.stat("n/d").version();
    store.deleteIfVersion("n/d", v2);
    assertFalse(store.stat("n/d").exists());
    assertThrows(TransactionConflictException.class, () -> store.deleteIfVersion("n/d", v2));
  }

  @Test
  void ofConcurrentConditionalPutsOnOneVersionExactlyOneWins() throws Exception {
    store.put("n/race", utf8("start"), PutMode.CREATE);
    long v = store.stat("n/race").version();
    int threads = 6;
    ExecutorService pool = Executors.newFixedThreadPool(threads);
    try {
      List<Future<Boolean>> tries = new ArrayList<>();
      for (int t = 0; t < threads; t++) {
        String mine = "writer" + t;
        tries.add(pool.submit(() -> {
          try {
            store.putIfVersion("n/race", utf8(mine), v);
            return true;
          } catch (TransactionConflictException lost) {
            return false;
          }
        }));
      }
      List<Integer> winners = new ArrayList<>();
      for (int t = 0; t < threads; t++) {
        if (tries.get(t).get()) {
          winners.add(t);
        }
      }
      assertEquals(1, winners.size(), "winners " + winners);
      byte[] expected = ("writer" + winners.get(0)).getBytes(StandardCharsets.UTF_8);
      assertArrayEquals(expected, store.readFully("n/race", 0, expected.length));
    } finally {
      pool.shutdownNow();
    }
  }

  @Test
  void scansPageThroughEveryKeyOnceAndOnlyThePrefix() throws IOException {
    Set<String> dir = new HashSet<>();
    for (int i = 0; i < 120; i++) {
      String k = String.format("n/dir/f%03d", i);
      store.put(k, ByteBuffer.wrap(new byte[] {1}), PutMode.CREATE);
      dir.add(k);
    }
    // Names that share a string prefix with the directory but are not under it.
    store.put("n/dirx", ByteBuffer.wrap(new byte[] {1}), PutMode.CREATE);
    store.put("n/dir", ByteBuffer.wrap(new byte[] {1}), PutMode.CREATE);
    Futures.await(store.write("d/abc/0", 0, ByteBuffer.wrap(new byte[] {1})));
    assertEquals(dir, scanAll("n/dir/", 50));
    assertEquals(dir, scanAll("n/dir/", 1000));
    assertEquals(Set.of("d/abc/0"), scanAll("d/", 7));
    assertEquals(Set.of(), scanAll("n/none/", 10));
    Set<String> all = new HashSet<>(dir);
    all.addAll(List.of("n/dirx", "n/dir", "d/abc/0"));
    assertEquals(all, scanAll("", 1000));
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
  void concurrentWritersAndReadersOfDistinctBlobsSeeOnlyTheirOwnBytes() throws Exception {
    int threads = 8;
    ExecutorService pool = Executors.newFixedThreadPool(threads);
    try {
      List<Future<?>> done = new ArrayList<>();
      for (int t = 0; t < threads; t++) {
        int id = t;
        done.add(pool.submit(() -> {
          for (int round = 0; round < 5; round++) {
            byte[] data = random(64 << 10, id * 100L + round);
            store.put("n/c" + id, ByteBuffer.wrap(data), PutMode.OVERWRITE);
            assertArrayEquals(data, store.readFully("n/c" + id, 0, data.length));
          }
          return null;
        }));
      }
      for (Future<?> f : done) {
        f.get();
      }
    } finally {
      pool.shutdownNow();
    }
    for (int t = 0; t < threads; t++) {
      assertArrayEquals(random(64 << 10, t * 100L + 4), store.readFully("n/c" + t, 0, 64 << 10));
    }
  }

  @Test
  void limitsArePositiveAndAStripeFits() {
    StoreLimits limits = store.limits();
    assertNotNull(limits);
    assertTrue(limits.maxKeyBytes() >= 255, "max key bytes " + limits.maxKeyBytes());
    assertTrue(limits.maxObjectBytes() >= (1 << 20), "max object " + limits.maxObjectBytes());
    assertTrue(limits.maxOpBytes() >= (1 << 20), "max op " + limits.maxOpBytes());
  }
}
