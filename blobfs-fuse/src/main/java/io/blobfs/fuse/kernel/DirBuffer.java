package io.blobfs.fuse.kernel;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;

/**
 * The body of a READDIR reply: {@code struct fuse_dirent} records, each padded to 8 bytes,
 * as many as fit the size the kernel asked for.
 */
public final class DirBuffer {
  public static final int DT_DIR = 4;
  public static final int DT_REG = 8;

  private final ByteBuffer out;

  DirBuffer(ByteBuffer out) {
    this.out = out;
  }

  /**
   * Adds one entry; {@code nextOffset} is what the kernel passes back to continue after it.
   * Returns false, adding nothing, when it does not fit: the kernel asks again from there.
   */
  public boolean add(long ino, String name, int type, long nextOffset) {
    byte[] bytes = name.getBytes(StandardCharsets.UTF_8);
    int size = 24 + bytes.length;
    int padded = (size + 7) & ~7;
    if (padded > out.remaining()) {
      return false;
    }
    out.putLong(ino).putLong(nextOffset).putInt(bytes.length).putInt(type).put(bytes);
    for (int i = size; i < padded; i++) {
      out.put((byte) 0);
    }
    return true;
  }

  int size() {
    return out.position();
  }
}
