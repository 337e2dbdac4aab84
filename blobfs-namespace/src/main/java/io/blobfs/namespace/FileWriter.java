package io.blobfs.namespace;

import io.blobfs.store.CopiesOnWrite;
import io.blobfs.store.Futures;
import io.blobfs.store.InProcess;
import java.io.Closeable;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.BitSet;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;

/**
 * Writes one new file: bytes are gathered into buffers and sent to the stripe blobs of a
 * fresh file id while the caller goes on writing; {@link #close()} waits for them and
 * then publishes the record, so the file appears whole or not at all. Small files never
 * touch a data blob: their bytes go into the record.
 *
 * <p>A new version of an existing file ({@link BlobNamespace#createVersion}) may instead
 * name some stripes of the version it replaces ({@link #takeOver}) and write only the
 * others; it is published only over that version ({@link BaseChangedException}).
 *
 * <p>Memory is bounded by one buffer plus {@link NamespaceOptions#maxWriteBytesInFlight()},
 * whatever the file size. Not thread-safe (like any OutputStream).
 */
public final class FileWriter implements Closeable {
  private static final int INITIAL_BUFFER = 64 << 10;

  private final BlobNamespace ns;
  private final FsPath path;
  private final boolean overwrite;
  private final String fileId;
  private final NamespaceOptions options;
  private final long maxOp;
  private final boolean storeCopies;
  private final boolean inProcess;
  private final ArrayDeque<InFlight> inFlight = new ArrayDeque<>();
  private long inFlightBytes;
  private ByteBuffer buffer;
  /**
   * Where the next store write goes: the bytes handed to the store so far, front to back,
   * unless {@link #seek} moved it; the buffer holds the bytes after it.
   */
  private long sent;
  /** The end of the furthest byte handed to the store, wherever it went. */
  private long extent;
  /** Moved by {@link #seek}: never an inline file, and its length is its extent. */
  private boolean positional;
  private boolean closed;
  /** close() handed the record to the namespace's commit. */
  private boolean committing;
  /** The time the record is published with; -1: the time of close(). */
  private long modificationTime = -1;
  private IOException failure;
  /** Held from before the first stripe is sent until the file is published or discarded. */
  private DataLocks.Lock lock;
  private long lockRenewedNanos;

  /** The stripe size of this file: its base's for a new version (I4), else the options'. */
  private final long stripeSize;
  /**
   * The version this one was made from ({@link BlobNamespace#createVersion}), else null:
   * the commit is then conditional on the name still holding it ({@link TakeoverCommit}).
   */
  private final FileRecord base;
  /** Stripes named from the base instead of written ({@link #takeOver}). */
  private final BitSet taken = new BitSet();
  /** Stripes this writer sent bytes into: never taken over (I3). */
  private final BitSet written = new BitSet();
  /**
   * For a version: the byte ranges sent into each stripe (start to end within the stripe,
   * merged), so that {@link #close} refuses one not covered whole (I4). Ranges, not a
   * count: a range sent twice would otherwise make up for a hole (second review, SF1).
   * Each send lies within one stripe (chunks are cut at stripe boundaries).
   */
  private final Map<Long, java.util.TreeMap<Long, Long>> sentPerStripe = new HashMap<>();
  /** The length set by {@link #setLength}, else -1: the end of the furthest byte. */
  private long declaredLength = -1;
  /** The record {@link #close()} committed; null until it returned normally. */
  private FileRecord publishedRecord;

  /** Buffers whose writes completed, kept for the next chunks: no allocation per chunk. */
  private final ArrayDeque<ByteBuffer> spares = new ArrayDeque<>();

  private record InFlight(CompletableFuture<Void> done, int bytes, ByteBuffer buffer) {}

  FileWriter(BlobNamespace ns, FsPath path, boolean overwrite, String fileId) {
    this(ns, path, overwrite, fileId, null);
  }

  /** A new version of {@code base} at {@code path} ({@link BlobNamespace#createVersion}). */
  FileWriter(BlobNamespace ns, FsPath path, String fileId, FileRecord base) {
    this(ns, path, true, fileId, base);
  }

