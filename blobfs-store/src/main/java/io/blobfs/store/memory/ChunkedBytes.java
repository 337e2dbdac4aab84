package io.blobfs.store.memory;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;

/**
 * A growable byte array kept as fixed-size chunks, so that random writes and growth of
 * large blobs never copy what is already there. Not thread-safe: the owning blob locks.
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
      if (chunk == null) {
        for (int i = 0; i < n; i++) {
          dst.put((byte) 0);
        }
      } else {
        dst.put(chunk, co, n);
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
      if (chunk == null) {
        chunk = new byte[CHUNK];
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
      if (tail != 0 && chunks.get(keep - 1) != null) {
        byte[] last = chunks.get(keep - 1);
        java.util.Arrays.fill(last, tail, CHUNK, (byte) 0);
      }
    } else {
      ensureChunks(newSize);
    }
    size = newSize;
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
