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
 * only once its directory is synced). The way the transaction records, the ring-epoch
 * record and the monitor's ring file are written (the engine's log segments, checkpoints
 * and version ceiling still do their own, and log a failed directory force).
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
   * <p>The directory force follows {@link #syncDirectory}: a directory (file system) that
   * refused its first force is tolerated; one that synced before and now fails is thrown,
   * the new content then possibly not durable (the caller must not act on it).
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
    syncDirectory(target.toAbsolutePath().getParent(), target);
  }

  /**
   * Forces {@code dir} after {@code changed} was created, renamed or deleted in it, with one
   * tolerance, decided on the first force of each directory and remembered: a directory
   * whose first force is refused as unsupported (EINVAL, ENOTSUP: some file systems cannot
   * sync a directory at all; or one that cannot even be opened as a file, as on Windows) is
   * logged once and never forced again. On such a file system no new name is durable, the
   * engine's log segments included, so refusing would not make the node crash-safe, only
   * stop it. Every other failure is thrown: any failure of a directory that synced before
   * (EIO on a healthy disk: the name may not survive a crash, so the caller, a transaction
   * record above all, must not acknowledge it; ring-epoch2 review M1), and a first failure
   * that is not a refusal (not remembered: the next call checks again).
   */
  public static void syncDirectory(Path dir, Path changed) throws IOException {
    Path key = dir.toAbsolutePath().normalize();
    Boolean syncs = SYNCS.get(key);
    if (Boolean.FALSE.equals(syncs)) {
      return; // refused its first force: logged then, tolerated since
    }
    try {
      forceDirectory(key);
    } catch (IOException e) {
      if (syncs == null && refusal(key, e)) {
        if (SYNCS.putIfAbsent(key, Boolean.FALSE) == null) {
          LOG.warn("cannot sync directory {} ({}): a host crash may lose or undo names made "
              + "in it (first: {}); tolerated, as for the engine's files, and not tried "
              + "again", key, e.toString(), changed);
        }
        return;
      }
      throw new IOException("directory " + key + " not forced after " + changed
          + (Boolean.TRUE.equals(syncs) ? " (it synced before)" : "") + ": " + e, e);
    }
    SYNCS.putIfAbsent(key, Boolean.TRUE);
  }

  /**
   * Whether a directory's failed first force is the file system refusing to sync
   * directories (not an I/O error). Java gives the errno only as strerror's text.
   */
  private static boolean refusal(Path dir, IOException e) {
    if (!dir.getFileSystem().supportedFileAttributeViews().contains("posix")) {
      return true; // e.g. Windows: a directory cannot be opened as a file channel
    }
    String m = String.valueOf(e.getMessage());
    return m.contains("Invalid argument") || m.contains("not supported")
        || m.contains("Not supported");
  }

  /** Per directory: true once it synced, false once its first force was refused. */
  private static final java.util.Map<Path, Boolean> SYNCS =
      new java.util.concurrent.ConcurrentHashMap<>();
}