  private FileWriter(BlobNamespace ns, FsPath path, boolean overwrite, String fileId,
      FileRecord base) {
    this.ns = ns;
    this.path = path;
    this.overwrite = overwrite;
    this.fileId = fileId;
    this.options = ns.options();
    this.base = base;
    // A version keeps its base's stripe size, so that stripe s of both covers the same
    // bytes (I4); an inline base has no stripes to take and gives none.
    this.stripeSize = base != null && base.stripeCount() > 0 ? base.stripeSize()
        : options.stripeSize();
    this.maxOp = ns.calls().store().limits().maxOpBytes();
    this.storeCopies = ns.calls().store() instanceof CopiesOnWrite;
    this.inProcess = ns.calls().store() instanceof InProcess;
  }

  public FsPath path() {
    return path;
  }

  /** The fresh id naming this file's data blobs (the soak test maps ids to its writes). */
  String fileId() {
    return fileId;
  }

  /** Where the next byte written goes: bytes written so far, unless {@link #seek} moved it. */
  public long position() {
    return sent + (buffer == null ? 0 : buffer.position());
  }

  /**
   * Names stripes of the base version ({@link BlobNamespace#createVersion}) instead of
   * writing them: this version's stripe {@code s} is then the base's key for it, which
   * holds the same bytes (written once, never changed: I3). Returns the stripes accepted,
   * a subset of {@code stripes}; every other stripe below the length must be written by
   * this writer before {@link #close()}. A stripe is refused (DESIGN §2.2 I4) if this
   * writer sent bytes into it, if the base has no such stripe, or unless both versions
   * cover it whole ({@code (s+1)*S <= min(base length, length)}) or it is the last
   * stripe of both with equal lengths; the length is the one {@link #setLength} set, so
   * set it first (else the base's is assumed, and {@link #close()} checks again against
   * the final length, failing before any put). When the map would exceed 16 borrowed ids
   * or its 4 KiB header, the stripes of the rarest ids are refused first. Writing into an
   * accepted stripe afterwards fails the writer (nothing is published).
   *
   * @throws IllegalStateException if this writer was not made by createVersion
   */
  public BitSet takeOver(BitSet stripes) throws IOException {
    checkOpen();
    if (base == null) {
      throw new IllegalStateException("only a writer made by createVersion takes over stripes");
    }
    long length = declaredLength >= 0 ? declaredLength : base.length();
    BitSet want = (BitSet) taken.clone();
    for (int s = stripes.nextSetBit(0); s >= 0; s = stripes.nextSetBit(s + 1)) {
      if (mayTake(s, length)) {
        want.set(s);
      }
    }
    while (true) {
      try {
        mapFor(want, length);
        break;
      } catch (RecordTooLargeException | IllegalArgumentException tooMany) {
        if (want.isEmpty()) {
          break; // nothing left to drop: takes nothing (the dues alone, ~18 ids at most, fit)
        }
        dropRarest(want);
      }
    }
    taken.clear();
    taken.or(want);
    BitSet accepted = (BitSet) stripes.clone();
    accepted.and(taken);
    return accepted;
  }

  /** I4 for stripe {@code s}, this version being {@code length} bytes long. */
  private boolean mayTake(long s, long length) {
    long baseLength = base.length();
    long baseStripes = base.stripeCount();
    boolean covered = (s + 1) * stripeSize <= Math.min(baseLength, length)
        || s == baseStripes - 1 && baseLength == length;
    return !base.isInline() && base.stripeSize() == stripeSize && s < baseStripes
        && !written.get((int) s) && !buffered(s) && covered;
  }

  /** Whether bytes written into stripe {@code s} wait in the buffer (sent later). */
  private boolean buffered(long s) {
    return buffer != null && buffer.position() > 0
        && s >= sent / stripeSize && s <= (position() - 1) / stripeSize;
  }

