package io.blobfs.tyr.engine;

import java.io.BufferedInputStream;
import java.io.BufferedOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.EOFException;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.function.LongSupplier;
import java.util.stream.Stream;
import java.util.zip.CheckedInputStream;
import java.util.zip.CheckedOutputStream;
import java.util.zip.CRC32C;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Every blob's state (metadata and extent map, not its bytes) as of one commit, and where
 * in the log to resume replaying after it. Recovery loads the newest intact checkpoint and
 * replays only the records after it, so that log segments before that point can be
 * deleted once nothing refers to their bytes.
 *
 * <p>Written to a temporary file, forced, then renamed over: a crash leaves the old
 * checkpoint or the new one, never a torn one (and a damaged file fails its CRC and is
 * skipped for an older one). Files are named by version, so two checkpoints of one state
 * would be one file: {@link LogReclaimer} writes none at an unchanged version.
 */
final class Checkpoint {
  private static final Logger LOG = LoggerFactory.getLogger(Checkpoint.class);
  private static final int MAGIC = 0x54595243; // "TYRC"
  private static final int FORMAT = 1;
  private static final String SUFFIX = ".tyrckpt";
  /** CRC and magic after the body. */
  private static final int TRAILER = 8;
  /** The least bytes an entry of each kind takes in the file: a count must fit in what is left. */
  static final int MIN_BLOB_BYTES = 4 + 4 + 4 * 8 + 4;
  static final int MIN_CHUNK_BYTES = 4;
  static final int MIN_EXTENT_BYTES = 4 + 4 + 8 + 8;

  /** Replay resumes at {@code offset} of segment {@code segment}. */
  record Loaded(long version, long segment, long offset, List<BlobState> blobs) {}

  private Checkpoint() {}

