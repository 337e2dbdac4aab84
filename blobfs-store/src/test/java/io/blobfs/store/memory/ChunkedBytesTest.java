package io.blobfs.store.memory;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.ByteBuffer;
import java.util.Arrays;
import java.util.Random;
import org.junit.jupiter.api.Test;

/** The in-memory store's byte array: what it holds, and that small blobs stay small. */
class ChunkedBytesTest {

  private static byte[] readAll(ChunkedBytes b) {
    ByteBuffer dst = ByteBuffer.allocate((int) b.size());
    b.read(0, dst);
    return dst.array();
  }

  @Test
  void aSmallBlobTakesAboutItsSizeNotAChunk() {
    ChunkedBytes b = new ChunkedBytes();
    b.write(0, ByteBuffer.wrap(new byte[60]));
    assertEquals(60, b.allocatedBytes()); // was a whole 1 MiB chunk per blob
  }

  @Test
  void growingWritesTruncatesAndHolesReadBackAsAByteArrayWould() {
    Random r = new Random(7);
    byte[] model = new byte[0];
    ChunkedBytes b = new ChunkedBytes();
    for (int step = 0; step < 400; step++) {
      int op = r.nextInt(10);
      if (op < 7) {
        int offset = r.nextInt(model.length + 3000);
        byte[] data = new byte[1 + r.nextInt(op == 0 ? 2 * ChunkedBytes.CHUNK : 5000)];
        r.nextBytes(data);
        b.write(offset, ByteBuffer.wrap(data));
        model = Arrays.copyOf(model, Math.max(model.length, offset + data.length));
        System.arraycopy(data, 0, model, offset, data.length);
      } else {
        int size = r.nextInt(model.length + 5000);
        b.truncate(size);
        model = Arrays.copyOf(model, size); // cut, or grown with zeros
      }
      assertEquals(model.length, b.size());
    }
    assertArrayEquals(model, readAll(b));
    assertTrue(b.allocatedBytes() <= 2L * model.length + ChunkedBytes.CHUNK);
  }
}