  /** The map naming the base's keys of {@code stripes}: flattened, one run per id change. */
  private StripeMap mapFor(BitSet stripes, long length) throws RecordTooLargeException {
    List<String> ids = new ArrayList<>();
    List<StripeMap.Run> runs = new ArrayList<>();
    long first = -1;
    long count = 0;
    int index = -1;
    for (int s = stripes.nextSetBit(0); s >= 0; s = stripes.nextSetBit(s + 1)) {
      String id = baseIdOf(s);
      int i = ids.indexOf(id);
      if (i < 0) {
        ids.add(id);
        i = ids.size() - 1;
      }
      if (i == index && s == first + count) {
        count++;
        continue;
      }
      if (index >= 0) {
        runs.add(new StripeMap.Run(first, count, index));
      }
      first = s;
      count = 1;
      index = i;
    }
    if (index >= 0) {
      runs.add(new StripeMap.Run(first, count, index));
    }
    StripeMap map = new StripeMap(ids, runs);
    // Checked as stored: the header limit, and the runs within this version's stripes,
    // with the cleanup dues a commit may add (review M2: RADOS always, transactions when
    // the cleanup passes one commit), so that a map accepted here is one close() can send.
    FileRecord mapped = FileRecord.striped(fileId, Math.max(length, 1), 0, stripeSize)
        .withStripes(map, List.of());
    mapped.withStripes(map, TakeoverCommit.duesFor(base, mapped));
    return map;
  }

  /** The id whose key holds the base's stripe {@code s}: borrowed by the base, or its own. */
  private String baseIdOf(long s) {
    String borrowed = base.map().idOf(s);
    return borrowed == null ? base.fileId() : borrowed;
  }

  private void dropRarest(BitSet stripes) {
    Map<String, Integer> counts = new LinkedHashMap<>();
    for (int s = stripes.nextSetBit(0); s >= 0; s = stripes.nextSetBit(s + 1)) {
      counts.merge(baseIdOf(s), 1, Integer::sum);
    }
    String rarest = counts.entrySet().stream().min(Map.Entry.comparingByValue()).get().getKey();
    for (int s = stripes.nextSetBit(0); s >= 0; s = stripes.nextSetBit(s + 1)) {
      if (baseIdOf(s).equals(rarest)) {
        stripes.clear(s);
      }
    }
  }

  /**
   * Publishes the file with this length, whatever was written: a new version that takes
   * stripes over ({@link #takeOver}) writes only the others, so its length is not the end
   * of its furthest byte. Set it before {@link #takeOver}. The file is then never inline;
   * every stripe below it must be written whole or taken over ({@link #close} checks).
   *
   * @throws IllegalArgumentException if bytes were sent past it, or a stripe taken over
   *     would no longer be whole in both versions
   * @throws IllegalStateException if this writer was not made by createVersion (a plain
   *     writer's length is the end of its furthest byte)
   */
  public void setLength(long length) throws IOException {
    checkOpen();
    if (base == null) {
      // Review S1: a plain writer has no close() check of its stripes; a length past its
      // bytes would publish a record naming keys never written.
      throw new IllegalStateException("only a writer made by createVersion sets its length");
    }
    if (length < 0 || length < extent) {
      throw new IllegalArgumentException("length " + length + " is below the "
          + extent + " bytes already sent");
    }
    for (int s = taken.nextSetBit(0); s >= 0; s = taken.nextSetBit(s + 1)) {
      if (!mayTake(s, length)) {
        throw new IllegalArgumentException("stripe " + s + " was taken over; a length of "
            + length + " would leave it partly outside this version");
      }
    }
    declaredLength = length;
    positional = true;
  }

