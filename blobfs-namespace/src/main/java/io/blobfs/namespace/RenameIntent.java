package io.blobfs.namespace;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.UUID;

/**
 * What a directory rename too large for one transaction writes before its first step and
 * removes in its last: its source and destination, so that whoever meets it later can
 * finish the rename ({@link DirectoryMove#finish}). The id tells two renames of the same
 * source apart. Stored as three lines of UTF-8 under {@link KeyLayout#renameIntentKey};
 * paths hold no control characters, so no line break.
 */
record RenameIntent(String id, FsPath src, FsPath dst) {
  private static final String MAGIC = "blobfs-rename-intent-1";

  static RenameIntent start(FsPath src, FsPath dst) {
    return new RenameIntent(UUID.randomUUID().toString(), src, dst);
  }

  ByteBuffer encode() {
    return ByteBuffer.wrap((MAGIC + "\n" + id + "\n" + src + "\n" + dst + "\n")
        .getBytes(StandardCharsets.UTF_8));
  }

  static RenameIntent decode(String key, byte[] bytes) throws IOException {
    String[] lines = new String(bytes, StandardCharsets.UTF_8).split("\n", -1);
    if (lines.length != 5 || !lines[0].equals(MAGIC) || !lines[4].isEmpty()) {
      throw new CorruptRecordException(key, "not a rename intent");
    }
    try {
      return new RenameIntent(lines[1], FsPath.parse(lines[2]), FsPath.parse(lines[3]));
    } catch (IllegalArgumentException e) {
      throw new CorruptRecordException(key, "a rename intent with a bad path: " + e.getMessage());
    }
  }

  /** True if a rename of {@code from} to {@code to} asks for what this one does. */
  boolean sameAs(FsPath from, FsPath to) {
    return src.equals(from) && (dst.equals(to) || dst.equals(to.child(from.name())));
  }

  @Override
  public String toString() {
    return "rename " + src + " to " + dst;
  }
}
