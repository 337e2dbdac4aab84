package io.blobfs.namespace;

import java.nio.ByteBuffer;
import java.util.Arrays;

/**
 * The bytes the soak test writes: every file names the write that made it, so a read maps
 * back to exactly one write. Layout: the write id (8 bytes), the length (4 bytes), then
 * bytes that depend on the write id and the offset only, so that a shifted, short, mixed
 * or stale read never passes for the write it names.
 */
final class SoakContent {
  static final int HEADER = 12;

  private SoakContent() {}

  static byte[] of(long writeId, int length) {
    if (length < HEADER) {
      throw new IllegalArgumentException("a soak file holds at least its header: " + length);
    }
    byte[] b = new byte[length];
    ByteBuffer.wrap(b).putLong(writeId).putInt(length);
    for (int i = HEADER; i < length; i++) {
      b[i] = byteAt(writeId, i);
    }
    return b;
  }

  /** The write id a file's bytes name, or -1 if they are too short to name one. */
  static long writeIdOf(byte[] bytes) {
    return bytes.length < HEADER ? -1 : ByteBuffer.wrap(bytes).getLong();
  }

  /** Null if {@code bytes} are exactly what {@code writeId} wrote, else what differs. */
  static String mismatch(long writeId, int length, byte[] bytes) {
    if (bytes.length != length) {
      return "length " + bytes.length + ", write " + writeId + " wrote " + length;
    }
    int at = Arrays.mismatch(bytes, of(writeId, length));
    return at < 0 ? null : "byte " + at + " differs from write " + writeId + "'s";
  }

  private static byte byteAt(long writeId, int offset) {
    long x = writeId * 0x9E3779B97F4A7C15L + offset;
    x ^= x >>> 31;
    x *= 0xBF58476D1CE4E5B9L;
    return (byte) (x ^ x >>> 29);
  }
}