  /**
   * Continues the file at byte {@code offset}: what is buffered goes to the store first,
   * and the next bytes written go there. A POSIX front end (the FUSE mount) sends the
   * ranges of a file as they are written, in any order, not front to back: N processes
   * each filling a part of one file, or one writing it in an order of its own. The file's
   * length at {@link #close} is the end of the furthest byte written; the caller must have
   * written every byte below it (a stripe range never written would read as zeros, and a
   * stripe never written at all is a blob missing). Such a file is never inline.
   */
  public void seek(long offset) throws IOException {
    checkOpen();
    if (offset < 0) {
      throw new IllegalArgumentException("negative offset " + offset);
    }
    if (offset == position()) {
      return;
    }
    if (buffer != null && buffer.position() > 0) {
      send();
    }
    buffer = null; // an empty one may be the small first buffer, sized for front-to-back
    positional = true;
    sent = offset;
  }

  /**
   * Sends what is buffered and waits until the store acknowledged every write so far. A
   * caller about to write a range a second time ({@link #seek} back over bytes already
   * sent: the FUSE mount re-sends a chunk of a passed-through file that changed after its
   * early upload) calls this first, because two writes of one range in flight together may
   * be applied in either order (RADOS ops to one object on separate ops, a Týr cluster's
   * replicas, a store's thread pool), and the older bytes could land last. Once the first
   * write is acknowledged, every store applies a later write of the same range over it
   * ({@code BlobStoreContract.aSecondWriteOfARangeReplacesTheFirstsBytes}), and the
   * record committed at {@link #close} names the blob holding the second bytes.
   */
  public void awaitWrites() throws IOException {
    checkOpen();
    if (buffer != null && buffer.position() > 0) {
      send();
    }
    while (!inFlight.isEmpty()) {
      awaitOldest();
    }
  }

  public void write(byte[] b, int off, int len) throws IOException {
    checkOpen();
    Objects.checkFromIndexSize(off, len, b.length);
    // On a CopiesOnWrite store an application write at least as large as a write buffer,
    // with nothing buffered, is a store call of its own: copying it first would only cost.
    // On an InProcess store every write is, once the file is too long to be inline.
    boolean direct = inProcess ? position() + len > options.inlineThreshold()
        : storeCopies && len >= chunkLimit() && (buffer == null || buffer.position() == 0);
    if (direct) {
      if (buffer != null && buffer.position() > 0) {
        send(); // the bytes gathered while the file could still be inline go first
      }
      while (len > 0) {
        int n = (int) Math.min(len, chunkLimit());
        send(ByteBuffer.wrap(b, off, n), false);
        off += n;
        len -= n;
      }
      return;
    }
    while (len > 0) {
      long limit = chunkLimit();
      if (buffer == null) {
        buffer = newBuffer(limit);
      } else if (!buffer.hasRemaining()) {
        grow(limit);
      }
      int n = (int) Math.min(len, Math.min(buffer.remaining(), limit - buffer.position()));
      buffer.put(b, off, n);
      off += n;
      len -= n;
      if (buffer.position() == limit) {
        send();
      }
    }
  }

  /**
   * Writes the next {@code count} bytes of the file from {@code src}, starting at {@code
   * position} in it, read straight into this writer's buffers: one copy of each byte from
   * the channel (a FUSE mount's staged file, in the page cache) to the store, where
   * reading into an array first and {@link #write(byte[], int, int)} make three. Bytes
   * past the channel's end are zeros (a file extended by truncate ends in a hole).
   */
  public void transferFrom(FileChannel src, long position, long count) throws IOException {
    transferFrom(src, position, count, null);
  }

  /**
   * As {@link #transferFrom(FileChannel, long, long)}, adding the bytes sent to {@code sum}
   * (null: none): a checksum of exactly what went to the store, read once, where reading
   * the channel a second time could find other bytes (the FUSE mount compares it with
   * the staged file later, to tell whether that changed since).
   */
  public void transferFrom(FileChannel src, long position, long count,
      java.util.zip.Checksum sum) throws IOException {
    checkOpen();
    while (count > 0) {
      long limit = chunkLimit();
      if (buffer == null) {
        buffer = newBuffer(limit);
      } else if (!buffer.hasRemaining()) {
        grow(limit);
      }
      int n = (int) Math.min(count, Math.min(buffer.remaining(), limit - buffer.position()));
      ByteBuffer window = buffer.duplicate().limit(buffer.position() + n);
      int got = src.read(window, position);
      if (got < 0) { // the hole at the end
        for (int i = 0; i < n; i++) {
          buffer.put((byte) 0);
        }
        got = n;
      } else {
        buffer.position(buffer.position() + got);
      }
      if (sum != null) {
        sum.update(buffer.duplicate().flip().position(buffer.position() - got));
      }
      position += got;
      count -= got;
      if (buffer.position() == limit) {
        send();
      }
    }
  }

