package io.blobfs.namespace;

import static org.junit.jupiter.api.Assertions.*;

import io.blobfs.store.BlobInfo;
import io.blobfs.store.LendsReads;
import io.blobfs.store.PutMode;
import io.blobfs.store.ScanPage;
import io.blobfs.store.StoreLimits;
import io.blobfs.store.VersionedBytes;
import io.blobfs.store.memory.InMemoryBlobStore;
import java.io.FileNotFoundException;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/**
 * Read-ahead over a store that lends its buffers (as Týr over TCP does): every byte right,
 * across stripes and short answers, and every loan released, consumed or discarded.
 */
class LendingReadAheadTest {
  /** The memory store, lending copies of at most 7,000 bytes per answer, counted. */
  static final class LendingStore implements LendsReads {
    final InMemoryBlobStore inner =
        new InMemoryBlobStore("lend", new StoreLimits(1024, 1L << 30, Integer.MAX_VALUE));
    final AtomicInteger outstanding = new AtomicInteger();
    final AtomicInteger lent = new AtomicInteger();

    @Override
    public CompletableFuture<ReadLoan> lendRead(String key, long offset, int length) {
      ByteBuffer buf = ByteBuffer.allocate(Math.min(length, 7_000));
      return inner.read(key, offset, buf).thenApply(n -> {
        outstanding.incrementAndGet();
        lent.incrementAndGet();
        byte[] bytes = java.util.Arrays.copyOf(buf.array(), Math.max(n, 0));
        AtomicInteger releases = new AtomicInteger();
        return new ReadLoan() {
          @Override
          public int length() {
            return bytes.length;
          }

          @Override
          public void copyTo(int at, byte[] dst, int off, int len) {
            assertEquals(0, releases.get(), "copied from after its release");
            System.arraycopy(bytes, at, dst, off, len);
          }

          @Override
          public void release() {
            if (releases.getAndIncrement() == 0) {
              outstanding.decrementAndGet();
            }
          }
        };
      });
    }

    @Override public BlobInfo stat(String key) throws IOException { return inner.stat(key); }
    @Override public VersionedBytes readWithVersion(String key, int max) throws IOException {
      return inner.readWithVersion(key, max);
    }
    @Override public CompletableFuture<Integer> read(String key, long offset, ByteBuffer dst) {
      return inner.read(key, offset, dst);
    }
    @Override public CompletableFuture<Void> write(String key, long offset, ByteBuffer src) {
      return inner.write(key, offset, src);
    }
    @Override public void put(String key, ByteBuffer c, PutMode mode) throws IOException {
      inner.put(key, c, mode);
    }
    @Override public void truncate(String key, long size) throws IOException {
      inner.truncate(key, size);
    }
    @Override public void putIfVersion(String key, ByteBuffer c, long v) throws IOException {
      inner.putIfVersion(key, c, v);
    }
    @Override public boolean delete(String key) throws IOException { return inner.delete(key); }
    @Override public void deleteIfVersion(String key, long v) throws IOException {
      inner.deleteIfVersion(key, v);
    }
    @Override public ScanPage scan(String prefix, String cursor, int limit) throws IOException {
      return inner.scan(prefix, cursor, limit);
    }
    @Override public StoreLimits limits() { return inner.limits(); }
    @Override public void close() { inner.close(); }
  }

  private final LendingStore store = new LendingStore();
  // 40,000-byte stripes: 50,000-byte chunks span two stripes, answers come in 7,000s.
  private final BlobNamespace ns = new BlobNamespace(store,
      new NamespaceOptions(40_000, 16 << 10, 64 << 10, 1024, false, 100),
      StoreCallCounters.NONE);

  private byte[] file(int n) throws IOException {
    byte[] data = new byte[n];
    new Random(n).nextBytes(data);
    try (FileWriter w = ns.create(FsPath.parse("/f"), true)) {
      w.write(data, 0, n);
    }
    return data;
  }

  @Test
  void sequentialReadsComeFromLoansAndReleaseThemAll() throws IOException {
    byte[] data = file(1_000_003);
    FileReader reader = ns.open(FsPath.parse("/f"));
    assertTrue(reader.lends());
    ReadAhead ra = new ReadAhead(reader, 50_000, 200_000);
    byte[] back = new byte[data.length];
    for (long pos = 0; pos < data.length; ) {
      int n = ra.read(pos, back, (int) pos, Math.min(1_000_000 / 7, data.length - (int) pos));
      assertTrue(n > 0);
      pos += n;
    }
    assertArrayEquals(data, back);
    assertEquals(-1, ra.read(data.length, back, 0, 1));
    assertTrue(store.lent.get() >= data.length / 7_000, "bytes came through loans");
    ra.clear();
    assertEquals(0, store.outstanding.get(), "every loan released");
  }

  @Test
  void jumpsReleaseTheChunksLeftBehind() throws IOException {
    byte[] data = file(300_000);
    ReadAhead ra = new ReadAhead(ns.open(FsPath.parse("/f")), 10_000, 30_000);
    byte[] got = new byte[25_000];
    for (long pos : new long[] {0, 250_000, 5, 299_999, 123_456, 39_990}) {
      int n = ra.read(pos, got, 0, got.length);
      assertTrue(n > 0 && n <= 10_000);
      assertArrayEquals(java.util.Arrays.copyOfRange(data, (int) pos, (int) pos + n),
          java.util.Arrays.copyOf(got, n), "bytes at " + pos);
    }
    ra.clear();
    assertEquals(0, store.outstanding.get(), "every loan released");
  }

  @Test
  void aMissingStripeFailsTheReadAndLeavesNoLoanBehind() throws IOException {
    file(200_000);
    FileReader reader = ns.open(FsPath.parse("/f"));
    // The second stripe goes missing: the chunk spanning stripes 0 and 1 fails as a whole.
    String second = ns.layout().dataKey(reader.info().record().fileId(), 1);
    assertTrue(store.delete(second));
    ReadAhead ra = new ReadAhead(reader, 50_000, 50_000);
    assertThrows(FileNotFoundException.class, () -> ra.read(0, new byte[10], 0, 10));
    ra.clear();
    assertEquals(0, store.outstanding.get(), "the first stripe's loans released");
  }
}
