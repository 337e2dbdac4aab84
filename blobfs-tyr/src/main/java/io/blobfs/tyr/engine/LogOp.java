package io.blobfs.tyr.engine;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;

/**
 * One physical effect of a committed transaction, as the log stores it. Logical ops
 * (append, add, compare-and-set, exclusive create) are resolved at commit into these, so
 * that replay repeats the effects without re-deciding anything.
 *
 * @param a WRITE: blob offset; SET_SIZE: the new size
 * @param b WRITE: byte count
 * @param dataPos WRITE: where the bytes are, counted from the start of the record
 */
record LogOp(byte type, String key, long a, long b, long dataPos) {
  /** The blob now exists, empty (a fresh blob, replacing any old one). */
  static final byte RESET = 1;
  static final byte WRITE = 2;
  static final byte SET_SIZE = 3;
  static final byte DELETE = 4;
  /** As WRITE, but the bytes are the blob's own, moved out of an old segment: no new version. */
  static final byte RELOCATE = 5;

  static LogOp reset(String key) {
    return new LogOp(RESET, key, 0, 0, 0);
  }

  static LogOp write(String key, long offset, long length, long dataPos) {
    return new LogOp(WRITE, key, offset, length, dataPos);
  }

  static LogOp setSize(String key, long size) {
    return new LogOp(SET_SIZE, key, size, 0, 0);
  }

  static LogOp relocate(String key, long offset, long length, long dataPos) {
    return new LogOp(RELOCATE, key, offset, length, dataPos);
  }

  static LogOp delete(String key) {
    return new LogOp(DELETE, key, 0, 0, 0);
  }

  int encodedSize() {
    return 1 + 2 + key.getBytes(StandardCharsets.UTF_8).length + 24;
  }

  void encode(ByteBuffer out) {
    byte[] k = key.getBytes(StandardCharsets.UTF_8);
    out.put(type).putShort((short) k.length).put(k).putLong(a).putLong(b).putLong(dataPos);
  }

  static LogOp decode(ByteBuffer in) {
    byte type = in.get();
    if (type < RESET || type > RELOCATE) {
      throw new IllegalStateException("unknown log op type " + type);
    }
    byte[] k = new byte[Short.toUnsignedInt(in.getShort())];
    in.get(k);
    return new LogOp(type, new String(k, StandardCharsets.UTF_8), in.getLong(), in.getLong(),
        in.getLong());
  }
}
