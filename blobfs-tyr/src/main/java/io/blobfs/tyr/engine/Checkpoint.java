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
 * skipped for an older one).
 */
final class Checkpoint {
  private static final Logger LOG = LoggerFactory.getLogger(Checkpoint.class);
  private static final int MAGIC = 0x54595243; // "TYRC"
  private static final int FORMAT = 1;
  private static final String SUFFIX = ".tyrckpt";

  /** Replay resumes at {@code offset} of segment {@code segment}. */
  record Loaded(long version, long segment, long offset, List<BlobState> blobs) {}

  private Checkpoint() {}

  static void write(Path dir, long version, long segment, long offset,
      Collection<BlobState> blobs) throws IOException {
    Path tmp = dir.resolve("checkpoint.tmp");
    CRC32C crc = new CRC32C();
    try (OutputStream file = Files.newOutputStream(tmp);
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
    Path target = dir.resolve(String.format("%020d%s", version, SUFFIX));
    Files.move(tmp, target, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
    try (FileChannel d = FileChannel.open(dir, StandardOpenOption.READ)) {
      d.force(true);
    } catch (IOException e) {
      LOG.debug("cannot sync directory {}: {}", dir, e.toString());
    }
    // The one before stays: if the newest is ever damaged, recovery falls back to it (and
    // refuses to open, rather than lose data, if the log it needs is gone).
    List<Path> all = list(dir);
    for (int i = 0; i < all.size() - 2; i++) {
      Files.deleteIfExists(all.get(i));
    }
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

  private static Loaded load(Path file) throws IOException {
    long size = Files.size(file);
    CRC32C crc = new CRC32C();
    try (InputStream raw = new BufferedInputStream(Files.newInputStream(file), 1 << 16)) {
      DataInputStream in = new DataInputStream(new CheckedInputStream(
          new BoundedInputStream(raw, size - 8), crc));
      if (in.readInt() != MAGIC || in.readInt() != FORMAT) {
        throw new IOException("not a Týr checkpoint of format " + FORMAT);
      }
      long version = in.readLong();
      long segment = in.readLong();
      long offset = in.readLong();
      int count = in.readInt();
      List<BlobState> blobs = new ArrayList<>(count);
      for (int i = 0; i < count; i++) {
        blobs.add(BlobState.readFrom(in));
      }
      if (in.read() >= 0) {
        throw new IOException("bytes after the last blob");
      }
      DataInputStream trailer = new DataInputStream(raw);
      if (trailer.readInt() != (int) crc.getValue() || trailer.readInt() != MAGIC) {
        throw new IOException("checksum mismatch");
      }
      return new Loaded(version, segment, offset, blobs);
    } catch (EOFException e) {
      throw new IOException("truncated", e);
    }
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
