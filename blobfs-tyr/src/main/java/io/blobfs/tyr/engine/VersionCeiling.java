package io.blobfs.tyr.engine;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.util.zip.CRC32C;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A bound, durable before any number under it is handed out, on the commit numbers this
 * store has ever handed out, so that no number is handed out twice.
 *
 * <p>Why: a commit's number is the version of the blobs it writes, which clients keep and
 * send back as the condition of a later mutation. With {@link SyncPolicy#INTERVAL} or
 * {@link SyncPolicy#NONE} a commit is visible before its record is on disk, so a power loss
 * can take commits that clients have seen. Numbering on from the last durable commit
 * would then give a lost commit's number to another state, and a condition read from the
 * lost state would hold against it. Every number is instead at most a ceiling already on
 * disk, and a new run numbers from above the last run's ceiling.
 *
 * <p>The ceiling moves up {@link #STEP} numbers at a time, so it costs one write and fsync
 * per {@code STEP} commits, and a power loss skips at most {@code STEP} numbers. A clean
 * close, with everything on disk, lowers it to the last number used, so a clean restart
 * goes on without a gap.
 *
 * <p>File {@value #FILE}: magic u32 | ceiling u64 | crc32c u32 of the twelve bytes before
 * it. It is written to a temporary file, forced, renamed over and the directory forced, as
 * {@link Checkpoint}s are: a crash leaves the old ceiling or the new one, both safe.
 */
final class VersionCeiling {
  private static final Logger LOG = LoggerFactory.getLogger(VersionCeiling.class);
  static final String FILE = "commit-ceiling";
  private static final int MAGIC = 0x54595256; // "TYRV"
  private static final int BYTES = 16;
  /**
   * Numbers reserved per write: a trade of fsyncs against numbers a crash skips. A write
   * (two fsyncs and a rename) stalls commits for a few milliseconds: reserving 1024 at a
   * time cost tiny sync=interval commits a measurable share of their time, this many a
   * negligible one; and a long has room for 2^47 power losses' worth of skips.
   */
  static final long STEP = 1 << 16;

  private final Path dir;
  private final long floor;
  private long ceiling;

  private VersionCeiling(Path dir, long floor) {
    this.dir = dir;
    this.floor = floor;
  }

  /**
   * Reads the ceiling the last run left and reserves the next numbers above it, durably.
   * {@code lastLogged}: the last commit recovery found in the log (a store made before
   * this file existed has none, and is trusted to have handed out no more than that).
   */
  static VersionCeiling open(Path dir, long lastLogged) throws IOException {
    long stored = read(dir.resolve(FILE));
    if (stored >= 0 && stored < lastLogged) {
      // Never written so: the file came from elsewhere. The log at least is this store's.
      LOG.warn("Týr's commit ceiling {} in {} is below the log's last commit {}; numbering "
          + "from the log's", stored, dir.resolve(FILE), lastLogged);
    }
    long floor = Math.max(stored, lastLogged);
    VersionCeiling c = new VersionCeiling(dir, floor);
    c.write(floor + STEP);
    return c;
  }

  /** The highest number an earlier run may have handed out: this run numbers above it. */
  long floor() {
    return floor;
  }

  /** Makes sure {@code version} is under the ceiling on disk; under the commit lock. */
  void cover(long version) throws IOException {
    if (version > ceiling) {
      write(version + STEP);
    }
  }

  /**
   * At a clean close, once every number handed out is in the forced log: lowers the
   * ceiling to {@code lastUsed}, the highest number this or an earlier run handed out.
   */
  void lower(long lastUsed) throws IOException {
    if (lastUsed < ceiling) {
      write(lastUsed);
    }
  }

  private void write(long value) throws IOException {
    ByteBuffer b = ByteBuffer.allocate(BYTES).putInt(MAGIC).putLong(value);
    CRC32C crc = new CRC32C();
    crc.update(b.array(), 0, BYTES - 4);
    b.putInt((int) crc.getValue()).flip();
    Path tmp = dir.resolve(FILE + ".tmp");
    Files.deleteIfExists(tmp);
    try (FileChannel ch = OwnerOnly.open(tmp, StandardOpenOption.CREATE_NEW,
        StandardOpenOption.WRITE)) {
      while (b.hasRemaining()) {
        ch.write(b);
      }
      ch.force(true);
    }
    Files.move(tmp, dir.resolve(FILE), StandardCopyOption.ATOMIC_MOVE,
        StandardCopyOption.REPLACE_EXISTING);
    try {
      Durable.forceDirectory(dir);
    } catch (IOException e) {
      // As for segments and checkpoints: some file systems cannot sync a directory.
      LOG.debug("cannot sync directory {}: {}", dir, e.toString());
    }
    ceiling = value;
  }

  /**
   * The stored ceiling, or -1 if there is no file. A damaged file refuses the open: the
   * numbers the last run handed out are then unknown.
   */
  private static long read(Path file) throws IOException {
    byte[] bytes;
    try {
      bytes = Files.readAllBytes(file);
    } catch (NoSuchFileException e) {
      return -1;
    }
    ByteBuffer b = ByteBuffer.wrap(bytes);
    CRC32C crc = new CRC32C();
    crc.update(bytes, 0, Math.min(bytes.length, BYTES - 4));
    if (bytes.length != BYTES || b.getInt(0) != MAGIC
        || b.getInt(BYTES - 4) != (int) crc.getValue() || b.getLong(4) < 0) {
      throw new IOException("Týr's commit ceiling " + file + " is damaged: the commit "
          + "numbers the last run handed out are unknown, so none can be handed out safely");
    }
    return b.getLong(4);
  }
}
