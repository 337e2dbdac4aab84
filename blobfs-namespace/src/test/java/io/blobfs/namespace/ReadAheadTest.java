package io.blobfs.namespace;

import static org.junit.jupiter.api.Assertions.*;

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
  void rejectsABoundSmallerThanAChunk() throws IOException {
    file(10);
    assertThrows(IllegalArgumentException.class,
        () -> new ReadAhead(ns.open(FsPath.parse("/f")), 100, 99));
  }
}