  /**
   * Writes the checkpoint of {@code version} and deletes every other one but that of
   * {@code keep} (negative: none), recovery's fallback: a file that failed to load, or
   * any older one, must not count as one of the two kept.
   */
  static void write(Path dir, long version, long segment, long offset,
      Collection<BlobState> blobs, long keep) throws IOException {
    Path tmp = dir.resolve("checkpoint.tmp");
    CRC32C crc = new CRC32C();
    Files.deleteIfExists(tmp); // a crash's leftover, perhaps of another mode
    try (OutputStream file = java.nio.channels.Channels.newOutputStream(OwnerOnly.open(tmp,
            StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE));
        DataOutputStream out = new DataOutputStream(new CheckedOutputStream(
            new BufferedOutputStream(file, 1 << 16), crc))) {
      out.writeInt(MAGIC);
      out.writeInt(FORMAT);
      out.writeLong(version);
      out.writeLong(segment);
      out.writeLong(offset);
      out.writeInt(blobs.size());
      for (BlobState s : blobs) {
        s.writeTo(out);
      }
      out.flush();
      // The CRC covers everything before it; it is written around the checksumming stream.
      DataOutputStream trailer = new DataOutputStream(file);
      trailer.writeInt((int) crc.getValue());
      trailer.writeInt(MAGIC);
      trailer.flush();
    }
    try (FileChannel ch = FileChannel.open(tmp, StandardOpenOption.WRITE)) {
      ch.force(true);
    }
    Path target = file(dir, version);
    Files.move(tmp, target, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
    try {
      Durable.forceDirectory(dir);
    } catch (IOException e) {
      LOG.debug("cannot sync directory {}: {}", dir, e.toString());
    }
    // The fallback stays: if the newest is ever damaged, recovery falls back to it (and
    // refuses to open, rather than lose data, if the log it needs is gone).
    Path fallback = keep < 0 ? null : file(dir, keep);
    for (Path p : list(dir)) {
      if (!p.equals(target) && !p.equals(fallback)) {
        Files.deleteIfExists(p);
      }
    }
  }

  private static Path file(Path dir, long version) {
    return dir.resolve(String.format("%020d%s", version, SUFFIX));
  }

  /** Up to {@code n} intact checkpoints, newest first. */
  static List<Loaded> loadNewest(Path dir, int n) throws IOException {
    List<Path> all = list(dir);
    List<Loaded> out = new ArrayList<>();
    for (int i = all.size() - 1; i >= 0 && out.size() < n; i--) {
      try {
        out.add(load(all.get(i)));
      } catch (IOException | RuntimeException e) {
        LOG.warn("skipping damaged checkpoint {}: {}", all.get(i), e.toString());
      }
    }
    return out;
  }

  /**
   * The whole file's CRC is checked before anything is parsed, so damage is never read
   * as a count; and each count is checked against the bytes left, so that even a file
   * with a sound CRC (written by a bug) cannot make the loader allocate beyond its size.
   */
  private static Loaded load(Path file) throws IOException {
    long size = Files.size(file);
    try {
      checkCrc(file, size);
      try (InputStream raw = new BufferedInputStream(Files.newInputStream(file), 1 << 16)) {
        BoundedInputStream body = new BoundedInputStream(raw, size - TRAILER);
        DataInputStream in = new DataInputStream(body);
        if (in.readInt() != MAGIC || in.readInt() != FORMAT) {
          throw new IOException("not a Týr checkpoint of format " + FORMAT);
        }
        long version = in.readLong();
        long segment = in.readLong();
        long offset = in.readLong();
        int count = count(in, MIN_BLOB_BYTES, body::left, "blobs");
        List<BlobState> blobs = new ArrayList<>(count);
        for (int i = 0; i < count; i++) {
          blobs.add(BlobState.readFrom(in, body::left));
        }
        if (in.read() >= 0) {
          throw new IOException("bytes after the last blob");
        }
        return new Loaded(version, segment, offset, blobs);
      }
    } catch (EOFException e) {
      throw new IOException("truncated", e);
    }
  }

  private static void checkCrc(Path file, long size) throws IOException {
    if (size < TRAILER) {
      throw new EOFException();
    }
    CRC32C crc = new CRC32C();
    try (InputStream raw = new BufferedInputStream(Files.newInputStream(file), 1 << 16)) {
      new CheckedInputStream(new BoundedInputStream(raw, size - TRAILER), crc)
          .transferTo(OutputStream.nullOutputStream());
      DataInputStream trailer = new DataInputStream(raw);
      if (trailer.readInt() != (int) crc.getValue() || trailer.readInt() != MAGIC) {
        throw new IOException("checksum mismatch");
      }
    }
  }

  /** Reads a count of entries of at least {@code entryBytes} each that must fit in {@code left}. */
  static int count(DataInputStream in, int entryBytes, LongSupplier left, String what)
      throws IOException {
    int n = in.readInt();
    if (n < 0 || (long) n * entryBytes > left.getAsLong()) {
      throw new IOException(n + " " + what + " cannot fit in the " + left.getAsLong()
          + " bytes left");
    }
    return n;
  }

  private static List<Path> list(Path dir) throws IOException {
    try (Stream<Path> files = Files.list(dir)) {
      return files.filter(p -> p.getFileName().toString().endsWith(SUFFIX)).sorted().toList();
    }
  }

  /** At most {@code limit} bytes of another stream, so the trailer stays unread. */
  private static final class BoundedInputStream extends java.io.FilterInputStream {
    private long left;

    BoundedInputStream(InputStream in, long limit) {
      super(in);
      this.left = limit;
    }

    long left() {
      return left;
    }

    @Override
    public int read() throws IOException {
      if (left <= 0) {
        return -1;
      }
      int b = super.read();
      if (b >= 0) {
        left--;
      }
      return b;
    }

    @Override
    public int read(byte[] b, int off, int len) throws IOException {
      if (left <= 0) {
        return -1;
      }
      int n = super.read(b, off, (int) Math.min(len, left));
      if (n > 0) {
        left -= n;
      }
      return n;
    }
  }
}
