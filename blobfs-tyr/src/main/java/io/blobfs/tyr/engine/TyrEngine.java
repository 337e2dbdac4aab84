package io.blobfs.tyr.engine;

import io.blobfs.tyr.api.BlobStat;
import io.blobfs.tyr.api.CommitResult;
import io.blobfs.tyr.api.ErrorCode;
import io.blobfs.tyr.api.ReadCheck;
import io.blobfs.tyr.api.ScanResult;
import io.blobfs.tyr.api.TxOp;
import io.blobfs.tyr.api.TxRequest;
import io.blobfs.tyr.api.TyrException;
import java.io.Closeable;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentSkipListMap;
import java.util.concurrent.locks.ReentrantLock;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One Týr node's storage: blobs in fixed-size chunks, multi-version concurrency control,
 * multi-blob transactions, and the write-ahead log that holds the data.
 *
 * <p><b>Versions.</b> Every commit gets the next commit number and makes new immutable
 * {@link BlobState}s for the blobs it changes. Readers take the state published at the
 * moment they start and read it whole, never blocking writers or seeing a torn mix; old
 * states are reclaimed by the garbage collector once no reader holds them.
 *
 * <p><b>Transactions.</b> Optimistic: the client executes against committed versions,
 * then sends its read set (blob, version) and ops. Commits are validated and logged one at
 * a time under {@link #commitLock}, which is the serialization point (this node's chain of
 * one), so the history is sequentially consistent. A changed read version aborts with
 * {@link ErrorCode#CONFLICT}, retryable; atomic adds are not validated, so counters never
 * conflict.
 *
 * <p><b>Durability.</b> With {@link SyncPolicy#ALWAYS} a commit is published to readers and
 * acknowledged only after the log is forced; concurrent commits share one force (group
 * commit). Until then its states are "staged", seen by the validation of later commits
 * but by no reader.
 */
public final class TyrEngine implements Closeable {
  private static final Logger LOG = LoggerFactory.getLogger(TyrEngine.class);

  private final EngineConfig config;
  private final WriteAheadLog log;
  /** What readers see: the latest durable state of each existing blob. */
  private final ConcurrentSkipListMap<String, BlobState> visible = new ConcurrentSkipListMap<>();
  /** Logged but not yet durable changes; a deleted blob is a {@link BlobState#deleted} mark. */
  private final ConcurrentHashMap<String, BlobState> staged = new ConcurrentHashMap<>();
  private final ReentrantLock commitLock = new ReentrantLock();
  /**
   * Makes publishing a commit atomic for scans: a scan page sees all of a commit's names
   * or none (a directory rename is never half-listed). Point reads need no lock: each
   * blob's state is one reference.
   */
  private final java.util.concurrent.locks.ReadWriteLock publishLock =
      new java.util.concurrent.locks.ReentrantReadWriteLock();
  /**
   * Readers hold it shared while they read extents; deleting a segment takes it
   * exclusively, so no read is ever cut off by a compaction.
   */
  private final java.util.concurrent.locks.ReadWriteLock segmentLock =
      new java.util.concurrent.locks.ReentrantReadWriteLock();
  private final ArrayDeque<Pending> pending = new ArrayDeque<>();
  private final Thread syncer;
  private final Thread reclaimer;
  /** Serialises compactions and checkpoints (the reclaimer's, tests', close's). */
  private final Object compactionMonitor = new Object();
  private volatile boolean closed;
  private volatile IOException failure;

  private record Pending(long version, Map<String, BlobState> changes,
      CompletableFuture<CommitResult> future, CommitResult result) {}

  private TyrEngine(EngineConfig config) throws IOException {
    this.config = config;
    java.nio.file.Files.createDirectories(config.directory());
    List<Checkpoint.Loaded> checkpoints = Checkpoint.loadNewest(config.directory(), 2);
    WriteAheadLog.Position start = new WriteAheadLog.Position(1, 0);
    long startVersion = 0;
    if (!checkpoints.isEmpty()) {
      Checkpoint.Loaded newest = checkpoints.get(0);
      for (BlobState s : newest.blobs()) {
        visible.put(s.key, s);
      }
      start = new WriteAheadLog.Position(newest.segment(), newest.offset());
      startVersion = newest.version();
      lastCheckpointStates = newest.blobs();
      hasCheckpoint = true;
      if (checkpoints.size() > 1) {
        Checkpoint.Loaded older = checkpoints.get(1);
        olderCheckpointStates = older.blobs();
        olderResumeSegment = older.segment();
      }
    }
    this.log = WriteAheadLog.open(config.directory(), config.segmentBytes(), start,
        startVersion, this::replay);
    this.resumePoint = start;
    if (config.compactInterval().isZero()) {
      reclaimer = null;
    } else {
      reclaimer = new Thread(this::reclaimLoop, "tyr-reclaim-"
          + config.directory().getFileName());
      reclaimer.setDaemon(true);
    }
    if (config.syncPolicy() == SyncPolicy.NONE) {
      syncer = null;
    } else {
      syncer = new Thread(this::syncLoop, "tyr-log-sync-" + config.directory().getFileName());
      syncer.setDaemon(true);
      syncer.start();
    }
    if (reclaimer != null) {
      reclaimer.start();
    }
    LOG.info("Týr engine open at {}: {} blobs, last commit {} (checkpoint at {})",
        config.directory(), visible.size(), log.lastVersion(), startVersion);
  }

  /** Opens (creating if needed) the store in {@code config.directory()}, replaying its log. */
  public static TyrEngine open(EngineConfig config) throws IOException {
    return new TyrEngine(config);
  }

  public EngineConfig config() {
    return config;
  }

  private void replay(long version, long timestamp, long segment, long recordStart,
      List<LogOp> ops) {
    for (LogOp op : ops) {
      BlobState next = apply(visible.get(op.key()), op, segment, recordStart, version,
          timestamp);
      if (next == null) {
        visible.remove(op.key());
      } else {
        visible.put(op.key(), next);
      }
    }
  }

  /** The one place a logged op changes a blob: used by commits and by recovery alike. */
  private BlobState apply(BlobState current, LogOp op, long segment, long recordStart,
      long version, long now) {
    BlobState base = current == null
        ? BlobState.fresh(op.key(), version, now, config.chunkBytes()) : current;
    return switch (op.type()) {
      case LogOp.RESET -> BlobState.fresh(op.key(), version, now, config.chunkBytes());
      case LogOp.WRITE -> base.withWrite(op.a(), Math.toIntExact(op.b()), segment,
          recordStart + op.dataPos(), version, now);
      case LogOp.RELOCATE -> base.withWrite(op.a(), Math.toIntExact(op.b()), segment,
          recordStart + op.dataPos(), base.version, base.modifiedMillis);
      case LogOp.SET_SIZE -> base.withSize(op.a(), version, now);
      case LogOp.DELETE -> null;
      default -> throw new IllegalStateException("log op " + op.type());
    };
  }

  // ------------------------------------------------------------------ reads

  /** The newest visible version's metadata ({@link BlobStat#missing} if absent). */
  public BlobStat stat(String key) {
    BlobState s = visible.get(key);
    return s == null ? BlobStat.missing(key) : s.stat();
  }

  /**
   * Reads from {@code offset} of the newest committed version of a blob: as many bytes as
   * it holds there, up to {@code maxLength}, into a buffer of exactly that size got from
   * {@code buffers}. Returns that version's metadata; NOT_FOUND if the blob is absent.
   */
  public BlobStat read(String key, long offset, int maxLength,
      java.util.function.IntFunction<ByteBuffer> buffers) throws IOException {
    checkOpen();
    if (offset < 0 || maxLength < 0) {
      throw new TyrException(ErrorCode.BAD_REQUEST, "negative offset or length: " + offset
          + ", " + maxLength);
    }
    segmentLock.readLock().lock();
    try {
      BlobState s = visible.get(key);
      if (s == null) {
        throw new TyrException(ErrorCode.NOT_FOUND, "no blob " + key);
      }
      int n = (int) Math.max(0, Math.min(maxLength, s.size - offset));
      ByteBuffer dst = buffers.apply(n);
      readState(s, offset, dst);
      return s.stat();
    } finally {
      segmentLock.readLock().unlock();
    }
  }

  /**
   * Fills {@code dst} from {@code offset} with one committed version of the blob, up to
   * its end; returns that version's metadata.
   */
  public BlobStat read(String key, long offset, ByteBuffer dst) throws IOException {
    return read(key, offset, dst.remaining(), n -> dst);
  }

  private void readState(BlobState s, long offset, ByteBuffer dst) throws IOException {
    long end = Math.min(s.size, offset + dst.remaining());
    int chunkBytes = s.chunkBytes();
    for (long at = offset; at < end; ) {
      int index = s.chunkIndex(at);
      int from = (int) (at - (long) index * chunkBytes);
      int to = (int) Math.min(chunkBytes, from + (end - at));
      int cursor = from;
      for (Extent e : s.chunk(index).covering(from, to)) {
        zeros(dst, e.start() - cursor);
        ByteBuffer part = dst.slice(dst.position(), e.length());
        log.read(e.segment(), e.position(), part);
        dst.position(dst.position() + e.length());
        cursor = e.end();
      }
      zeros(dst, to - cursor);
      at += to - from;
    }
  }

  private static void zeros(ByteBuffer dst, int n) {
    for (int i = 0; i < n; i++) {
      dst.put((byte) 0);
    }
  }

  /**
   * One page of the visible keys starting with {@code prefix}, in order, after
   * {@code cursor} (null: from the first).
   */
  public ScanResult scan(String prefix, String cursor, int limit) throws IOException {
    return scan(prefix, cursor, limit, 0);
  }

  /**
   * As {@link #scan(String, String, int)}, with the first {@code headBytes} of each blob
   * (when positive) read from the same committed state as the names.
   */
  public ScanResult scan(String prefix, String cursor, int limit, int headBytes)
      throws IOException {
    if (limit < 1) {
      throw new IllegalArgumentException("limit must be positive: " + limit);
    }
    var tail = cursor == null || cursor.compareTo(prefix) < 0
        ? visible.tailMap(prefix, true) : visible.tailMap(cursor, false);
    List<BlobState> states = new ArrayList<>(Math.min(limit, 1024));
    String next = null;
    if (headBytes > 0) {
      segmentLock.readLock().lock(); // held until the heads are read (released below)
    }
    publishLock.readLock().lock();
    try {
      for (BlobState s : tail.values()) {
        if (!s.key.startsWith(prefix)) {
          break;
        }
        if (states.size() == limit) {
          next = states.get(states.size() - 1).key;
          break;
        }
        states.add(s);
      }
    } finally {
      publishLock.readLock().unlock();
    }
    List<String> keys = new ArrayList<>(states.size());
    List<byte[]> heads = new ArrayList<>(headBytes > 0 ? states.size() : 0);
    for (BlobState s : states) {
      keys.add(s.key);
    }
    if (headBytes > 0) {
      // States are immutable: their bytes can be read after the publish lock is gone.
      try {
        for (BlobState s : states) {
          ByteBuffer head = ByteBuffer.allocate((int) Math.min(headBytes, s.size));
          readState(s, 0, head);
          heads.add(head.array());
        }
      } finally {
        segmentLock.readLock().unlock();
      }
    }
    return new ScanResult(keys, heads, next);
  }

  /** The newest commit number in the log. */
  public long lastCommit() {
    return log.lastVersion();
  }

  public long diskBytes() throws IOException {
    return log.diskBytes();
  }

  // ------------------------------------------------------------------ commits

  /**
   * Validates and applies a transaction. Completes with its commit number once it is
   * durable (per the sync policy) and visible, or exceptionally with a
   * {@link TyrException}, in which case nothing of it was applied.
   */
  public CompletableFuture<CommitResult> commit(TxRequest tx) {
    try {
      checkShape(tx);
    } catch (TyrException e) {
      return CompletableFuture.failedFuture(e);
    }
    CompletableFuture<CommitResult> done = new CompletableFuture<>();
    commitLock.lock();
    try {
      checkOpen();
      for (ReadCheck read : tx.reads()) {
        BlobState s = latest(read.key());
        long now = s == null ? 0 : s.version;
        if (now != read.version()) {
          throw new TyrException(ErrorCode.CONFLICT, "blob " + read.key() + " was read at "
              + "version " + read.version() + " and is now at " + now + "; retry");
        }
      }
      long version = log.lastVersion() + 1;
      long now = System.currentTimeMillis();
      Planner plan = new Planner(version, now, tx.ops().size());
      try {
        log.begin(version, now);
        for (int i = 0; i < tx.ops().size(); i++) {
          plan.values[i] = plan.apply(tx.ops().get(i));
        }
        plan.defragmentTouched();
        if (plan.ops.isEmpty()) {
          log.abort(); // nothing changes: no record, no commit number
          done.complete(new CommitResult(log.lastVersion(), plan.values));
          return done;
        }
        log.finish(plan.ops);
      } catch (Throwable e) {
        throw abandon(e);
      }
      settle(plan, new CommitResult(version, plan.values), done);
    } catch (TyrException e) {
      done.completeExceptionally(e);
    } catch (IOException e) {
      done.completeExceptionally(new TyrException(ErrorCode.SERVER_ERROR, e.toString(), e));
    } finally {
      commitLock.unlock();
    }
    return done;
  }

  /**
   * After a record is logged: publishes it now, or (sync=always) stages it for the syncer
   * to publish once it is on disk. Called under the commit lock, in commit order.
   */
  private void settle(Planner plan, CommitResult result, CompletableFuture<CommitResult> done) {
    if (config.syncPolicy() == SyncPolicy.ALWAYS) {
      Map<String, BlobState> marks = new java.util.HashMap<>();
      for (Map.Entry<String, BlobState> e : plan.work.entrySet()) {
        BlobState mark = e.getValue() == null
            ? BlobState.deleted(e.getKey(), plan.version) : e.getValue();
        staged.put(e.getKey(), mark);
        marks.put(e.getKey(), mark);
      }
      synchronized (pending) {
        pending.add(new Pending(plan.version, marks, done, result));
        pending.notifyAll();
      }
    } else {
      publish(plan.work);
      done.complete(result);
    }
  }

  /** The newest state a commit must see: staged (not yet durable) over visible. */
  private BlobState latest(String key) {
    BlobState s = staged.get(key);
    if (s == null) {
      return visible.get(key);
    }
    return s.isDeleted() ? null : s;
  }

  /** Makes changes visible; a staged entry is dropped only if no later commit replaced it. */
  private void publish(Map<String, BlobState> changes) {
    publishLock.writeLock().lock();
    try {
      publishLocked(changes);
    } finally {
      publishLock.writeLock().unlock();
    }
  }

  private void publishLocked(Map<String, BlobState> changes) {
    for (Map.Entry<String, BlobState> e : changes.entrySet()) {
      BlobState s = e.getValue();
      if (s == null || s.isDeleted()) {
        visible.remove(e.getKey());
      } else {
        visible.put(e.getKey(), s);
      }
      if (s != null) {
        staged.remove(e.getKey(), s);
      }
    }
  }

  /**
   * Drops the open record after {@code e} and says what the caller gets: the request's
   * own error; a refusal for anything else planning threw (a bug or input nothing checked,
   * which must not take the node down); and for a failed log write, a node that refuses
   * writes until restarted, since the log's state on disk is then unknown.
   */
  private TyrException abandon(Throwable e) {
    try {
      log.abort();
    } catch (IOException | RuntimeException abortFailed) {
      fail(abortFailed);
      return new TyrException(ErrorCode.SERVER_ERROR, "the log could not drop a failed record: "
          + abortFailed, abortFailed);
    }
    if (e instanceof TyrException t) {
      return t;
    }
    if (e instanceof IOException io) {
      fail(io);
      return new TyrException(ErrorCode.SERVER_ERROR, "log write failed: " + io, io);
    }
    if (e instanceof Error err && !(e instanceof StackOverflowError)) {
      throw err;
    }
    LOG.warn("a transaction was refused after an unexpected error in planning", e);
    return new TyrException(ErrorCode.BAD_REQUEST, "the transaction could not be applied: "
        + e, e);
  }

  private void checkShape(TxRequest tx) throws TyrException {
    if (tx.ops().isEmpty() && tx.reads().isEmpty()) {
      throw new TyrException(ErrorCode.BAD_REQUEST, "empty transaction");
    }
    for (ReadCheck r : tx.reads()) {
      checkKey(r.key());
    }
    for (TxOp op : tx.ops()) {
      checkKey(op.key());
    }
  }

  private void checkKey(String key) throws TyrException {
    if (key.isEmpty()) {
      throw new TyrException(ErrorCode.BAD_REQUEST, "empty key");
    }
    int bytes = key.getBytes(StandardCharsets.UTF_8).length;
    if (bytes > config.maxKeyBytes()) {
      throw new TyrException(ErrorCode.TOO_LARGE, "key of " + bytes + " bytes is over the "
          + config.maxKeyBytes() + "-byte limit: " + key.substring(0, Math.min(40, key.length()))
          + "...");
    }
  }

  private void checkOpen() throws TyrException {
    if (failure != null) {
      throw new TyrException(ErrorCode.SERVER_ERROR,
          "the log failed and this node refuses writes until restarted: " + failure, failure);
    }
    if (closed) {
      throw new TyrException(ErrorCode.SERVER_ERROR, "the store is closed");
    }
  }

  private void fail(Throwable e) {
    if (failure == null) {
      failure = e instanceof IOException io ? io : new IOException(e);
      LOG.error("Týr log failed; refusing writes until restart", e);
    }
  }

  /** Turns the logical ops of one transaction into logged physical ops and new states. */
  private final class Planner {
    final long version;
    final long now;
    final List<LogOp> ops = new ArrayList<>();
    final Map<String, BlobState> work = new java.util.LinkedHashMap<>();
    /** Chunks this transaction wrote, by blob: candidates for defragmenting. */
    final Map<String, java.util.Set<Integer>> touched = new java.util.LinkedHashMap<>();
    final long[] values;

    Planner(long version, long now, int opCount) {
      this.version = version;
      this.now = now;
      this.values = new long[opCount];
    }

    BlobState current(String key) {
      return work.containsKey(key) ? work.get(key) : latest(key);
    }

    long apply(TxOp op) throws IOException {
      String key = op.key();
      BlobState s = current(key);
      if (op instanceof TxOp.Create c) {
        if (s != null) {
          throw new TyrException(ErrorCode.EXISTS, "blob exists: " + key);
        }
        emit(LogOp.reset(key), null);
      } else if (op instanceof TxOp.Put p) {
        if (p.exclusive() && s != null) {
          throw new TyrException(ErrorCode.EXISTS, "blob exists: " + key);
        }
        checkSize(key, p.data().remaining());
        emit(LogOp.reset(key), null);
        write(key, 0, p.data());
      } else if (op instanceof TxOp.Write w) {
        checkRange(key, w.offset(), w.data().remaining());
        if (s == null) {
          emit(LogOp.reset(key), null);
        }
        write(key, w.offset(), w.data());
      } else if (op instanceof TxOp.Append a) {
        long at = s == null ? 0 : s.size;
        checkRange(key, at, a.data().remaining());
        if (s == null) {
          emit(LogOp.reset(key), null);
        }
        write(key, at, a.data());
        return at;
      } else if (op instanceof TxOp.Truncate t) {
        if (s == null) {
          throw new TyrException(ErrorCode.NOT_FOUND, "no blob " + key);
        }
        checkSize(key, t.size());
        emit(LogOp.setSize(key, t.size()), null);
      } else if (op instanceof TxOp.Delete d) {
        if (s == null) {
          if (d.mustExist()) {
            throw new TyrException(ErrorCode.NOT_FOUND, "no blob " + key);
          }
          return 0;
        }
        emit(LogOp.delete(key), null);
        return 1;
      } else if (op instanceof TxOp.Add a) {
        checkRange(key, a.offset(), 8);
        long value = readLong(s, key, a.offset()) + a.delta();
        write(key, a.offset(), ByteBuffer.allocate(8).putLong(0, value));
        return value;
      } else if (op instanceof TxOp.Cas c) {
        checkRange(key, c.offset(), 8);
        long value = readLong(s, key, c.offset());
        if (value != c.expect()) {
          throw new io.blobfs.tyr.api.CasFailedException(key, c.offset(), c.expect(), value);
        }
        write(key, c.offset(), ByteBuffer.allocate(8).putLong(0, c.update()));
      }
      return 0;
    }

    private long readLong(BlobState s, String key, long offset) throws IOException {
      if (s == null) {
        throw new TyrException(ErrorCode.NOT_FOUND, "no blob " + key);
      }
      if (offset > s.size - 8) {
        throw new TyrException(ErrorCode.BAD_REQUEST, "no 64-bit integer at offset " + offset
            + " of blob " + key + " (" + s.size + " bytes)");
      }
      ByteBuffer b = ByteBuffer.allocate(8);
      readState(s, offset, b);
      return b.getLong(0);
    }

    private void checkSize(String key, long size) throws TyrException {
      checkRange(key, size, 0);
    }

    /** {@code offset + length} within the blob limit, checked without overflowing. */
    private void checkRange(String key, long offset, long length) throws TyrException {
      if (offset < 0 || length < 0 || offset > config.maxBlobBytes() - length) {
        throw new TyrException(ErrorCode.TOO_LARGE, "blob " + key + " would reach byte "
            + offset + " + " + length + ", over the " + config.maxBlobBytes() + "-byte limit");
      }
    }

    private void write(String key, long offset, ByteBuffer data) throws IOException {
      if (!data.hasRemaining()) {
        return;
      }
      int length = data.remaining();
      emit(LogOp.write(key, offset, length, 0), data);
      BlobState s = work.get(key);
      java.util.Set<Integer> chunks = touched.computeIfAbsent(key, k -> new java.util.TreeSet<>());
      for (int i = s.chunkIndex(offset); i <= s.chunkIndex(offset + length - 1); i++) {
        chunks.add(i);
      }
    }

    /**
     * Rewrites as one extent each chunk this transaction left split into too many (by
     * small writes): once per chunk per transaction, however many writes touched it.
     */
    void defragmentTouched() throws IOException {
      for (Map.Entry<String, java.util.Set<Integer>> e : touched.entrySet()) {
        for (int i : e.getValue()) {
          BlobState s = work.get(e.getKey());
          if (s == null || i >= s.chunkCount()
              || s.chunk(i).extentCount() <= config.maxExtentsPerChunk()) {
            continue;
          }
          long start = (long) i * s.chunkBytes();
          ByteBuffer whole = ByteBuffer.allocate((int) Math.min(s.chunkBytes(), s.size - start));
          readState(s, start, whole);
          whole.flip();
          emit(LogOp.write(e.getKey(), start, whole.remaining(), 0), whole);
        }
      }
    }

    /** Moves bytes a blob already holds to the head of the log; the blob keeps its version. */
    void relocate(String key, long offset, ByteBuffer data) throws IOException {
      emit(LogOp.relocate(key, offset, data.remaining(), 0), data);
    }

    private void emit(LogOp op, ByteBuffer data) throws IOException {
      LogOp logged = op;
      if (data != null) {
        long at = log.appendData(data);
        logged = new LogOp(op.type(), op.key(), op.a(), op.b(), at - log.recordStart());
      }
      ops.add(logged);
      work.put(op.key(), TyrEngine.this.apply(current(op.key()), logged, log.segment(),
          log.recordStart(), version, now));
    }
  }

  // ------------------------------------------------------------------ reclaiming disk

  /** What one compaction did. */
  public record Compaction(int segmentsDeleted, long bytesReclaimed, long bytesMoved) {}

  private static final long RELOCATION_BATCH_BYTES = 16L << 20;
  private final Object reclaimWait = new Object();
  private volatile WriteAheadLog.Position resumePoint = new WriteAheadLog.Position(1, 0);
  /**
   * The two checkpoints kept on disk (the older one is recovery's fallback): segments their
   * states name, or that their replay would start before, are never deleted.
   */
  private java.util.Collection<BlobState> lastCheckpointStates = List.of();
  private java.util.Collection<BlobState> olderCheckpointStates = List.of();
  private long olderResumeSegment = Long.MAX_VALUE; // no older checkpoint: no constraint
  private boolean hasCheckpoint;

  /**
   * Reclaims the disk held by old versions: the live bytes of sealed segments that are
   * mostly dead are moved to the head of the log (the blobs keep their versions), a
   * checkpoint is written, and the segments nothing refers to any more are deleted.
   */
  public Compaction compact() throws IOException {
    synchronized (compactionMonitor) {
      checkOpen();
      Map<Long, Long> sealed = log.sealedSegments();
      Map<Long, Long> live = liveBytes();
      java.util.Set<Long> victims = new java.util.TreeSet<>();
      for (Map.Entry<Long, Long> e : sealed.entrySet()) {
        if (live.getOrDefault(e.getKey(), 0L) < config.compactBelow() * e.getValue()) {
          victims.add(e.getKey());
        }
      }
      if (victims.isEmpty()) {
        return new Compaction(0, 0, 0);
      }
      long moved = relocate(victims);
      java.util.Collection<BlobState> checkpointed = writeCheckpoint();
      Map<Long, Long> stillLive = referencedBytes(checkpointed);
      long reclaimed = 0;
      int deleted = 0;
      segmentLock.writeLock().lock(); // waits for reads in progress; new ones see no victim
      try {
        for (long id : victims) {
          if (stillLive.getOrDefault(id, 0L) == 0 && id < resumePoint.segment()
              && id < olderResumeSegment) {
            reclaimed += sealed.get(id);
            log.deleteSegment(id);
            deleted++;
          }
        }
      } finally {
        segmentLock.writeLock().unlock();
      }
      if (deleted > 0) {
        LOG.info("Týr compaction at {}: deleted {} segments ({} MiB), moved {} MiB",
            config.directory(), deleted, reclaimed >> 20, moved >> 20);
      }
      return new Compaction(deleted, reclaimed, moved);
    }
  }

  /**
   * Bytes per segment referred to by any state that a reader may still be given (visible),
   * that a commit will publish (staged), or that recovery would load (the checkpoint just
   * written): a segment none of them names can go.
   */
  private Map<Long, Long> referencedBytes(java.util.Collection<BlobState> checkpointed) {
    Map<Long, Long> live = new java.util.HashMap<>();
    publishLock.writeLock().lock();
    try {
      for (BlobState s : visible.values()) {
        s.addLiveBytes(live);
      }
      for (BlobState s : staged.values()) {
        if (!s.isDeleted()) {
          s.addLiveBytes(live);
        }
      }
    } finally {
      publishLock.writeLock().unlock();
    }
    for (BlobState s : checkpointed) {
      s.addLiveBytes(live);
    }
    for (BlobState s : olderCheckpointStates) {
      s.addLiveBytes(live);
    }
    return live;
  }

  /** Live bytes per segment over every current state (visible and staged). */
  private Map<Long, Long> liveBytes() {
    Map<Long, Long> live = new java.util.HashMap<>();
    for (BlobState s : latestStates()) {
      s.addLiveBytes(live);
    }
    return live;
  }

  /** Every blob's newest state, logged or visible, taken while no commit is published. */
  private java.util.Collection<BlobState> latestStates() {
    publishLock.writeLock().lock();
    try {
      Map<String, BlobState> all = new java.util.HashMap<>(visible);
      for (BlobState s : staged.values()) {
        if (s.isDeleted()) {
          all.remove(s.key);
        } else {
          all.put(s.key, s);
        }
      }
      return all.values();
    } finally {
      publishLock.writeLock().unlock();
    }
  }

  private record Move(String key, long chunkStart, Extent extent) {}

  /** Moves every extent in {@code victims} to the head of the log; returns bytes moved. */
  private long relocate(java.util.Set<Long> victims) throws IOException {
    List<Move> moves = new ArrayList<>();
    for (BlobState s : latestStates()) {
      for (int i = 0; i < s.chunkCount(); i++) {
        for (Extent e : s.chunk(i).extents()) {
          if (victims.contains(e.segment())) {
            moves.add(new Move(s.key, (long) i * s.chunkBytes(), e));
          }
        }
      }
    }
    long moved = 0;
    List<CompletableFuture<CommitResult>> records = new ArrayList<>();
    for (int next = 0; next < moves.size(); ) {
      commitLock.lock();
      try {
        checkOpen();
        long version = log.lastVersion() + 1;
        long now = System.currentTimeMillis();
        Planner plan = new Planner(version, now, 0);
        try {
          log.begin(version, now);
          for (long bytes = 0; next < moves.size() && bytes < RELOCATION_BATCH_BYTES; next++) {
            Move m = moves.get(next);
            BlobState s = plan.current(m.key());
            // Changed since the list was made: its bytes are elsewhere now, or will be
            // moved by a later compaction.
            if (s == null || s.chunkBytes() * (long) s.chunkIndex(m.chunkStart()) != m.chunkStart()
                || !java.util.Arrays.asList(s.chunk(s.chunkIndex(m.chunkStart())).extents())
                    .contains(m.extent())) {
              continue;
            }
            ByteBuffer b = ByteBuffer.allocate(m.extent().length());
            log.read(m.extent().segment(), m.extent().position(), b);
            plan.relocate(m.key(), m.chunkStart() + m.extent().start(), b.flip());
            bytes += m.extent().length();
            moved += m.extent().length();
          }
          if (plan.ops.isEmpty()) {
            log.abort();
            continue;
          }
          log.finish(plan.ops);
        } catch (Throwable e) {
          throw abandon(e);
        }
        CompletableFuture<CommitResult> done = new CompletableFuture<>();
        settle(plan, new CommitResult(version, new long[0]), done);
        records.add(done);
      } finally {
        commitLock.unlock();
      }
    }
    for (CompletableFuture<CommitResult> f : records) {
      try {
        f.join(); // published: no visible state refers to the victims any more
      } catch (java.util.concurrent.CompletionException e) {
        throw new IOException("moving live bytes failed", e.getCause());
      }
    }
    return moved;
  }

  /**
   * Records every blob's state and the log position after the last commit, so that
   * recovery replays only what follows (and earlier segments may go).
   */
  public void checkpoint() throws IOException {
    writeCheckpoint();
  }

  /** As {@link #checkpoint}; returns the states it recorded. */
  private java.util.Collection<BlobState> writeCheckpoint() throws IOException {
    synchronized (compactionMonitor) {
      java.util.Collection<BlobState> states;
      WriteAheadLog.Position at;
      long version;
      commitLock.lock();
      try {
        at = log.position();
        version = log.lastVersion();
        states = latestStates();
      } finally {
        commitLock.unlock();
      }
      log.force(); // every commit the checkpoint includes is on disk before it is
      Checkpoint.write(config.directory(), version, at.segment(), at.offset(), states);
      olderCheckpointStates = lastCheckpointStates;
      // Without an older checkpoint, recovery's fallback is the whole log, and a missing
      // first segment makes it refuse to open: clean, so it constrains nothing here.
      olderResumeSegment = hasCheckpoint ? resumePoint.segment() : Long.MAX_VALUE;
      hasCheckpoint = true;
      lastCheckpointStates = states;
      resumePoint = at;
      return states;
    }
  }

  /** Bytes of log a restart would replay now (a whole segment's worth if it rolled). */
  private long logSinceCheckpoint() {
    WriteAheadLog.Position at = log.positionNow();
    WriteAheadLog.Position from = resumePoint;
    return at.segment() == from.segment() ? at.offset() - from.offset() : config.segmentBytes();
  }

  private void reclaimLoop() {
    // The first look comes soon after opening: what earlier runs left is reclaimed even
    // by a short-lived embedded node.
    long wait = Math.min(config.compactInterval().toMillis(), 5_000);
    while (!closed) {
      synchronized (reclaimWait) {
        if (closed) {
          return; // checked under the monitor close() notifies, so no wake-up is lost
        }
        try {
          reclaimWait.wait(wait);
          wait = config.compactInterval().toMillis();
        } catch (InterruptedException e) {
          return;
        }
      }
      if (closed) {
        return;
      }
      try {
        if (compact().segmentsDeleted() == 0 && logSinceCheckpoint() > config.segmentBytes() / 4) {
          checkpoint(); // bounds what a crash makes recovery replay
        }
      } catch (IOException | RuntimeException e) {
        LOG.warn("Týr compaction at {} failed: {}", config.directory(), e.toString());
      }
    }
  }

  // ------------------------------------------------------------------ durability

  private void syncLoop() {
    while (true) {
      try {
        if (config.syncPolicy() == SyncPolicy.INTERVAL) {
          synchronized (pending) {
            if (closed) {
              return;
            }
            pending.wait(config.syncInterval().toMillis());
          }
          log.force();
          continue;
        }
        synchronized (pending) {
          while (pending.isEmpty()) {
            if (closed) {
              return;
            }
            pending.wait(100);
          }
        }
        long durable = log.force();
        while (true) {
          Pending p;
          synchronized (pending) {
            p = pending.peek();
            if (p == null || p.version() > durable) {
              break;
            }
            pending.poll();
          }
          publish(p.changes());
          p.future().complete(p.result());
        }
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        return;
      } catch (IOException | RuntimeException e) {
        fail(e);
        failPending(e);
        if (closed) {
          return;
        }
      }
    }
  }

  private static void joinFully(Thread t) {
    boolean interrupted = false;
    while (t.isAlive()) {
      try {
        t.join();
      } catch (InterruptedException e) {
        interrupted = true;
      }
    }
    if (interrupted) {
      Thread.currentThread().interrupt();
    }
  }

  private void failPending(Throwable cause) {
    synchronized (pending) {
      for (Pending p : pending) {
        p.future().completeExceptionally(new TyrException(ErrorCode.SERVER_ERROR,
            "the log could not be forced to disk; the commit's fate is unknown until the "
                + "node restarts: " + cause, cause));
      }
      pending.clear();
    }
  }

  @Override
  public void close() throws IOException {
    commitLock.lock();
    try {
      if (closed) {
        return;
      }
      closed = true;
    } finally {
      commitLock.unlock();
    }
    if (reclaimer != null) {
      synchronized (reclaimWait) {
        reclaimWait.notifyAll();
      }
      joinFully(reclaimer);
    }
    if (syncer != null) {
      synchronized (pending) {
        pending.notifyAll();
      }
      // Only the syncer publishes, in commit order: it drains what is pending, then ends.
      // Never interrupted: an interrupt during force() would close the log's channel.
      joinFully(syncer);
    }
    try {
      log.force();
      if (failure == null) {
        checkpoint(); // the next open replays nothing
      }
    } finally {
      failPending(new IOException("closed"));
      log.close();
    }
  }
}
