package io.blobfs.store.memory;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * A growable byte array kept as chunks of up to {@link #CHUNK} bytes, so that random
 * writes and growth of large blobs never copy more than one chunk. A chunk's array is only
 * as long as its bytes written so far need (doubling as it grows), so a small blob, such as
 * a file's record, takes about its size and not a whole chunk. Bytes past a chunk's array
 * read as zeros. Not thread-safe: the owning blob locks.
 */
final class ChunkedBytes {
  static final int CHUNK = 1 << 20;

  private final List<byte[]> chunks = new ArrayList<>();
  private long size;

  long size() {
    return size;
  }

  int read(long offset, ByteBuffer dst) {
    if (offset >= size) {
      return -1;
    }
    int total = (int) Math.min(dst.remaining(), size - offset);
    int left = total;
    long pos = offset;
    while (left > 0) {
      int ci = (int) (pos / CHUNK);
      int co = (int) (pos % CHUNK);
      int n = Math.min(left, CHUNK - co);
      byte[] chunk = chunks.get(ci);
      int held = chunk == null ? 0 : Math.max(0, Math.min(n, chunk.length - co));
      if (held > 0) {
        dst.put(chunk, co, held);
      }
      for (int i = held; i < n; i++) {
        dst.put((byte) 0);
      }
      pos += n;
      left -= n;
    }
    return total;
  }

  void write(long offset, ByteBuffer src) {
    long end = offset + src.remaining();
    ensureChunks(end);
    long pos = offset;
    while (src.hasRemaining()) {
      int ci = (int) (pos / CHUNK);
      int co = (int) (pos % CHUNK);
      int n = Math.min(src.remaining(), CHUNK - co);
      byte[] chunk = chunks.get(ci);
      if (chunk == null || chunk.length < co + n) {
        int length = chunk == null ? co + n : Math.max(co + n, 2 * chunk.length);
        chunk = chunk == null ? new byte[length]
            : Arrays.copyOf(chunk, Math.min(CHUNK, length));
        chunks.set(ci, chunk);
      }
      src.get(chunk, co, n);
      pos += n;
    }
    size = Math.max(size, end);
  }

  void truncate(long newSize) {
    if (newSize < size) {
      int keep = (int) ((newSize + CHUNK - 1) / CHUNK);
      while (chunks.size() > keep) {
        chunks.remove(chunks.size() - 1);
      }
      int tail = (int) (newSize % CHUNK);
      byte[] last = tail == 0 ? null : chunks.get(keep - 1);
      if (last != null && tail < last.length) {
        Arrays.fill(last, tail, last.length, (byte) 0);
      }
    } else {
      ensureChunks(newSize);
    }
    size = newSize;
  }

  /** Bytes of the arrays held: for tests of what a blob costs. */
  long allocatedBytes() {
    long total = 0;
    for (byte[] c : chunks) {
      total += c == null ? 0 : c.length;
    }
    return total;
  }

  private void ensureChunks(long end) {
    long needed = (end + CHUNK - 1) / CHUNK;
    if (needed > Integer.MAX_VALUE) {
      throw new IllegalArgumentException("blob too large: " + end);
    }
    while (chunks.size() < needed) {
      chunks.add(null); // allocated on first write: sparse zero ranges cost nothing
    }
  }
}