  /** Largest chunk that fits the write buffer, the current stripe and one store op. */
  private long chunkLimit() {
    long leftInStripe = stripeSize - sent % stripeSize;
    return Math.min(Math.min(options.writeBufferSize(), leftInStripe), maxOp);
  }

  /**
   * The first buffer of a file starts small and grows, so that small files cost little;
   * once a chunk has been sent the file is large and buffers are full-size and recycled.
   */
  private ByteBuffer newBuffer(long limit) {
    ByteBuffer recycled = spares.poll();
    if (recycled != null) {
      return recycled.clear();
    }
    // Full-size buffers are direct: a store that talks to native code (librados) can use
    // them in place; they are recycled, so their allocation cost is paid once per stream.
    return sent == 0 && !positional ? ByteBuffer.allocate((int) Math.min(INITIAL_BUFFER, limit))
        : ByteBuffer.allocateDirect(options.writeBufferSize());
  }

  private void grow(long limit) {
    int size = (int) Math.min((long) buffer.capacity() * 2, limit);
    buffer = ByteBuffer.wrap(Arrays.copyOf(buffer.array(), size)).position(buffer.position());
  }

  private void send() throws IOException {
    buffer.flip();
    send(buffer, true);
    buffer = null;
  }

  /** Sends the next bytes of the file; {@code ours}: the buffer may be recycled after. */
  private void send(ByteBuffer chunk, boolean ours) throws IOException {
    long stripe = sent / stripeSize;
    if (taken.get((int) Math.min(stripe, Integer.MAX_VALUE))) {
      // Its key is the base's, written once (I3): this version must not change it, and
      // its own key for the stripe would not be named. Refused before the store is asked.
      failure = new IOException("stripe " + stripe + " of " + path + " was taken over from"
          + " the version it replaces; a writer never writes a stripe it took over");
      throw new IOException("write of " + path + " failed; the file will not be created",
          failure);
    }
    holdLock(false);
    int bytes = chunk.remaining();
    long offset = sent % stripeSize;
    written.set((int) Math.min(stripe, Integer.MAX_VALUE));
    if (base != null) {
      addRange(sentPerStripe.computeIfAbsent(stripe, k -> new java.util.TreeMap<>()), offset,
          offset + bytes);
    }
    CompletableFuture<Void> done =
        ns.calls().write(ns.layout().dataKey(fileId, stripe), offset, chunk);
    inFlight.add(new InFlight(done, bytes, ours ? chunk : null));
    inFlightBytes += bytes;
    sent += bytes;
    extent = Math.max(extent, sent);
    while (!inFlight.isEmpty()
        && (inFlightBytes > options.maxWriteBytesInFlight() || inFlight.peek().done().isDone())) {
      awaitOldest();
    }
  }

  /**
   * Takes the lock on this file's data before the first stripe exists, and renews it once
   * a quarter of its lease has passed (always, with {@code beforePublishing}), so that the
   * orphan sweeper never takes the data of a writer still at work ({@link DataLocks}).
   */
  private void holdLock(boolean beforePublishing) throws IOException {
    Duration lease = options.writerLease();
    long now = System.nanoTime(); // before the lease's expiry is computed: errs short
    try {
      if (lock == null) {
        lock = ns.locks().takeForWriter(fileId, lease);
        lockRenewedNanos = now;
      } else if (beforePublishing || now - lockRenewedNanos > lease.toNanos() / 4) {
        // Before publishing, whatever the local clock says (a suspended VM's stops): the
        // conditional renewal is what proves no sweeper took the data.
        lock = ns.locks().renew(lock, lease);
        lockRenewedNanos = now;
      }
    } catch (IOException e) {
      failure = e;
      throw new IOException("write of " + path + " failed; the file will not be created", e);
    }
  }

