package io.blobfs.namespace;

import static org.junit.jupiter.api.Assertions.*;

import io.blobfs.store.FaultInjectingBlobStore;
import io.blobfs.store.StoreLimits;
import io.blobfs.store.memory.InMemoryBlobStore;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.util.Random;
import org.junit.jupiter.api.Test;

class ReadAheadTest {
  private final InMemoryBlobStore store =
      new InMemoryBlobStore("ra", new StoreLimits(1024, 1L << 30, Integer.MAX_VALUE));
  private final BlobNamespace ns = new BlobNamespace(store,
      new NamespaceOptions(64 << 10, 16 << 10, 64 << 10, 1024, false, 100),
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
  void sequentialReadsSeeEveryByteAndStayWithinTheBound() throws IOException {
    byte[] data = file(1_000_003);
    ReadAhead ra = new ReadAhead(ns.open(FsPath.parse("/f")), 50_000, 200_000);
    byte[] back = new byte[data.length];
    long pos = 0;
    while (pos < data.length) {
      int n = ra.read(pos, back, (int) pos, Math.min(7_777, data.length - (int) pos));
      assertTrue(n > 0);
      pos += n;
      assertTrue(ra.bytesRequested() - pos <= 200_000 + 50_000,
          "requested " + ra.bytesRequested() + " at " + pos);
    }
    assertArrayEquals(data, back);
    assertEquals(-1, ra.read(data.length, back, 0, 1));
    assertEquals(data.length, ra.bytesRequested(), "every byte fetched once");
  }

  @Test
  void jumpsForwardAndBackRestartAtTheNewPosition() throws IOException {
    byte[] data = file(300_000);
    ReadAhead ra = new ReadAhead(ns.open(FsPath.parse("/f")), 10_000, 30_000);
    for (long pos : new long[] {0, 250_000, 5, 299_999, 123_456}) {
      byte[] one = new byte[1];
      assertEquals(1, ra.read(pos, one, 0, 1));
      assertEquals(data[(int) pos], one[0], "byte at " + pos);
    }
  }

  @Test
  void seeksReuseTheBuffersOfDroppedChunksInsteadOfAllocatingNewOnes() throws IOException {
    byte[] data = file(300_000);
    ReadAhead ra = new ReadAhead(ns.open(FsPath.parse("/f")), 10_000, 30_000);
    Random random = new Random(7);
    for (int i = 0; i < 200; i++) { // each jump drops the chunks read ahead of the last
      long pos = random.nextInt(data.length);
      byte[] one = new byte[1];
      assertEquals(1, ra.read(pos, one, 0, 1));
      assertEquals(data[(int) pos], one[0], "byte at " + pos);
    }
    // 30,000 bytes ahead in 10,000-byte chunks: three buffers in flight plus the one read
    assertTrue(ra.buffersAllocated() <= 4, ra.buffersAllocated() + " buffers allocated");
  }

  @Test
  void readsOfAnyLengthAcrossChunksAndJumpsSeeTheFileBytes() throws IOException {
    byte[] data = file(123_457); // the last chunk is partial
    ReadAhead ra = new ReadAhead(ns.open(FsPath.parse("/f")), 10_000, 30_000);
    Random random = new Random(11);
    long pos = 0;
    for (int i = 0; i < 500; i++) {
      if (random.nextInt(5) == 0) {
        pos = random.nextInt(data.length); // backwards or forwards, inside or past read-ahead
      }
      if (pos >= data.length) {
        assertEquals(-1, ra.read(pos, new byte[1], 0, 1));
        pos = 0;
        continue;
      }
      byte[] got = new byte[1 + random.nextInt(25_000)]; // straddles chunks
      int n = ra.read(pos, got, 0, got.length);
      assertTrue(n > 0 && n <= got.length && pos + n <= data.length, n + " at " + pos);
      assertArrayEquals(java.util.Arrays.copyOfRange(data, (int) pos, (int) pos + n),
          java.util.Arrays.copyOf(got, n), "bytes at " + pos);
      pos += n;
    }
    assertTrue(ra.buffersAllocated() <= 4, ra.buffersAllocated() + " buffers allocated");
  }

  @Test
  void aBufferWhoseReadFailedIsNeverReused() throws IOException {
    // A failed read may be our own timeout while the store still writes into the buffer:
    // reusing it could put those late bytes into another chunk.
    FaultInjectingBlobStore faults = FaultInjectingBlobStore.over(store);
    BlobNamespace faulty = new BlobNamespace(faults.store(),
        new NamespaceOptions(64 << 10, 16 << 10, 64 << 10, 1024, false, 100),
        StoreCallCounters.NONE);
    byte[] data = file(300_000);
    ReadAhead ra = new ReadAhead(faulty.open(FsPath.parse("/f")), 10_000, 30_000);
    byte[] one = new byte[1];
    assertEquals(1, ra.read(0, one, 0, 1));
    int before = ra.buffersAllocated();
    faults.on(FaultInjectingBlobStore.Op.READ).always().failBefore();
    assertThrows(IOException.class, () -> ra.read(200_000, one, 0, 1));
    faults.clear();
    byte[] got = new byte[5_000];
    assertEquals(5_000, ra.read(100_000, got, 0, got.length));
    assertArrayEquals(java.util.Arrays.copyOfRange(data, 100_000, 105_000), got);
    // the chunks read ahead of position 0 came back; those whose reads failed did not
    assertTrue(ra.buffersAllocated() > before, ra.buffersAllocated() + " allocated, "
        + before + " before the failures: a failed read's buffer was reused");
  }

  @Test
  void aStreamAfterAnotherReadsIntoTheBuffersTheFirstLeft() throws IOException {
    byte[] data = file(300_000);
    ChunkBuffers shared = ChunkBuffers.forReadAhead(10_000, 30_000);
    int first = 0;
    for (int stream = 0; stream < 3; stream++) {
      ReadAhead ra = new ReadAhead(ns.open(FsPath.parse("/f")), 30_000, shared);
      byte[] back = new byte[data.length];
      for (int pos = 0; pos < data.length; ) {
        pos += ra.read(pos, back, pos, data.length - pos);
      }
      assertArrayEquals(data, back, "stream " + stream);
      ra.clear(); // the stream closes
      // the first allocates what it keeps in flight (three chunks ahead and the one read,
      // at most); the next ones allocate nothing
      if (stream == 0) {
        first = ra.buffersAllocated();
        assertTrue(first >= 1 && first <= 4, first + " buffers allocated");
      } else {
        assertEquals(0, ra.buffersAllocated(), "stream " + stream);
      }
      assertEquals(first, shared.kept(), "stream " + stream);
    }
  }

  @Test
  void sharedBuffersKeepNoMoreThanTheirBound() throws IOException {
    byte[] data = file(100_000);
    ChunkBuffers shared = new ChunkBuffers(10_000, 2);
    ReadAhead a = new ReadAhead(ns.open(FsPath.parse("/f")), 30_000, shared);
    ReadAhead b = new ReadAhead(ns.open(FsPath.parse("/f")), 30_000, shared);
    byte[] one = new byte[1];
    assertEquals(1, a.read(0, one, 0, 1));
    assertEquals(1, b.read(50_000, one, 0, 1));
    assertEquals(data[50_000], one[0]);
    a.clear();
    b.clear();
    assertEquals(2, shared.kept(), "eight buffers given back, two kept");
  }

  @Test
  void rejectsABoundSmallerThanAChunk() throws IOException {
    file(10);
    assertThrows(IllegalArgumentException.class,
        () -> new ReadAhead(ns.open(FsPath.parse("/f")), 100, 99));
  }
}
