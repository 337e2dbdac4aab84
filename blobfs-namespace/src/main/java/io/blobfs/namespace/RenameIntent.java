package io.blobfs.namespace;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.UUID;

/**
 * What a directory operation that goes in several steps writes before its first step and
 * removes in its last, so that whoever meets it later can finish it
 * ({@link DirectoryMove#finishAtOrUnder}):
 *
 * <ul>
 *   <li>a rename too large for one transaction, or any directory rename without
 *       transactions: its source and destination;
 *   <li>a recursive delete without transactions ({@code dst} null): its directory and the
 *       time it started, so that finishing it removes only names older than the delete
 *       (a file created there since is kept).
 * </ul>
 *
 * The id tells two operations on the same source apart. Stored as four lines of UTF-8
 * under {@link KeyLayout#renameIntentKey} (one key per directory: one operation at a time
 * may be under way on it); paths hold no control characters, so no line break.
 */
record RenameIntent(String id, FsPath src, FsPath dst, long startedMillis) {
  private static final String MAGIC = "blobfs-rename-intent-1";
  private static final String DELETE_MAGIC = "blobfs-delete-intent-1";

  static RenameIntent start(FsPath src, FsPath dst) {
    return new RenameIntent(UUID.randomUUID().toString(), src, dst, 0);
  }

  static RenameIntent startDelete(FsPath dir) {
    return new RenameIntent(UUID.randomUUID().toString(), dir, null,
        System.currentTimeMillis());
  }

  boolean isDelete() {
    return dst == null;
  }

  ByteBuffer encode() {
    String text = isDelete()
        ? DELETE_MAGIC + "\n" + id + "\n" + src + "\n" + startedMillis + "\n"
        : MAGIC + "\n" + id + "\n" + src + "\n" + dst + "\n";
    return ByteBuffer.wrap(text.getBytes(StandardCharsets.UTF_8));
  }

  static RenameIntent decode(String key, byte[] bytes) throws IOException {
    String[] lines = new String(bytes, StandardCharsets.UTF_8).split("\n", -1);
    boolean delete = lines.length > 0 && lines[0].equals(DELETE_MAGIC);
    if (lines.length != 5 || !(delete || lines[0].equals(MAGIC)) || !lines[4].isEmpty()) {
      throw new CorruptRecordException(key, "not a rename or delete intent");
    }
    try {
      return delete
          ? new RenameIntent(lines[1], FsPath.parse(lines[2]), null, Long.parseLong(lines[3]))
          : new RenameIntent(lines[1], FsPath.parse(lines[2]), FsPath.parse(lines[3]), 0);
    } catch (IllegalArgumentException e) {
      throw new CorruptRecordException(key, "an intent with a bad path or time: "
          + e.getMessage());
    }
  }

  /** True if a rename of {@code from} to {@code to} asks for what this one does. */
  boolean sameAs(FsPath from, FsPath to) {
    return !isDelete() && src.equals(from) && (dst.equals(to) || dst.equals(to.child(from.name())));
  }

  @Override
  public String toString() {
    return isDelete() ? "delete " + src : "rename " + src + " to " + dst;
  }
}