  private void awaitOldest() throws IOException {
    InFlight oldest = inFlight.poll();
    inFlightBytes -= oldest.bytes();
    try {
      Futures.await(oldest.done());
      if (oldest.buffer() != null && oldest.buffer().capacity() == options.writeBufferSize()
          && spares.size() <= options.maxWriteBytesInFlight() / options.writeBufferSize()) {
        spares.add(oldest.buffer());
      }
    } catch (IOException e) {
      failure = e;
      throw new IOException("write of " + path + " failed; the file will not be created", e);
    }
  }

  /**
   * Sends what is buffered, waits for every write, then publishes the file. A failure
   * before the record is sent leaves nothing visible and removes the data blobs written so
   * far. Once the record has been sent the data is never removed here, since the record
   * may name it: {@link BlobNamespace#commitFile} says what close() reports then.
   */
  @Override
  public void close() throws IOException {
    if (closed) {
      return;
    }
    closed = true;
    FileRecord record;
    try {
      if (failure != null) {
        throw new IOException("earlier write of " + path + " failed", failure);
      }
      long length = declaredLength >= 0 ? declaredLength : Math.max(extent, position());
      if (length < Math.max(extent, position())) {
        throw new IOException(path + ": bytes written past the length set, "
            + length + "; nothing is published");
      }
      long now = modificationTime >= 0 ? modificationTime : System.currentTimeMillis();
      if (!positional && sent == 0 && length <= options.inlineThreshold() && taken.isEmpty()) {
        byte[] bytes = buffer == null ? new byte[0] : Arrays.copyOf(buffer.array(), (int) length);
        record = FileRecord.inline(fileId, bytes, now, stripeSize);
      } else {
        if (buffer != null && buffer.position() > 0) {
          send();
        }
        while (!inFlight.isEmpty()) {
          awaitOldest();
        }
        holdLock(true);
        record = FileRecord.striped(fileId, length, now, stripeSize);
        if (base != null) {
          record = versionRecord(record);
        }
      }
      buffer = null;
      spares.clear();
    } catch (IOException | RuntimeException e) {
      discardData();
      throw e;
    }
    // A failure that surely published nothing has released the lock with the data
    // (discardData); one whose outcome is unknown keeps it until the lease runs out, so
    // that a put applied late still finds its data.
    boolean striped = !record.isInline();
    committing = true;
    BlobNamespace.Renewal renewal = new BlobNamespace.Renewal() {
      @Override
      public void renew() throws IOException {
        if (striped) {
          holdLock(true);
        }
      }

      @Override
      public boolean held() throws IOException {
        // A delete of the published record takes this lock before it fences the record:
        // see BlobNamespace.dropDues.
        return lock == null || ns.locks().stillHeld(lock);
      }
    };
    if (base != null) {
      ns.commitVersion(path, record, base.fileId(), this::discardData, renewal);
    } else {
      ns.commitFile(path, record, overwrite, this::discardData, renewal);
    }
    releaseLock(); // the record is now what keeps the sweeper away
    publishedRecord = record;
  }

  /**
   * The version {@link #close()} published, as this writer built it (without the cleanup
   * dues a commit may carry for a moment: they name no stripe of it), else null: not
   * closed, or its close failed. A front end that writes the next version of the same
   * file (the FUSE mount) passes it to {@link BlobNamespace#createVersion} as its base:
   * exactly the version whose bytes it holds, where a probe of the name could return
   * another client's newer one.
   */
  public FileInfo published() {
    return publishedRecord == null ? null : FileInfo.file(path, publishedRecord);
  }

