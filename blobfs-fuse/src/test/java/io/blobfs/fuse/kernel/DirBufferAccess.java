package io.blobfs.fuse.kernel;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

/** Lets tests of other packages fill a {@link DirBuffer} and read the names back. */
public final class DirBufferAccess {
  private DirBufferAccess() {}

  private static final java.util.Map<DirBuffer, ByteBuffer> BUFFERS = new java.util.IdentityHashMap<>();

  public static DirBuffer newBuffer(int size) {
    ByteBuffer b = ByteBuffer.allocate(size).order(ByteOrder.LITTLE_ENDIAN);
    DirBuffer d = new DirBuffer(b);
    BUFFERS.put(d, b);
    return d;
  }

  /** The names of the fuse_dirent records written, in order. */
  public static List<String> names(DirBuffer d) {
    return names(BUFFERS.get(d), d.size());
  }

  static List<String> names(ByteBuffer b, int size) {
    List<String> names = new ArrayList<>();
    int pos = 0;
    while (pos < size) {
      int len = b.getInt(pos + 16);
      byte[] name = new byte[len];
      b.get(pos + 24, name);
      names.add(new String(name, StandardCharsets.UTF_8));
      pos += (24 + len + 7) & ~7;
    }
    return names;
  }
}
