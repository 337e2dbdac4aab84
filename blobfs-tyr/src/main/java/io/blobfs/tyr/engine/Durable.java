package io.blobfs.tyr.engine;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Small files written so that a host crash (power loss) keeps either the old content or
 * the new one, never an older one after the new was acted on: the data is forced before
 * the rename, and the directory after it (a rename, like a create or a delete, is durable
 * only once its directory is synced). The one way the node, and the ring's monitor, do it.
 */
public final class Durable {
  private static final Logger LOG = LoggerFactory.getLogger(Durable.class);

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
   *
   * <p>A directory that cannot be synced (some file systems refuse to open or force one) is
   * logged, once per directory, and tolerated, as the engine's log segments, checkpoints
   * and version ceiling do: on such a file system no new name in the data directory is
   * durable, so refusing here would not make the node crash-safe, only stop it (a node
   * could not start, as it records its ring epoch there, and the monitor would report a
   * failure for a ring it has already published). The rename is then as durable as the
   * file system makes it. Any other failure (before or at the rename) is thrown, and the
   * target is then left as it was.
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
    Path dir = target.toAbsolutePath().getParent();
    try {
      forceDirectory(dir);
    } catch (IOException e) {
      if (UNSYNCABLE.add(dir)) {
        LOG.warn("cannot sync directory {} ({}): a host crash may bring back the file {}'s "
            + "older content; tolerated as for the engine's files", dir, e, target);
      }
    }
  }

  /** Directories already logged as not syncable, so that each is logged once. */
  private static final java.util.Set<Path> UNSYNCABLE =
      java.util.concurrent.ConcurrentHashMap.newKeySet();
}
