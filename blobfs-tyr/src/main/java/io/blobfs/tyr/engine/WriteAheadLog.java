package io.blobfs.tyr.engine;

import java.io.Closeable;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.stream.Stream;
import java.util.zip.CRC32C;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The log that is also the data store: each committed transaction is one record holding
 * its bytes and its ops, and blob extents point into the records. Segments are
 * append-only files {@code <id>.tyrlog}; a record never spans two.
 *
 * <pre>
 * record  = header(44) data... opTable
 * header  = magic u32 | opCount u32 | bodyLength u64 | version u64 | timestamp u64
 *           | opTableOffset u32 | bodyCrc u32 | headerCrc u32       (big-endian, CRC32C)
 * </pre>
 *
 * The header is written last, over a placeholder, so a record torn by a crash has a bad
 * header or a bad body CRC and is cut off at recovery: a transaction is in the log whole
 * or not at all. Appends are made by one thread at a time (the engine's commit lock);
 * reads of written positions may run concurrently.
 */
final class WriteAheadLog implements Closeable {
  private static final Logger LOG = LoggerFactory.getLogger(WriteAheadLog.class);
  static final int MAGIC = 0x54595231; // "TYR1"
  static final int HEADER_BYTES = 44;
  /** The op table's offset is a u32: a record's body stays well under 2 GiB. */
  static final long MAX_RECORD_BYTES = 1L << 30;
  private static final String SUFFIX = ".tyrlog";

  /** Receives each intact record at recovery, in commit order. */
  interface Replay {
    void record(long version, long timestamp, long segment, long recordStart, List<LogOp> ops)
        throws IOException;
  }

  private final Path dir;
  private final long segmentBytes;
  private final Map<Long, InterruptProofChannel> channels = new ConcurrentHashMap<>();
  private final Object syncMonitor = new Object();
  private InterruptProofChannel current;
  // Volatile only so that positionNow() may read them without the commit lock.
  private volatile long currentId;
  private volatile long pos;
  // Volatile too: the replicator's vouching watermark reads it (TyrEngine.lastCommit) from
  // ring-install and repair threads, without the commit lock, and must see the last append
  private volatile long lastVersion;
  private volatile long appendedVersion;

  private long recordStart = -1;
  private long recordVersion;
  private long recordTimestamp;
  private CRC32C bodyCrc;

  private WriteAheadLog(Path dir, long segmentBytes) {
    this.dir = dir;
    this.segmentBytes = segmentBytes;
  }

  /** A place in the log between two records. */
  record Position(long segment, long offset) {}

  /**
   * Opens the log in {@code dir}, replaying every intact record from {@code start} on
   * (earlier segments are opened for reading only: a checkpoint covers their records)
   * after commit {@code startVersion}.
   */
  static WriteAheadLog open(Path dir, long segmentBytes, Position start, long startVersion,
      Replay replay) throws IOException {
    OwnerOnly.createDirectories(dir);
    WriteAheadLog log = new WriteAheadLog(dir, segmentBytes);
    log.lastVersion = startVersion;
    try {
      log.recover(start, replay);
    } catch (IOException | RuntimeException e) {
      log.close();
      throw e;
    }
    return log;
  }

  private void recover(Position start, Replay replay) throws IOException {
    List<Long> ids = new ArrayList<>();
    try (Stream<Path> files = Files.list(dir)) {
      files.map(p -> p.getFileName().toString()).filter(n -> n.endsWith(SUFFIX))
          .forEach(n -> ids.add(Long.parseLong(n.substring(0, n.length() - SUFFIX.length()))));
    }
    ids.sort(null);
    if (start.segment() == 1 && start.offset() == 0 && !ids.isEmpty() && ids.get(0) != 1) {
      throw new IOException("Týr log starts at segment " + segmentPath(ids.get(0))
          + " but no checkpoint could be loaded: the records before it are gone; refusing "
          + "to open rather than lose data");
    }
    if (start.segment() > 1 && !ids.contains(start.segment())) {
      throw new IOException("Týr log is incomplete: the checkpoint resumes in segment "
          + segmentPath(start.segment()) + ", which is missing");
    }
    // Only segments before the resume point are ever deleted. A gap after it would lose
    // records unseen, since commit numbers may jump where a segment begins.
    for (int i = 1; i < ids.size(); i++) {
      if (ids.get(i) > start.segment() && ids.get(i) != ids.get(i - 1) + 1) {
        throw new IOException("Týr log is incomplete: segment " + segmentPath(ids.get(i) - 1)
            + " is missing");
      }
    }
    for (int i = 0; i < ids.size(); i++) {
      long id = ids.get(i);
      InterruptProofChannel ch = openChannel(id);
      if (id < start.segment()) {
        continue; // covered by the checkpoint; kept for the bytes it still holds
      }
      long end = replaySegment(id, ch, id == start.segment() ? start.offset() : 0, replay);
      if (end < ch.size()) {
        if (i < ids.size() - 1) {
          throw new IOException("Týr log is corrupt: segment " + segmentPath(id)
              + " has a bad record at byte " + end + " and later segments follow it");
        }
        LOG.warn("discarding {} bytes of an unfinished record at the end of {}",
            ch.size() - end, segmentPath(id));
        ch.truncate(end);
        ch.force(true);
      }
      current = ch;
      currentId = id;
      pos = end;
    }
    if (current == null) {
      startSegment(Math.max(1, start.segment()));
    } else if (pos > 0) {
      // Each run appends to a fresh segment, so the last run's becomes sealed and can be
      // compacted (a small store might otherwise never fill a segment).
      roll();
    }
    appendedVersion = lastVersion;
  }

  /** Replays the intact records of one segment; returns where the intact part ends. */
  private long replaySegment(long id, InterruptProofChannel ch, long from, Replay replay)
      throws IOException {
    long size = ch.size();
    long at = from;
    ByteBuffer header = ByteBuffer.allocate(HEADER_BYTES);
    ByteBuffer scratch = ByteBuffer.allocateDirect(1 << 20);
    while (at + HEADER_BYTES <= size) {
      header.clear();
      ch.readFully(header, at);
      header.flip();
      if (header.getInt(0) != MAGIC) {
        return at;
      }
      CRC32C hc = new CRC32C();
      hc.update(header.array(), 0, HEADER_BYTES - 4);
      if ((int) hc.getValue() != header.getInt(HEADER_BYTES - 4)) {
        return at;
      }
      int opCount = header.getInt(4);
      long bodyLength = header.getLong(8);
      long version = header.getLong(16);
      long timestamp = header.getLong(24);
      int opTableOffset = header.getInt(32);
      int bodyCrcValue = header.getInt(36);
      long bodyStart = at + HEADER_BYTES;
      if (bodyLength < 0 || bodyStart + bodyLength > size || opTableOffset < 0
          || opTableOffset > bodyLength) {
        return at;
      }
      CRC32C bc = new CRC32C();
      for (long p = bodyStart; p < bodyStart + bodyLength; ) {
        scratch.clear().limit((int) Math.min(scratch.capacity(), bodyStart + bodyLength - p));
        ch.readFully(scratch, p);
        scratch.flip();
        p += scratch.remaining();
        bc.update(scratch);
      }
      if ((int) bc.getValue() != bodyCrcValue) {
        return at;
      }
      // Numbers go up by one within a run. A run may start above the last one's numbers
      // (VersionCeiling), and its first record is the first of a segment, as each run
      // appends to a fresh one; recover() has made sure no segment is missing.
      if (version <= lastVersion || (version != lastVersion + 1 && at != 0)) {
        throw new IOException("Týr log is corrupt: record at byte " + at + " of "
            + segmentPath(id) + " has commit " + version + " after commit " + lastVersion);
      }
      ByteBuffer table = ByteBuffer.allocate((int) (bodyLength - opTableOffset));
      ch.readFully(table, bodyStart + opTableOffset);
      table.flip();
      List<LogOp> ops = new ArrayList<>(opCount);
      for (int i = 0; i < opCount; i++) {
        ops.add(LogOp.decode(table));
      }
      replay.record(version, timestamp, id, at, ops);
      lastVersion = version;
      at = bodyStart + bodyLength;
    }
    return at;
  }

  long lastVersion() {
    return lastVersion;
  }

  /** Where the next record will start; valid between records (under the commit lock). */
  Position position() {
    return new Position(currentId, pos);
  }

  /** Where appends have got to, read without the commit lock (an estimate). */
  Position positionNow() {
    return new Position(currentId, pos);
  }

  /** Segments no longer appended to, with their sizes. */
  Map<Long, Long> sealedSegments() throws IOException {
    Map<Long, Long> out = new java.util.TreeMap<>();
    long head = currentId;
    for (Map.Entry<Long, InterruptProofChannel> e : channels.entrySet()) {
      if (e.getKey() < head) {
        out.put(e.getKey(), e.getValue().size());
      }
    }
    return out;
  }

  /** Removes a sealed segment: the caller has made sure nothing reads or replays it. */
  void deleteSegment(long id) throws IOException {
    if (id >= currentId) {
      throw new IllegalStateException("segment " + id + " is still being written");
    }
    InterruptProofChannel ch = channels.remove(id);
    if (ch != null) {
      ch.close();
    }
    Files.deleteIfExists(segmentPath(id));
  }

  // ------------------------------------------------------------------ appending

  /** Starts the record of commit {@code version}; the caller holds the commit lock. */
  void begin(long version, long timestamp) throws IOException {
    if (recordStart >= 0) {
      throw new IllegalStateException("a record is already open");
    }
    if (pos >= segmentBytes) {
      roll();
    }
    recordStart = pos;
    recordVersion = version;
    recordTimestamp = timestamp;
    bodyCrc = new CRC32C();
    pos += HEADER_BYTES;
  }

  long segment() {
    return currentId;
  }

  long recordStart() {
    return recordStart;
  }

  /** Appends bytes to the open record; returns their file position in {@link #segment}. */
  long appendData(ByteBuffer src) throws IOException {
    if (pos - recordStart + src.remaining() > MAX_RECORD_BYTES) {
      throw new io.blobfs.tyr.api.TyrException(io.blobfs.tyr.api.ErrorCode.TOO_LARGE,
          "a transaction may log at most " + (MAX_RECORD_BYTES >> 20) + " MiB");
    }
    long at = pos;
    ByteBuffer b = src.duplicate();
    bodyCrc.update(b.duplicate());
    int n = b.remaining();
    current.writeFully(b, pos);
    pos += n;
    return at;
  }

  /** Seals the open record with its op table; it is replayable once the bytes are on disk. */
  void finish(List<LogOp> ops) throws IOException {
    int tableBytes = 0;
    for (LogOp op : ops) {
      tableBytes += op.encodedSize();
    }
    ByteBuffer table = ByteBuffer.allocate(tableBytes);
    for (LogOp op : ops) {
      op.encode(table);
    }
    table.flip();
    long opTableOffset = pos - recordStart - HEADER_BYTES;
    appendData(table);
    ByteBuffer header = ByteBuffer.allocate(HEADER_BYTES);
    header.putInt(MAGIC).putInt(ops.size()).putLong(pos - recordStart - HEADER_BYTES)
        .putLong(recordVersion).putLong(recordTimestamp).putInt((int) opTableOffset)
        .putInt((int) bodyCrc.getValue());
    CRC32C hc = new CRC32C();
    hc.update(header.array(), 0, HEADER_BYTES - 4);
    header.putInt((int) hc.getValue());
    header.flip();
    current.writeFully(header, recordStart);
    synchronized (syncMonitor) {
      appendedVersion = recordVersion;
    }
    lastVersion = recordVersion;
    recordStart = -1;
  }

  /** Drops the open record: nothing of it will be replayed. */
  void abort() throws IOException {
    if (recordStart < 0) {
      return;
    }
    pos = recordStart;
    recordStart = -1;
    current.truncate(pos);
  }

  // ------------------------------------------------------------------ durability

  /** Forces what is appended to disk; returns the last commit now durable. */
  long force() throws IOException {
    InterruptProofChannel ch;
    long version;
    synchronized (syncMonitor) {
      version = appendedVersion;
      ch = current;
    }
    ch.force(false);
    return version;
  }

  private void roll() throws IOException {
    current.force(true);
    startSegment(currentId + 1);
  }

  private void startSegment(long id) throws IOException {
    InterruptProofChannel ch = openChannel(id);
    forceDirectory();
    synchronized (syncMonitor) {
      current = ch;
      currentId = id;
    }
    pos = 0;
  }

  /** A new file's name is durable only once its directory is synced. */
  private void forceDirectory() throws IOException {
    try {
      Durable.forceDirectory(dir);
    } catch (IOException e) {
      LOG.debug("cannot sync directory {}: {}", dir, e.toString());
    }
  }

  private InterruptProofChannel openChannel(long id) throws IOException {
    InterruptProofChannel ch = InterruptProofChannel.open(segmentPath(id));
    channels.put(id, ch);
    return ch;
  }

  private Path segmentPath(long id) {
    return dir.resolve(fileName(id));
  }

  /** The name of segment {@code id}'s file in the log's directory. */
  static String fileName(long id) {
    return String.format("%020d%s", id, SUFFIX);
  }

  // ------------------------------------------------------------------ reading

  /** Fills {@code dst} from a segment; safe concurrently with appends. */
  void read(long segment, long position, ByteBuffer dst) throws IOException {
    InterruptProofChannel ch = channels.get(segment);
    if (ch == null) {
      throw new IOException("Týr log segment " + segment + " is gone");
    }
    ch.readFully(dst, position);
  }

  /** Bytes in all segments. */
  long diskBytes() throws IOException {
    long total = 0;
    for (InterruptProofChannel ch : channels.values()) {
      total += ch.size();
    }
    return total;
  }

  @Override
  public void close() throws IOException {
    IOException first = null;
    for (InterruptProofChannel ch : channels.values()) {
      try {
        if (ch.isOpen()) {
          if (ch == current) {
            ch.force(true);
          }
          ch.close();
        }
      } catch (IOException e) {
        first = first == null ? e : first;
      }
    }
    channels.clear();
    if (first != null) {
      throw first;
    }
  }
}