  /**
   * {@code record} with the map of the stripes taken over, after the writer rules (I4):
   * each taken stripe still whole in both versions at the final length, and every other
   * stripe below it written whole by this writer, as the ranges sent into it show (a
   * stripe neither written nor taken would be a missing key, one sent in part a short
   * blob or a hole). Throws before anything is put.
   */
  private FileRecord versionRecord(FileRecord record) throws IOException {
    for (int s = taken.nextSetBit(0); s >= 0; s = taken.nextSetBit(s + 1)) {
      if (!mayTake(s, record.length())) {
        throw new IOException(path + ": stripe " + s + " was taken over but is not whole in"
            + " a version of " + record.length() + " bytes (set the length before"
            + " takeOver); nothing is published");
      }
    }
    for (long s = 0; s < record.stripeCount(); s++) {
      int i = (int) Math.min(s, Integer.MAX_VALUE);
      long whole = Math.min(stripeSize, record.length() - s * stripeSize);
      long got = coveredFromStart(sentPerStripe.get(s));
      if (!taken.get(i) && got < whole) {
        throw new IOException(path + ": stripe " + s + " was neither taken over nor written"
            + " whole: its bytes from " + got + " of " + whole + " were never written;"
            + " nothing is published");
      }
    }
    return taken.isEmpty() ? record : record.withStripes(mapFor(taken, record.length()),
        List.of());
  }

  /** Adds {@code [start, end)} to {@code ranges} (start to end, disjoint), merging. */
  static void addRange(java.util.TreeMap<Long, Long> ranges, long start, long end) {
    Map.Entry<Long, Long> before = ranges.floorEntry(start);
    if (before != null && before.getValue() >= start) {
      start = before.getKey();
      end = Math.max(end, before.getValue());
    }
    for (Map.Entry<Long, Long> e = ranges.ceilingEntry(start); e != null && e.getKey() <= end;
        e = ranges.ceilingEntry(start)) {
      end = Math.max(end, e.getValue());
      ranges.remove(e.getKey());
    }
    ranges.put(start, end);
  }

  /** How far from byte 0 {@code ranges} cover without a gap (0 if null or not from 0). */
  static long coveredFromStart(java.util.TreeMap<Long, Long> ranges) {
    if (ranges == null || ranges.isEmpty() || ranges.firstKey() != 0) {
      return 0;
    }
    return ranges.firstEntry().getValue();
  }

  private void releaseLock() {
    if (lock != null) {
      ns.locks().release(lock);
      lock = null;
    }
  }

  /** Gives up: nothing becomes visible and written data is removed. */
  public void abort() {
    if (!closed) {
      closed = true;
      discardData();
    }
  }

  /**
   * Publishes the file with this modification time instead of the time of
   * {@link #close()}: a POSIX front end (the FUSE adapter) keeps the time of the last write
   * or the one utimensat set, so that stat shows one time before and after the close.
   */
  public void setModificationTime(long millis) throws IOException {
    checkOpen();
    if (millis < 0) {
      throw new IllegalArgumentException("negative modification time " + millis);
    }
    modificationTime = millis;
  }

  public boolean isClosed() {
    return closed;
  }

  /**
   * Whether {@link #close()} reached the record's commit: a failure of close after that is
   * the publication's (a lost race, a full store, an outcome unknown), not this writer's
   * (its writes, its lease), and a caller must not take it for a reason to write the file
   * again through another writer.
   */
  public boolean reachedCommit() {
    return committing;
  }

  private void discardData() {
    buffer = null;
    spares.clear();
    for (InFlight f : inFlight) {
      f.done().exceptionally(t -> null).join();
    }
    inFlight.clear();
    long stripes = (Math.max(sent, extent) + stripeSize - 1) / stripeSize;
    for (long s = 0; s < stripes; s++) {
      try {
        ns.calls().delete(ns.layout().dataKey(fileId, s));
      } catch (IOException | RuntimeException e) {
        // The store is failing (the reason this writer gives up, often): one try, not one
        // timeout per stripe. What is left is the orphan sweeper's: no record names it.
        break;
      }
    }
    releaseLock();
  }

  private void checkOpen() throws IOException {
    if (closed) {
      throw new IOException("stream for " + path + " is closed");
    }
  }
}
