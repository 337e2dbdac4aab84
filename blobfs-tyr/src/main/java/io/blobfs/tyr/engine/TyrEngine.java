package io.blobfs.tyr.engine;

import io.blobfs.tyr.api.BlobStat;
import io.blobfs.tyr.api.CommitResult;
import io.blobfs.tyr.api.ErrorCode;
import io.blobfs.tyr.api.LocalGrant;
import io.blobfs.tyr.api.LocalIdentity;
import io.blobfs.tyr.api.ReadCheck;
import io.blobfs.tyr.api.ScanResult;
import io.blobfs.tyr.api.TxRequest;
import io.blobfs.tyr.api.TyrException;
import java.io.Closeable;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.locks.ReadWriteLock;
import java.util.concurrent.locks.ReentrantLock;
import java.util.concurrent.locks.ReentrantReadWriteLock;
import java.util.function.IntFunction;
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
 * conflict. {@link CommitPlanner} turns a transaction into a log record.
 *
 * <p><b>Durability.</b> With {@link SyncPolicy#ALWAYS} a commit is published to readers and
 * acknowledged only after the log is forced; concurrent commits share one force (group
 * commit, {@link LogSyncer}). Until then its states are "staged", seen by the validation
 * of later commits but by no reader. {@link LogReclaimer} reclaims the disk of old
 * versions and writes the checkpoints recovery starts from. Under any policy a commit
 * number is handed out once only, even if a power loss takes the commit that had it:
 * {@link VersionCeiling} keeps a bound on the numbers used on disk ahead of them, and a
 * restart numbers from above it.
 *
 * <p><b>Locks</b>, in the order they are taken (a thread holding one takes only locks
 * further down the list; no other nesting exists):
 * <ol>
 *   <li>{@link LogReclaimer}'s compaction monitor: one compaction or checkpoint at a time.
 *   <li>{@link #commitLock}: validating, planning and logging a record, giving it its commit
 *       number, and staging it; closing.
 *   <li>{@link #segmentLock}: shared by readers while they read extents and by local
 *       grants while they pin segments, exclusive while segments are deleted, so that no
 *       read is ever cut off by a compaction and no pinned segment is deleted.
 *   <li>{@link BlobVersions}' publish lock: exclusive to publish a commit and to see visible
 *       and staged states as one; shared by a scan page.
 *   <li>{@link LogSyncer}'s queue of commits waiting for the disk.
 * </ol>
 * The reclaimer's wake-up monitor and the log's own monitor are held while taking nothing.
 * {@link #versions}, the blob states, is the state every part shares; the engine owns it.
 */
public final class TyrEngine implements Closeable {
  private static final Logger LOG = LoggerFactory.getLogger(TyrEngine.class);

  /** What one compaction did. */
  public record Compaction(int segmentsDeleted, long bytesReclaimed, long bytesMoved) {}

  private final EngineConfig config;
  private final WriteAheadLog log;
  private final BlobVersions versions = new BlobVersions();
  private final ReentrantLock commitLock = new ReentrantLock();
  private final ReadWriteLock segmentLock = new ReentrantReadWriteLock();
  private final EngineView view = new EngineView();
  private final LogSyncer syncer;
  private final LogReclaimer reclaimer;
  private final VersionCeiling ceiling;
  /**
   * The highest commit number handed out by this run or, as far as the disk can tell, any
   * earlier one (whose last commits a power loss may have taken): the next is one more.
   * Guarded by the commit lock.
   */
  private long lastNumber;
  private final SegmentPins pins = new SegmentPins();
  /** Keys held by prepared cross-node transactions; guarded by the commit lock. */
  private final PreparedKeys prepared = new PreparedKeys();
  private LocalIdentity identity;
  private volatile boolean closed;
  private volatile IOException failure;

  private TyrEngine(EngineConfig config) throws IOException {
    this.config = config;
    OwnerOnly.createDirectories(config.directory());
    List<Checkpoint.Loaded> checkpoints = Checkpoint.loadNewest(config.directory(), 2);
    WriteAheadLog.Position start = new WriteAheadLog.Position(1, 0);
    long startVersion = 0;
    if (!checkpoints.isEmpty()) {
      Checkpoint.Loaded newest = checkpoints.get(0);
      for (BlobState s : newest.blobs()) {
        versions.recover(s.key, s);
      }
      start = new WriteAheadLog.Position(newest.segment(), newest.offset());
      startVersion = newest.version();
    }
    this.log = WriteAheadLog.open(config.directory(), config.segmentBytes(), start,
        startVersion, this::replay);
    try {
      this.ceiling = VersionCeiling.open(config.directory(), log.lastVersion());
    } catch (IOException | RuntimeException e) {
      log.close();
      throw e;
    }
    this.lastNumber = ceiling.floor();
    this.reclaimer = new LogReclaimer(config, log, versions, view, checkpoints, start);
    this.syncer = new LogSyncer(config, log, versions, view);
    reclaimer.start();
    LOG.info("Týr engine open at {}: {} blobs, last commit {} (checkpoint at {}), numbering "
        + "from {}", config.directory(), versions.visibleCount(), log.lastVersion(),
        startVersion, lastNumber + 1);
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
      versions.recover(op.key(), CommitPlanner.apply(versions.visible(op.key()), op, segment,
          recordStart, version, timestamp, config.chunkBytes()));
    }
  }

  // ------------------------------------------------------------------ reads

  /** The newest visible version's metadata ({@link BlobStat#missing} if absent). */
  public BlobStat stat(String key) {
    BlobState s = versions.visible(key);
    return s == null ? BlobStat.missing(key) : s.stat();
  }

  /**
   * Reads from {@code offset} of the newest committed version of a blob: as many bytes as
   * it holds there, up to {@code maxLength}, into a buffer of exactly that size got from
   * {@code buffers}. Returns that version's metadata; NOT_FOUND if the blob is absent.
   */
  public BlobStat read(String key, long offset, int maxLength,
      IntFunction<ByteBuffer> buffers) throws IOException {
    checkOpen();
    checkRange(offset, maxLength);
    segmentLock.readLock().lock();
    try {
      BlobState s = visibleOrNotFound(key);
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
    walk(s, offset, dst.remaining(), (segment, position, length) -> {
      if (segment < 0) {
        zeros(dst, length);
      } else {
        log.read(segment, position, dst.slice(dst.position(), length));
        dst.position(dst.position() + length);
      }
    });
  }

  /** One piece of a walk over a state: log bytes, or {@code segment} -1 for zeros. */
  @FunctionalInterface
  private interface PieceSink {
    void piece(long segment, long position, int length) throws IOException;
  }

  /**
   * Walks {@code [offset, offset+length)} of a state, cut at its size, in order: the
   * extents that hold its bytes and the holes between them.
   */
  private static void walk(BlobState s, long offset, long length, PieceSink sink)
      throws IOException {
    long end = Math.min(s.size, offset + length);
    int chunkBytes = s.chunkBytes();
    for (long at = offset; at < end; ) {
      int index = s.chunkIndex(at);
      int from = (int) (at - (long) index * chunkBytes);
      int to = (int) Math.min(chunkBytes, from + (end - at));
      int cursor = from;
      for (Extent e : s.chunk(index).covering(from, to)) {
        if (e.start() > cursor) {
          sink.piece(-1, 0, e.start() - cursor);
        }
        sink.piece(e.segment(), e.position(), e.length());
        cursor = e.end();
      }
      if (to > cursor) {
        sink.piece(-1, 0, to - cursor);
      }
      at += to - from;
    }
  }

  private static void zeros(ByteBuffer dst, int n) {
    for (int i = 0; i < n; i++) {
      dst.put((byte) 0);
    }
  }

  // ------------------------------------------------------------------ local reads

  /**
   * Grants a reader on this host {@code [offset, offset+maxLength)} of the newest visible
   * version of a blob (cut at its size) as pieces of log segment files, and pins those
   * segments against deletion until {@link #release} or for {@code lease} at most; see
   * {@link LocalGrant}. NOT_FOUND if the blob is absent.
   */
  public LocalGrant grant(String key, long offset, int maxLength, Duration lease)
      throws IOException {
    checkOpen();
    checkRange(offset, maxLength);
    // Shared, as a read: compaction deletes segments with it held exclusively and skips
    // pinned ones, so every segment named here exists until the pin ends.
    segmentLock.readLock().lock();
    try {
      BlobState s = visibleOrNotFound(key);
      List<LocalGrant.Piece> pieces = new ArrayList<>();
      Set<Long> segments = new HashSet<>();
      long[] last = {-2, 0}; // the previous piece's segment and end, to merge contiguous ones
      walk(s, offset, maxLength, (segment, position, length) -> {
        int n = pieces.size();
        LocalGrant.Piece prev = n == 0 ? null : pieces.get(n - 1);
        // A large write spans chunks as extents that follow each other in one file, and
        // holes in a row are one hole: merged, they are one file read each.
        if (prev != null && last[0] == segment && (segment < 0 || last[1] == position)
            && (long) prev.length() + length <= Integer.MAX_VALUE) {
          pieces.set(n - 1, new LocalGrant.Piece(prev.file(), prev.position(),
              prev.length() + length));
        } else {
          pieces.add(new LocalGrant.Piece(segment < 0 ? null : WriteAheadLog.fileName(segment),
              segment < 0 ? 0 : position, length));
        }
        last[0] = segment;
        last[1] = position + length;
        if (segment >= 0) {
          segments.add(segment);
        }
      });
      return new LocalGrant(pins.pin(segments, lease.toNanos()), s.stat(), pieces);
    } finally {
      segmentLock.readLock().unlock();
    }
  }

  /** Ends a grant's pin; false if it had already ended (released, or its lease ran out). */
  public boolean release(long grantId) {
    return pins.release(grantId);
  }

  /** Grants whose pins have not ended (expired ones count until compaction looks). */
  public int pinnedGrants() {
    return pins.count();
  }

  /** Grants made so far (a local read's cost in calls: tests and measurements). */
  public long grantsMade() {
    return pins.made();
  }

  /**
   * The proof that a reader sees this node's directory: a random token the node keeps in
   * a file there (readable by its owner only, like every file of the node). A client that
   * reads the same token from that path shares this host and file system view.
   */
  public synchronized LocalIdentity localIdentity() throws IOException {
    if (identity == null) {
      identity = LocalIdentities.create(config.directory().toAbsolutePath());
    }
    return identity;
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
    return scan(prefix, cursor, limit, headBytes, k -> true);
  }

  /**
   * As {@link #scan(String, String, int, int)}, of the keys {@code include} accepts only;
   * a page still holds {@code limit} keys when there are that many (a cluster node lists
   * the keys of its ranges, not the copies it keeps of ranges it handed over).
   */
  public ScanResult scan(String prefix, String cursor, int limit, int headBytes,
      java.util.function.Predicate<String> include) throws IOException {
    if (limit < 1) {
      throw new IllegalArgumentException("limit must be positive: " + limit);
    }
    if (headBytes > 0) {
      segmentLock.readLock().lock(); // held until the heads are read (released below)
    }
    BlobVersions.Page page = versions.page(prefix, cursor, limit, include);
    List<BlobState> states = page.states();
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
    return new ScanResult(keys, heads, page.next());
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
   * {@link TyrException}, in which case nothing of it was applied. A transaction naming a
   * key that a prepared cross-node transaction holds is refused with CONFLICT.
   */
  public CompletableFuture<CommitResult> commit(TxRequest tx) {
    return commit(tx, null, null, null);
  }

  /**
   * As {@link #commit(TxRequest)}, and runs {@code hook} under the commit lock once the
   * commit's changes are staged or published (so {@link #versionsOf} read there sees
   * them), before its future completes; also when the commit changes nothing. Not run if
   * the commit is refused. Issue 13, bug 3: a backup applying a replicated write rebases
   * the shares held behind the writing part in the same critical section, so a judge that
   * reads share and engine versions under the commit lock ({@link #underCommitLock}) sees
   * both or neither. The hook must be trivial (volatile writes): it runs in the section
   * that serializes every commit of the node, and must take no monitor (lock order:
   * anything, then the commit lock, then nothing).
   */
  public CompletableFuture<CommitResult> commit(TxRequest tx, Runnable hook) {
    return commit(tx, null, null, hook);
  }

  /**
   * Applies the part of cross-node transaction {@code txId} that {@link #prepare} took
   * here, once its decision is commit: it passes its own reservations, which end as it is
   * logged. Nothing is re-decided that the prepare validated, since no other commit could
   * touch its keys meanwhile.
   */
  public CompletableFuture<CommitResult> commitPrepared(String txId, TxRequest tx) {
    return commitPrepared(txId, tx, null);
  }

  /**
   * As {@link #commitPrepared(String, TxRequest)}; fills {@code behindOut} (if not null)
   * with the parts holding each of its keys behind {@code txId}, read in the commit-lock
   * hold that logs the part and releases its keys, so exact: no part can reserve or
   * release in between (issue 13, bug 3: what this write's replicated item tells the
   * backups to rebase). Filled only if the part is logged.
   */
  public CompletableFuture<CommitResult> commitPrepared(String txId, TxRequest tx,
      Map<String, List<String>> behindOut) {
    commitLock.lock();
    try {
      if (!prepared.holds(txId)) {
        return CompletableFuture.failedFuture(new TyrException(ErrorCode.BAD_REQUEST,
            "transaction " + txId + " is not prepared on this node"));
      }
    } finally {
      commitLock.unlock();
    }
    return commit(tx, txId, behindOut, null);
  }

  private CompletableFuture<CommitResult> commit(TxRequest tx, String txId,
      Map<String, List<String>> behindOut, Runnable hook) {
    try {
      CommitPlanner.checkShape(tx, config);
    } catch (TyrException e) {
      return CompletableFuture.failedFuture(e);
    }
    CompletableFuture<CommitResult> done = new CompletableFuture<>();
    commitLock.lock();
    try {
      checkOpen();
      prepared.checkFree(tx, txId);
      validateReads(tx);
      CommitPlanner plan = logRecord(tx.ops().size(), p -> {
        for (int i = 0; i < tx.ops().size(); i++) {
          p.plan(i, tx.ops().get(i));
        }
        p.defragmentTouched();
      }, false);
      if (txId != null) {
        if (behindOut != null) {
          // read before the release, in the hold that logs: the holders behind are exact
          behindOut.putAll(prepared.behind(txId, tx));
        }
        prepared.release(txId); // logged: later commits validate against its states
      }
      if (plan.ops().isEmpty()) { // nothing changes: no record, no commit number
        if (hook != null) {
          hook.run();
        }
        done.complete(new CommitResult(log.lastVersion(), plan.values()));
      } else {
        settle(plan, new CommitResult(plan.version(), plan.values()), done, hook);
      }
    } catch (TyrException e) {
      done.completeExceptionally(e);
    } catch (IOException e) {
      done.completeExceptionally(new TyrException(ErrorCode.SERVER_ERROR, e.toString(), e));
    } finally {
      commitLock.unlock();
    }
    return done;
  }

  private void validateReads(TxRequest tx) throws TyrException {
    for (ReadCheck read : tx.reads()) {
      BlobState s = versions.latest(read.key());
      long now = s == null ? 0 : s.version;
      if (now != read.version()) {
        throw new TyrException(ErrorCode.CONFLICT, "blob " + read.key() + " was read at "
            + "version " + read.version() + " and is now at " + now + "; retry");
      }
    }
  }

  // ------------------------------------------------------------------ cross-node prepare

  /**
   * Prepares this node's part of cross-node transaction {@code txId}: validates it exactly
   * as a commit would (read checks, then every op planned and the record dropped, so an
   * exclusive create of an existing blob, a delete that must find its blob, a
   * compare-and-set that finds another value fail here), and reserves its keys until
   * {@link #commitPrepared} or {@link #releasePrepared}. Logs nothing: the caller makes
   * the prepare durable. Returns the version (0: absent) each key the part names has now,
   * which no commit but this transaction's can change while it is prepared.
   */
  public Map<String, Long> prepare(String txId, TxRequest tx) throws TyrException {
    CommitPlanner.checkShape(tx, config);
    commitLock.lock();
    try {
      checkOpen();
      if (prepared.holds(txId)) {
        throw new TyrException(ErrorCode.BAD_REQUEST, "transaction " + txId
            + " is already prepared here");
      }
      prepared.checkFree(tx, txId);
      validateReads(tx);
      logRecord(tx.ops().size(), p -> {
        for (int i = 0; i < tx.ops().size(); i++) {
          p.plan(i, tx.ops().get(i));
        }
      }, true);
      prepared.reserve(txId, tx);
      return versionsOf(tx);
    } finally {
      commitLock.unlock();
    }
  }

  /**
   * Reserves the keys of a part found prepared in the node's records at restart: it was
   * validated before the crash, and no commit has run since.
   */
  public void reservePrepared(String txId, TxRequest tx) {
    commitLock.lock();
    try {
      prepared.reserve(txId, tx);
    } finally {
      commitLock.unlock();
    }
  }

  /**
   * Narrows the reservations of prepared part {@code txId} to the keys of {@code tx} in
   * one step: the keys it keeps stay held at their place among their holders.
   */
  public void narrowPrepared(String txId, TxRequest tx) {
    commitLock.lock();
    try {
      prepared.narrow(txId, tx);
    } finally {
      commitLock.unlock();
    }
  }

  /** Ends the reservations of a prepared part that is aborted (or already applied). */
  public void releasePrepared(String txId) {
    commitLock.lock();
    try {
      prepared.release(txId);
    } finally {
      commitLock.unlock();
    }
  }

  /**
   * Forces the log: every commit logged so far (also one staged, not yet acknowledged) is
   * on disk when this returns, so a prepare made durable after it never rests on a commit
   * a crash could still take.
   */
  public void force() throws IOException {
    checkOpen();
    log.force();
  }

  /**
   * The versions of {@link #versionsOf}, if prepared part {@code txId} holds every key of
   * {@code tx} first (read under the commit lock: then no commit but its own can change
   * them); null if another part holds one of them ahead of it.
   */
  public Map<String, Long> versionsIfFirst(String txId, TxRequest tx) {
    commitLock.lock();
    try {
      return prepared.first(txId, tx) ? versionsOf(tx) : null;
    } finally {
      commitLock.unlock();
    }
  }

  /**
   * Runs {@code read} under the commit lock and returns what it returns: a judge comparing
   * a share's versions with {@link #versionsOf} sees a replicated write and the rebase its
   * commit hook made together, or neither (issue 13, bug 3). Lock order: the caller's
   * monitors, then the commit lock; {@code read} must take no monitor.
   */
  public <T> T underCommitLock(java.util.function.Supplier<T> read) {
    commitLock.lock();
    try {
      return read.get();
    } finally {
      commitLock.unlock();
    }
  }

  /** The newest version (0: absent) of every key {@code tx} names. */
  public Map<String, Long> versionsOf(TxRequest tx) {
    Map<String, Long> out = new java.util.LinkedHashMap<>();
    for (String k : PreparedKeys.keysOf(tx)) {
      BlobState s = versions.latest(k);
      out.put(k, s == null ? 0L : s.version);
    }
    return out;
  }

  /**
   * Under the commit lock: plans the next record with {@code body} and logs it, or, if it
   * changes nothing, drops it (no record, no commit number; the plan has no ops). A dry
   * run plans, and so validates, the record and always drops it.
   */
  private CommitPlanner logRecord(int opCount, CommitPlanner.Body body, boolean dryRun)
      throws TyrException {
    long version = lastNumber + 1;
    long now = System.currentTimeMillis();
    CommitPlanner plan = new CommitPlanner(config, log, view, version, now, opCount);
    try {
      ceiling.cover(version); // on disk before anyone can see the number
      log.begin(version, now);
      body.plan(plan);
      if (plan.ops().isEmpty() || dryRun) {
        log.abort(); // the number was seen by no one: the next commit takes it
      } else {
        log.finish(plan.ops());
        lastNumber = version;
      }
    } catch (Throwable e) {
      throw abandon(e);
    }
    return plan;
  }

  /**
   * After a record is logged: publishes it now, or (sync=always) stages it for the syncer
   * to publish once it is on disk. Called under the commit lock, in commit order.
   */
  private void settle(CommitPlanner plan, CommitResult result,
      CompletableFuture<CommitResult> done, Runnable hook) {
    if (config.syncPolicy() == SyncPolicy.ALWAYS) {
      var staged = versions.stage(plan.changes(), plan.version());
      if (hook != null) {
        hook.run(); // after the stage (versionsOf sees it), before the syncer completes
      }
      syncer.await(plan.version(), staged, done, result);
    } else {
      versions.publish(plan.changes());
      if (hook != null) {
        hook.run(); // after the publish, before anyone sees the future complete
      }
      done.complete(result);
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

  private void checkOpen() throws TyrException {
    if (failure != null) {
      throw new TyrException(ErrorCode.SERVER_ERROR,
          "the log failed and this node refuses writes until restarted: " + failure, failure);
    }
    if (closed) {
      throw new TyrException(ErrorCode.SERVER_ERROR, "the store is closed");
    }
  }

  /**
   * Fails the store: it refuses every write until restarted, as after a log that could not
   * be written. Also for a caller whose own record of a write failed after the write
   * (the replicator's rebase records, issue 13 bug 3): nothing may apply before the
   * restart that reads those records again.
   */
  public void fail(Throwable e) {
    if (failure == null) {
      failure = e instanceof IOException io ? io : new IOException(e);
      LOG.error("Týr log failed; refusing writes until restart", e);
    }
  }

  /**
   * Why the store refuses writes until restarted ({@link #fail}), or null while it takes
   * them. A node's liveness probe reads it: a failed node must not look alive.
   */
  public IOException failure() {
    return failure;
  }

  // ------------------------------------------------------------------ reclaiming disk

  /**
   * Reclaims the disk held by old versions: the live bytes of sealed segments that are
   * mostly dead are moved to the head of the log (the blobs keep their versions), a
   * checkpoint is written, and the segments nothing refers to any more are deleted.
   */
  public Compaction compact() throws IOException {
    return reclaimer.compact();
  }

  /**
   * Records every blob's state and the log position after the last commit, so that
   * recovery replays only what follows (and earlier segments may go).
   */
  public void checkpoint() throws IOException {
    reclaimer.checkpoint();
  }

  @Override
  public void close() throws IOException {
    // Under the commit lock, so that no record is logged or queued for the syncer after it.
    commitLock.lock();
    try {
      if (closed) {
        return;
      }
      closed = true;
    } finally {
      commitLock.unlock();
    }
    reclaimer.stop();
    // Only the syncer publishes, in commit order: it drains what is pending, then ends.
    syncer.stop();
    try {
      log.force();
      if (failure == null) {
        checkpoint(); // the next open replays nothing
        // Every number handed out is on disk now (closed: none is handed out after this
        // read), so the next run goes on from here without a gap.
        commitLock.lock();
        try {
          ceiling.lower(lastNumber);
        } finally {
          commitLock.unlock();
        }
      }
    } finally {
      syncer.failPending(new IOException("closed"));
      log.close();
    }
  }

  /**
   * The engine as its parts see it: a part reaches only what its interface names, so the
   * engine locks it can take are the ones named there (their order is in the class comment).
   */
  private final class EngineView implements CommitPlanner.States, LogSyncer.Engine,
      LogReclaimer.Engine {
    @Override
    public BlobState latest(String key) {
      return versions.latest(key);
    }

    @Override
    public void read(BlobState s, long offset, ByteBuffer dst) throws IOException {
      readState(s, offset, dst);
    }

    @Override
    public void fail(Throwable cause) {
      TyrEngine.this.fail(cause);
    }

    @Override
    public boolean closed() {
      return closed;
    }

    @Override
    public void checkOpen() throws TyrException {
      TyrEngine.this.checkOpen();
    }

    @Override
    public LogReclaimer.Cut cutBetweenCommits() {
      commitLock.lock();
      try {
        return new LogReclaimer.Cut(log.position(), log.lastVersion(), versions.latestStates());
      } finally {
        commitLock.unlock();
      }
    }

    @Override
    public CompletableFuture<CommitResult> logRelocation(CommitPlanner.Body body)
        throws IOException {
      commitLock.lock();
      try {
        checkOpen();
        CommitPlanner plan = logRecord(0, body, false);
        if (plan.ops().isEmpty()) {
          return null;
        }
        CompletableFuture<CommitResult> done = new CompletableFuture<>();
        settle(plan, new CommitResult(plan.version(), new long[0]), done, null);
        return done;
      } finally {
        commitLock.unlock();
      }
    }

    @Override
    public Set<Long> deleteWithoutReaders(Set<Long> segments) throws IOException {
      segmentLock.writeLock().lock();
      try {
        // A pinned segment stays for its local reader; the next compaction takes it.
        Set<Long> pinned = pins.pinned();
        Set<Long> deleted = new java.util.TreeSet<>();
        for (long id : segments) {
          if (!pinned.contains(id)) {
            log.deleteSegment(id);
            deleted.add(id);
          }
        }
        return deleted;
      } finally {
        segmentLock.writeLock().unlock();
      }
    }
  }

  private static void checkRange(long offset, int maxLength) throws TyrException {
    if (offset < 0 || maxLength < 0) {
      throw new TyrException(ErrorCode.BAD_REQUEST, "negative offset or length: " + offset
          + ", " + maxLength);
    }
  }

  private BlobState visibleOrNotFound(String key) throws TyrException {
    BlobState s = versions.visible(key);
    if (s == null) {
      throw new TyrException(ErrorCode.NOT_FOUND, "no blob " + key);
    }
    return s;
  }
}
