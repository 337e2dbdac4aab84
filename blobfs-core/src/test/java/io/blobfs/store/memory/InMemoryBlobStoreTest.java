package io.blobfs.store.memory;

import static org.junit.jupiter.api.Assertions.*;

import io.blobfs.store.BlobAlreadyExistsException;
import io.blobfs.store.BlobMutation;
import io.blobfs.store.BlobNotFoundException;
import io.blobfs.store.Futures;
import io.blobfs.store.PutMode;
import io.blobfs.store.ScanPage;
import io.blobfs.store.StoreLimits;
import io.blobfs.store.TransactionConflictException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.CompletionException;
import org.junit.jupiter.api.Test;

class InMemoryBlobStoreTest {
  private final InMemoryBlobStore store =
      new InMemoryBlobStore("t", new StoreLimits(1024, 8L << 20, Integer.MAX_VALUE));

  private static ByteBuffer bytes(String s) {
    return ByteBuffer.wrap(s.getBytes(StandardCharsets.UTF_8));
  }

  private String read(String key, long off, int len) throws Exception {
    ByteBuffer dst = ByteBuffer.allocate(len);
    int n = Futures.await(store.read(key, off, dst));
    return n < 0 ? null : new String(dst.array(), 0, n, StandardCharsets.UTF_8);
  }

  @Test
  void rangedWritesAcrossChunksReadBackExactly() throws Exception {
    byte[] data = new byte[3 * ChunkedBytes.CHUNK + 123];
    new Random(7).nextBytes(data);
    // Written out of order, in odd-sized pieces that straddle chunk boundaries.
    int piece = ChunkedBytes.CHUNK / 3 + 17;
    List<Integer> offsets = new ArrayList<>();
    for (int off = 0; off < data.length; off += piece) {
      offsets.add(off);
    }
    java.util.Collections.shuffle(offsets, new Random(3));
    for (int off : offsets) {
      Futures.await(store.write("k", off,
          ByteBuffer.wrap(data, off, Math.min(piece, data.length - off))));
    }
    assertEquals(data.length, store.stat("k").size());
    assertArrayEquals(data, store.readFully("k", 0, data.length));
    byte[] middle = store.readFully("k", ChunkedBytes.CHUNK - 5, 10);
    assertArrayEquals(java.util.Arrays.copyOfRange(data, ChunkedBytes.CHUNK - 5,
        ChunkedBytes.CHUNK + 5), middle);
  }

  @Test
  void writePastEndZeroFillsAndReadPastEndIsEof() throws Exception {
    Futures.await(store.write("k", 5, bytes("xy")));
    assertEquals(7, store.stat("k").size());
    assertArrayEquals(new byte[] {0, 0, 0, 0, 0, 'x', 'y'}, store.readFully("k", 0, 7));
    assertNull(read("k", 7, 4));
    assertEquals("y", read("k", 6, 4));
  }

  @Test
  void missingBlobIsInfoNotException() throws Exception {
    assertFalse(store.stat("nope").exists());
    CompletionException e = assertThrows(CompletionException.class,
        () -> store.read("nope", 0, ByteBuffer.allocate(1)).join());
    assertInstanceOf(BlobNotFoundException.class, e.getCause());
    assertFalse(store.delete("nope"));
  }

  @Test
  void exclusivePutRefusesExistingKeyAndKeepsContent() throws Exception {
    store.put("k", bytes("one"), PutMode.CREATE);
    assertThrows(BlobAlreadyExistsException.class,
        () -> store.put("k", bytes("two"), PutMode.CREATE));
    assertEquals("one", read("k", 0, 10));
    store.put("k", bytes("three"), PutMode.OVERWRITE);
    assertEquals("three", read("k", 0, 10));
  }

  @Test
  void oversizedBlobIsRefused() {
    assertThrows(java.io.IOException.class,
        () -> store.put("big", ByteBuffer.allocate((8 << 20) + 1), PutMode.OVERWRITE));
    assertFalse(store.stat("big").exists());
  }

  @Test
  void truncateCutsAndExtends() throws Exception {
    store.put("k", bytes("abcdef"), PutMode.OVERWRITE);
    store.truncate("k", 2);
    assertEquals("ab", read("k", 0, 10));
    store.truncate("k", 4);
    assertArrayEquals(new byte[] {'a', 'b', 0, 0}, store.readFully("k", 0, 4));
    assertThrows(BlobNotFoundException.class, () -> store.truncate("nope", 1));
  }

  @Test
  void scanPagesCoverEveryKeyOnceAndOnlyThePrefix() throws Exception {
    Set<String> expected = new HashSet<>();
    for (int i = 0; i < 250; i++) {
      store.put("p/" + i, bytes("x"), PutMode.OVERWRITE);
      expected.add("p/" + i);
      store.put("q/" + i, bytes("x"), PutMode.OVERWRITE);
    }
    Set<String> seen = new HashSet<>();
    String cursor = null;
    int pages = 0;
    do {
      ScanPage page = store.scan("p/", cursor, 100);
      for (String k : page.keys()) {
        assertTrue(seen.add(k), "key listed twice: " + k);
      }
      cursor = page.nextCursor();
      pages++;
    } while (cursor != null);
    assertEquals(expected, seen);
    assertEquals(3, pages);
  }

  @Test
  void transactionAppliesAllOrNothing() throws Exception {
    store.put("a", bytes("1"), PutMode.OVERWRITE);
    store.put("b", bytes("2"), PutMode.OVERWRITE);
    assertThrows(TransactionConflictException.class, () -> store.commit(List.of(
        new BlobMutation.Delete("a", true),
        new BlobMutation.Put("c", bytes("3"), PutMode.OVERWRITE),
        new BlobMutation.Put("b", bytes("x"), PutMode.CREATE))));
    assertEquals("1", read("a", 0, 1));
    assertEquals("2", read("b", 0, 1));
    assertFalse(store.stat("c").exists());

    store.commit(List.of(new BlobMutation.Delete("a", true),
        new BlobMutation.Put("c", bytes("3"), PutMode.CREATE)));
    assertFalse(store.stat("a").exists());
    assertEquals("3", read("c", 0, 1));
  }
}
