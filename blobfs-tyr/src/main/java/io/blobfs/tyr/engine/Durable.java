package io.blobfs.tyr.engine;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;

/**
 * Small files written so that a host crash (power loss) keeps either the old content or
 * the new one, never an older one after the new was acted on: the data is forced before
 * the rename, and the directory after it (a rename, like a create or a delete, is durable
 * only once its directory is synced). The one way the node, and the ring's monitor, do it.
 */
public final class Durable {
  private Durable() {}

  /** Forces {@code dir}'s entries (names created, renamed or deleted in it) to disk. */
  public static void forceDirectory(Path dir) throws IOException {
    try (FileChannel d = FileChannel.open(dir, StandardOpenOption.READ)) {
      d.force(true);
    }
  }

  /**
   * Replaces {@code target} with {@code bytes}: written whole to a temporary file beside it
   * and forced, renamed over it, then the directory forced. A reader sees the old file or
   * the new one, never half of one; after a crash, once this returned, the new one.
   * {@code ownerOnly}: the file is created readable by this user only (0600).
   */
  public static void replace(Path target, byte[] bytes, boolean ownerOnly) throws IOException {
    Path tmp = target.resolveSibling(target.getFileName() + ".tmp");
    StandardOpenOption[] options = {StandardOpenOption.CREATE,
        StandardOpenOption.TRUNCATE_EXISTING, StandardOpenOption.WRITE};
    try (FileChannel ch = ownerOnly ? OwnerOnly.open(tmp, options)
        : FileChannel.open(tmp, options)) {
      ByteBuffer b = ByteBuffer.wrap(bytes);
      while (b.hasRemaining()) {
        ch.write(b);
      }
      ch.force(true);
    }
    Files.move(tmp, target, StandardCopyOption.REPLACE_EXISTING,
        StandardCopyOption.ATOMIC_MOVE);
    forceDirectory(target.toAbsolutePath().getParent());
  }
}
