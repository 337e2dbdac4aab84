package io.blobfs.rados;

import com.sun.jna.CallbackThreadInitializer;
import com.sun.jna.Memory;
import com.sun.jna.Native;
import com.sun.jna.NativeLong;
import com.sun.jna.Pointer;
import com.sun.jna.ptr.IntByReference;
import com.sun.jna.ptr.LongByReference;
import com.sun.jna.ptr.NativeLongByReference;
import com.sun.jna.ptr.PointerByReference;
import io.blobfs.locality.ceph.CephPlacement;
import io.blobfs.locality.crush.CrushMapException;
import io.blobfs.store.BlobInfo;
import io.blobfs.store.BlobNotFoundException;
import io.blobfs.store.Futures;
import io.blobfs.store.CopiesOnWrite;
import io.blobfs.store.PlacementAware;
import io.blobfs.store.PutMode;
import io.blobfs.store.ScanPage;
import io.blobfs.store.StoreLimits;
import io.blobfs.store.StoreUnavailableException;
import io.blobfs.store.TransactionConflictException;
import io.blobfs.store.VersionedBytes;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executor;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.Lock;
import java.util.concurrent.locks.ReentrantReadWriteLock;

/**
 * A blob store on one Ceph RADOS pool. Each key's first path segment becomes the RADOS
 * namespace of its object ({@code n/a/b} is object {@code a/b} in namespace {@code n}),
 * so a scan of names never walks the data stripes. Reads and writes are librados AIO
 * whose completions arrive on librados threads and are handed to a small executor.
 * Every call is bounded by the configured operation timeout. Where an object lives is
 * computed here with CRUSH ({@link #hostsOf}), from maps read through mon commands.
 *
 * <p>A blob's version is the object's user version, which the OSD raises on every write
 * from a counter of its placement group, so a re-created object never gets an old one.
 * It is taken from the completion of an AIO read op (the I/O context's "last version" is
 * shared by every thread), and a conditional call asserts it in the same write op as its
 * mutation, which the OSD applies atomically.
 */
public final class RadosBlobStore implements CopiesOnWrite, PlacementAware {
  private static final LibRados LIB = LibRados.INSTANCE;
  private static final Map<Long, Pending> PENDING = new ConcurrentHashMap<>();
  private static final AtomicLong NEXT_ID = new AtomicLong(1);
  private static final LibRados.CompletionCallback ON_COMPLETE = RadosBlobStore::completed;

  static {
    // Keep librados callback threads attached to the JVM instead of attaching per call.
    Native.setCallbackThreadInitializer(ON_COMPLETE,
        new CallbackThreadInitializer(true, false, "librados-completion"));
  }

  private final RadosCluster cluster;
  private final String pool;
  private final String baseNamespace;
  private final StoreLimits limits;
  private final Duration opTimeout;
  private final ExecutorService completions;
  private final java.util.Set<Thread> completionThreads = ConcurrentHashMap.newKeySet();
  private final RadosKeys keys;
  private final RadosListings listings;
  private final CephPlacement placement;
  /** The name index, or null in the paper's pure-scan mode. */
  private final RadosIndex index;
  /** Whether scans may use the index yet (false while it is being built). */
  private volatile boolean indexReady;
  private volatile long nextIndexCheck;
  /**
   * Native calls hold the read lock; close() takes the write lock, so no call is inside
   * librados with a context or listing that close frees, and every later call fails.
   */
  private final ReentrantReadWriteLock lifecycle = new ReentrantReadWriteLock();
  private boolean closed; // guarded by lifecycle

  RadosBlobStore(RadosCluster cluster, String pool, String baseNamespace, StoreLimits limits,
      Duration opTimeout, Duration mapTtl, RadosIndexes.Opened index) {
    this.cluster = cluster;
    this.index = index == null ? null : index.index();
    this.indexReady = index != null && index.ready();
    // nanoTime may be negative: a first check due now, not once it passes zero.
    this.nextIndexCheck = System.nanoTime();
    this.placement = new CephPlacement(cluster::monCommand, mapTtl);
    this.pool = pool;
    this.baseNamespace = baseNamespace;
    this.keys = new RadosKeys(baseNamespace);
    this.listings = new RadosListings(cluster, pool, keys);
    this.limits = limits;
    this.opTimeout = opTimeout;
    this.completions = Executors.newFixedThreadPool(2, r -> {
      Thread t = new Thread(r, "blobfs-rados-" + pool);
      t.setDaemon(true);
      completionThreads.add(t);
      return t;
    });
  }

  @Override
  public StoreLimits limits() {
    return limits;
  }

  // ------------------------------------------------------------------ plumbing

  private RadosKeys.Location locate(String key) {
    return keys.locate(key);
  }

  private Pointer io(RadosKeys.Location loc) throws IOException {
    return cluster.context(pool, loc.namespace());
  }

  private interface NativeCall<T> {
    T call() throws IOException;
  }

  /** Runs librados calls on this store's handle, contexts or listings while it is open. */
  private <T> T whileOpen(NativeCall<T> call) throws IOException {
    Lock l = lifecycle.readLock();
    l.lock();
    try {
      checkOpen();
      return call.call();
    } finally {
      l.unlock();
    }
  }

  // ------------------------------------------------------------------ single-object calls

  @Override
  public BlobInfo stat(String key) throws IOException {
    RadosKeys.Location loc = locate(key);
    LongByReference size = new LongByReference();
    LongByReference mtime = new LongByReference();
    IntByReference prval = new IntByReference();
    Pointer op = LIB.rados_create_read_op();
    try {
      LIB.rados_read_op_stat(op, size, mtime, prval);
      long version = Futures.await(submit("stat", key, new Object[] {size, mtime, prval},
          (io, completion) -> LIB.rados_aio_read_op_operate(op, io, completion, loc.oid(), 0),
          loc, (rc, v) -> v));
      return BlobInfo.of(key, size.getValue(), mtime.getValue() * 1000L, version);
    } catch (BlobNotFoundException missing) {
      return BlobInfo.missing(key);
    } finally {
      LIB.rados_release_read_op(op);
    }
  }

  @Override
  public VersionedBytes readWithVersion(String key, int maxBytes) throws IOException {
    int len = (int) Math.min(maxBytes, limits.maxOpBytes());
    RadosKeys.Location loc = locate(key);
    Memory buf = new Memory(Math.max(1, len));
    NativeLongByReference got = new NativeLongByReference();
    IntByReference prval = new IntByReference();
    Pointer op = LIB.rados_create_read_op();
    try {
      LIB.rados_read_op_read(op, 0, new NativeLong(len), buf, got, prval);
      return Futures.await(submit("read", key, new Object[] {buf, got, prval},
          (io, completion) -> LIB.rados_aio_read_op_operate(op, io, completion, loc.oid(), 0),
          loc, (rc, version) -> {
            RadosErrors.check("read", key, prval.getValue());
            int n = got.getValue().intValue();
            return new VersionedBytes(buf.getByteArray(0, n), version);
          }));
    } finally {
      LIB.rados_release_read_op(op);
    }
  }

  @Override
  public CompletableFuture<Integer> read(String key, long offset, ByteBuffer dst) {
    if (offset < 0) {
      return CompletableFuture.failedFuture(new IllegalArgumentException("negative offset"));
    }
    int len = (int) Math.min(dst.remaining(), limits.maxOpBytes());
    if (len == 0) {
      return CompletableFuture.completedFuture(0);
    }
    RadosKeys.Location loc = locate(key);
    if (dst.isDirect()) {
      // librados reads straight into the caller's native buffer: no copy of ours.
      int start = dst.position();
      Pointer into = Native.getDirectBufferPointer(dst).share(start);
      return submit("read", key, dst, (io, completion) -> LIB.rados_aio_read(io, loc.oid(),
          completion, into, new NativeLong(len), offset), loc, (rc, version) -> {
            if (rc == 0) {
              return -1; // at or past the end of the object
            }
            dst.position(start + rc);
            return rc;
          });
    }
    Memory buf = new Memory(len);
    return submit("read", key, buf, (io, completion) -> LIB.rados_aio_read(io, loc.oid(),
        completion, buf, new NativeLong(len), offset), loc, (rc, version) -> {
          if (rc == 0) {
            return -1; // at or past the end of the object
          }
          dst.put(buf.getByteBuffer(0, rc));
          return rc;
        });
  }

  @Override
  public CompletableFuture<Void> write(String key, long offset, ByteBuffer src) {
    if (offset < 0) {
      return CompletableFuture.failedFuture(new IllegalArgumentException("negative offset"));
    }
    int len = src.remaining();
    if (len > limits.maxOpBytes() || offset + len > limits.maxObjectBytes()) {
      return CompletableFuture.failedFuture(new IOException("write of " + len + " bytes at "
          + offset + " to " + key + " exceeds the pool's limits " + limits));
    }
    RadosKeys.Location loc = locate(key);
    Object keep;
    Pointer from;
    if (src.isDirect()) {
      // Used in place until the write completes (librados copies it into its own buffer).
      from = Native.getDirectBufferPointer(src).share(src.position());
      keep = src;
    } else {
      Memory buf = new Memory(Math.max(1, len));
      buf.getByteBuffer(0, len).put(src.duplicate()); // copied now: CopiesOnWrite
      from = buf;
      keep = buf;
    }
    String marker;
    try {
      // Data stripes are not indexed: this costs nothing on the data path.
      marker = index == null || !RadosIndex.covers(key) ? null
          : whileOpen(() -> index.refresh(key, index.beforeCreate(key)));
    } catch (IOException e) {
      return CompletableFuture.failedFuture(e);
    }
    Pointer op = LIB.rados_create_write_op();
    LIB.rados_write_op_write(op, from, new NativeLong(len), offset);
    CompletableFuture<Void> done = submit("write", key, keep, (io, completion) ->
        LIB.rados_aio_write_op_operate(op, io, completion, loc.oid(), null,
            LibRados.LIBRADOS_OPERATION_FULL_TRY), loc, (rc, version) -> null);
    // The op may be freed once librados has completed it (or refused to start it).
    CompletableFuture<Void> written = done.whenComplete((v, t) -> LIB.rados_release_write_op(op));
    if (marker == null) {
      return written;
    }
    // A write whose entry could not be settled fails: its name may have no entry.
    return written.handle((v, t) -> {
      try {
        settleCreate(key, marker, t == null);
        return null;
      } catch (IOException e) {
        if (t == null) {
          return e;
        }
        (t instanceof java.util.concurrent.CompletionException && t.getCause() != null
            ? t.getCause() : t).addSuppressed(e);
        return null;
      }
    }).thenCompose(e -> e == null ? written : CompletableFuture.<Void>failedFuture(e));
  }

  @Override
  public void put(String key, ByteBuffer content, PutMode mode) throws IOException {
    RadosKeys.Location loc = locate(key);
    Memory buf = wholeContent(key, content);
    String marker = whileOpen(() -> index == null ? null
        : index.refresh(key, index.beforeCreate(key)));
    boolean exists = false;
    try {
      Pointer op = LIB.rados_create_write_op();
      try {
        if (mode == PutMode.CREATE) {
          LIB.rados_write_op_create(op, LibRados.LIBRADOS_CREATE_EXCLUSIVE, null);
        }
        // write_full replaces the object's content in one step: readers see old or new.
        LIB.rados_write_op_write_full(op, buf, new NativeLong(content.remaining()));
        long t0 = System.nanoTime();
        int rc = whileOpen(() -> LIB.rados_write_op_operate(op, io(loc), loc.oid(),
            null, LibRados.LIBRADOS_OPERATION_FULL_TRY));
        RadosCallTimes.record("object.put", t0);
        exists = rc == 0 || rc == -RadosErrors.EEXIST;
        RadosErrors.check("put", key, rc);
      } finally {
        LIB.rados_release_write_op(op);
      }
    } catch (IOException | RuntimeException e) {
      try {
        settleCreate(key, marker, exists);
      } catch (IOException | RuntimeException settling) {
        e.addSuppressed(settling); // the object step's failure is the one to report
      }
      throw e;
    }
    // Throws if the entry could not be settled: the put fails rather than leave its name
    // without an entry that shows it.
    settleCreate(key, marker, exists);
  }

  /**
   * The index step after an object step that may have created the key's object; throws
   * when the entry could not be settled ({@link RadosIndex#afterCreate}).
   */
  private void settleCreate(String key, String marker, boolean exists) throws IOException {
    if (marker != null) {
      whileOpen(() -> {
        index.afterCreate(key, marker, exists);
        return null;
      });
    }
  }

  /** The index step after an object step that may have removed the key's object. */
  private void settleDelete(String key, String marker, boolean gone) throws IOException {
    if (marker != null) {
      whileOpen(() -> {
        index.afterDelete(key, marker, gone);
        return null;
      });
    }
  }

  @Override
  public void putIfVersion(String key, ByteBuffer content, long version) throws IOException {
    checkAssertable("put", key, version);
    Memory buf = wholeContent(key, content);
    // No index step: the asserted version fails on a missing object (ENOENT), so this call
    // never creates a name, and the entry of the object it replaces stays right.
    Pointer op = LIB.rados_create_write_op();
    try {
      LIB.rados_write_op_assert_version(op, version);
      LIB.rados_write_op_write_full(op, buf, new NativeLong(content.remaining()));
      operateIfVersion("put", key, version, op, LibRados.LIBRADOS_OPERATION_FULL_TRY);
    } finally {
      LIB.rados_release_write_op(op);
    }
  }

  /** A whole blob's content in native memory, refused if it does not fit one op. */
  private Memory wholeContent(String key, ByteBuffer content) throws IOException {
    int len = content.remaining();
    if (len > limits.maxOpBytes()) {
      throw new IOException("put of " + len + " bytes to " + key + " exceeds one op ("
          + limits.maxOpBytes() + ")");
    }
    Memory buf = new Memory(Math.max(1, len));
    buf.getByteBuffer(0, len).put(content.duplicate());
    return buf;
  }

  @Override
  public void deleteIfVersion(String key, long version) throws IOException {
    checkAssertable("delete", key, version);
    String marker = whileOpen(() -> index == null ? null : index.beforeDelete(key));
    boolean gone = false;
    Pointer op = LIB.rados_create_write_op();
    try {
      LIB.rados_write_op_assert_version(op, version);
      LIB.rados_write_op_remove(op);
      operateIfVersion("delete", key, version, op, LibRados.LIBRADOS_OPERATION_FULL_TRY);
      gone = true;
    } finally {
      LIB.rados_release_write_op(op);
      settleDelete(key, marker, gone);
    }
  }

  /**
   * RADOS user versions start at 1, and librados refuses to assert 0 (EINVAL): a caller
   * passing the version {@code stat} gives a missing blob gets the SPI's conflict, as on
   * the other stores, before any index or object step.
   */
  private static void checkAssertable(String what, String key, long version)
      throws TransactionConflictException {
    if (version <= 0) {
      throw new TransactionConflictException(what + " " + key + ": no blob is at version "
          + version);
    }
  }

  /** Applies a write op that asserts {@code version}; a failed assertion is a conflict. */
  private void operateIfVersion(String what, String key, long version, Pointer op, int flags)
      throws IOException {
    RadosKeys.Location loc = locate(key);
    long t0 = System.nanoTime();
    int rc = whileOpen(() -> LIB.rados_write_op_operate(op, io(loc), loc.oid(), null, flags));
    RadosCallTimes.record("object." + what + "IfVersion", t0);
    if (rc == -RadosErrors.ERANGE || rc == -RadosErrors.EOVERFLOW
        || rc == -RadosErrors.ENOENT) {
      throw new TransactionConflictException(what + " " + key + ": no longer at version "
          + version + " (" + rc + ")");
    }
    RadosErrors.check(what, key, rc);
  }

  @Override
  public void truncate(String key, long size) throws IOException {
    if (size < 0 || size > limits.maxObjectBytes()) {
      throw new IllegalArgumentException("bad size " + size + " for " + key);
    }
    RadosKeys.Location loc = locate(key);
    // rados_trunc alone would create a missing object; the SPI reports it instead. The
    // assertion and the truncation are one write op, applied atomically by the OSD.
    Pointer op = LIB.rados_create_write_op();
    try {
      LIB.rados_write_op_assert_exists(op);
      LIB.rados_write_op_truncate(op, size);
      RadosErrors.check("truncate", key,
          whileOpen(() -> LIB.rados_write_op_operate(op, io(loc), loc.oid(), null, 0)));
    } finally {
      LIB.rados_release_write_op(op);
    }
  }

  @Override
  public boolean delete(String key) throws IOException {
    RadosKeys.Location loc = locate(key);
    String marker = whileOpen(() -> index == null ? null : index.beforeDelete(key));
    boolean gone = false;
    Pointer op = LIB.rados_create_write_op();
    try {
      LIB.rados_write_op_remove(op);
      // FULL_TRY: a delete frees space, so it must work on a full pool too.
      long t0 = System.nanoTime();
      int rc = whileOpen(() -> LIB.rados_write_op_operate(op, io(loc), loc.oid(), null,
          LibRados.LIBRADOS_OPERATION_FULL_TRY));
      RadosCallTimes.record("object.delete", t0);
      gone = rc == 0 || rc == -RadosErrors.ENOENT;
      if (rc == -RadosErrors.ENOENT) {
        return false;
      }
      RadosErrors.check("delete", key, rc);
      return true;
    } finally {
      LIB.rados_release_write_op(op);
      settleDelete(key, marker, gone);
    }
  }

  // ------------------------------------------------------------------ placement

  /**
   * The hosts of the key's object, computed with CRUSH from the monitor's maps (cached per
   * OSD map epoch): the object name and namespace hashed are exactly those the I/O uses.
   */
  @Override
  public List<String> hostsOf(String key) throws IOException {
    RadosKeys.Location loc = locate(key);
    try {
      return whileOpen(() -> placement.hostsOf(pool, loc.namespace(), loc.object()));
    } catch (CrushMapException e) {
      throw new IOException("placement of " + key + " in pool " + pool + ": " + e.getMessage(),
          e);
    }
  }

  /** A monitor command on this store's cluster connection (tests compare with Ceph's answers). */
  String monCommand(String json) throws IOException {
    return whileOpen(() -> cluster.monCommand(json));
  }

  // ------------------------------------------------------------------ scan

  /**
   * Names and intents come from the name index ({@link RadosIndex}): a server-side filtered
   * read of its shards, whose cost does not grow with the pool. Any other prefix, and every
   * scan in pure-scan mode or while the index is being built, is a filtered scan of the
   * pool, as in the paper: RADOS lists objects in hash order and cannot filter by prefix,
   * so names are filtered client-side ({@link RadosListings}).
   */
  @Override
  public ScanPage scan(String prefix, String cursor, int limit) throws IOException {
    if (limit <= 0) {
      throw new IllegalArgumentException("scan limit must be positive: " + limit);
    }
    long t0 = System.nanoTime();
    return whileOpen(() -> {
      // A scan keeps the kind it started with: index cursors carry their own mark.
      boolean fromIndex = cursor != null ? cursor.startsWith(INDEX_CURSOR)
          : index != null && RadosIndex.servesPrefix(prefix) && indexReady();
      if (!fromIndex) {
        ScanPage p = listings.page(prefix, cursor, limit);
        RadosCallTimes.record("scan.listing", t0);
        return p;
      }
      ScanPage p = index.scan(prefix,
          cursor == null ? null : cursor.substring(INDEX_CURSOR.length()), limit);
      RadosCallTimes.record("scan.index." + prefix.charAt(0), t0);
      return p.isLast() ? p : new ScanPage(p.keys(), INDEX_CURSOR + p.nextCursor());
    });
  }

  /** Marks the cursor of an index scan (the last key returned); listing cursors are UUIDs. */
  private static final String INDEX_CURSOR = "index:";

  /** While the index is being built, its description is read again at most once a second. */
  private boolean indexReady() throws IOException {
    if (indexReady) {
      return true;
    }
    long now = System.nanoTime();
    if (now - nextIndexCheck >= 0) {
      nextIndexCheck = now + TimeUnit.SECONDS.toNanos(1);
      RadosIndexes.Meta meta = RadosIndexes.readMeta(cluster, pool, keys);
      indexReady = meta != null && meta.ready();
    }
    return indexReady;
  }

  /** The name index, or null in pure-scan mode (tests and the index commands). */
  RadosIndex index() {
    return index;
  }

  interface ClusterCall<T> {
    T call(RadosCluster cluster, String pool, RadosKeys keys) throws IOException;
  }

  /** Runs index maintenance on this store's connection while it is open (tests). */
  <T> T withCluster(ClusterCall<T> call) throws IOException {
    return whileOpen(() -> call.call(cluster, pool, keys));
  }

  /** Closes the listing behind a cursor whose caller stops before its last page. */
  @Override
  public void closeScan(String cursor) {
    // Under the read lock: a listing taken from the map here must not be closed after
    // close() has let the cluster free its context (close() closes the rest itself).
    Lock open = lifecycle.readLock();
    open.lock();
    try {
      listings.close(cursor);
    } finally {
      open.unlock();
    }
  }

  /** The listings held open for cursors now: a gauge, bounded by RadosListings.MAX_OPEN. */
  int openListings() {
    return listings.open();
  }

  // ------------------------------------------------------------------ AIO plumbing

  private interface Submit {
    int call(Pointer io, Pointer completion);
  }

  private interface OnSuccess<T> {
    /** {@code version}: the object's, as the OSD reported it with the result. */
    T apply(int rc, long version) throws IOException;
  }

  private interface OnDone {
    void accept(int rc, long version);
  }

  /** An operation in flight; holds its native buffer until librados is done with it. */
  private static final class Pending {
    /** The native memory librados reads from or writes into: kept alive until done. */
    final Object buffer;
    final Executor executor;
    final OnDone onDone;
    /** The handle the call runs on: closed only once every such call has completed. */
    final RadosCluster cluster;

    Pending(Object buffer, Executor executor, OnDone onDone, RadosCluster cluster) {
      this.buffer = buffer;
      this.executor = executor;
      this.onDone = onDone;
      this.cluster = cluster;
    }
  }

  private <T> CompletableFuture<T> submit(String op, String key, Object buffer, Submit submit,
      RadosKeys.Location loc, OnSuccess<T> onSuccess) {
    CompletableFuture<T> result = new CompletableFuture<>();
    long t0 = System.nanoTime();
    result.whenComplete((v, t) -> RadosCallTimes.record("object." + op, t0));
    Lock open = lifecycle.readLock();
    open.lock();
    try {
      checkOpen();
      Pointer io = io(loc);
      return submitOpen(op, key, buffer, submit, io, onSuccess, result);
    } catch (IOException e) {
      return CompletableFuture.failedFuture(e);
    } finally {
      open.unlock();
    }
  }

  private <T> CompletableFuture<T> submitOpen(String op, String key, Object buffer,
      Submit submit, Pointer io, OnSuccess<T> onSuccess, CompletableFuture<T> result) {
    long id = NEXT_ID.getAndIncrement();
    PENDING.put(id, new Pending(buffer, completions, (rc, version) -> {
      if (rc < 0) {
        result.completeExceptionally(RadosErrors.toException(op, key, rc));
        return;
      }
      try {
        result.complete(onSuccess.apply(rc, version));
      } catch (IOException | RuntimeException e) {
        result.completeExceptionally(e);
      }
    }, cluster));
    // Counted before the call: close() waits for it (under our read lock here, so the
    // count is up before close can look at it).
    cluster.aioStarted();
    PointerByReference completion = new PointerByReference();
    int rc;
    try {
      rc = LIB.rados_aio_create_completion2(new Pointer(id), ON_COMPLETE, completion);
      if (rc < 0) {
        notSubmitted(id);
        return CompletableFuture.failedFuture(RadosErrors.toException(op, key, rc));
      }
      rc = submit.call(io, completion.getValue());
    } catch (RuntimeException | Error e) {
      // Thrown, not returned (a JNA link error, no memory): never submitted, and
      // counted it would hold every later close of the handle for the whole bound.
      notSubmitted(id);
      throw e;
    }
    if (rc < 0) {
      LIB.rados_aio_release(completion.getValue());
      notSubmitted(id);
      return CompletableFuture.failedFuture(RadosErrors.toException(op, key, rc));
    }
    // librados times out by itself (rados_osd_op_timeout); this is the backstop should a
    // completion never come. The buffer stays referenced until librados calls back.
    return result.orTimeout(opTimeout.toMillis() + 10_000, TimeUnit.MILLISECONDS)
        .exceptionallyCompose(t -> {
          Throwable cause = t instanceof java.util.concurrent.CompletionException
              && t.getCause() != null ? t.getCause() : t;
          if (cause instanceof TimeoutException) {
            return CompletableFuture.failedFuture(new StoreUnavailableException(
                op + " " + key + ": no completion from librados within "
                    + (opTimeout.toSeconds() + 10) + " s", cause));
          }
          return CompletableFuture.failedFuture(cause);
        });
  }

  /**
   * A call librados never took: uncounted by whoever removes its pending entry, this or
   * {@link #completed} (never both, so the count cannot drop below the calls in flight).
   */
  private void notSubmitted(long id) {
    if (PENDING.remove(id) != null) {
      cluster.aioDone();
    }
  }

  /** Runs on a librados thread: collect the code, free the completion, hand off. */
  private static void completed(Pointer completion, Pointer arg) {
    int rc = LIB.rados_aio_get_return_value(completion);
    long version = LIB.rados_aio_get_version(completion);
    LIB.rados_aio_release(completion);
    Pending p = PENDING.remove(Pointer.nativeValue(arg));
    if (p != null) {
      // The call's last use of the handle is behind it: counted done before the hand-off,
      // so that a close() run by the hand-off itself does not wait for its own call.
      p.cluster.aioDone();
      try {
        p.executor.execute(() -> p.onDone.accept(rc, version));
      } catch (java.util.concurrent.RejectedExecutionException closing) {
        p.onDone.accept(rc, version); // the store is closing: finish here
      }
    }
  }

  /** Under the lifecycle lock: after close every call fails, typed, without native use. */
  private void checkOpen() throws IOException {
    if (closed) {
      throw new IOException("RADOS store on pool " + pool + " is closed");
    }
  }

  @Override
  public void close() {
    Lock l = lifecycle.writeLock();
    l.lock();
    try {
      if (closed) {
        return;
      }
      closed = true;
      listings.closeAll();
    } finally {
      l.unlock();
    }
    completions.shutdown();
    // One bound for both waits below (librados's op timeout and a margin).
    long deadline = System.nanoTime() + opTimeout.plus(RadosCluster.AIO_DRAIN_SLACK).toNanos();
    // Waits for the calls in flight only when this is the handle's last store: another
    // store still open keeps the contexts, and this store's late completions then run on
    // the librados thread that delivers them (its executor is shut down).
    cluster.release(deadline);
    // Completions already handed to the executor finish before close returns, so a
    // caller sees every call made before close() settled once it returns (not awaited
    // when close() runs on that executor: it would wait for itself).
    if (completionThreads.contains(Thread.currentThread())) {
      return;
    }
    try {
      completions.awaitTermination(Math.max(0, deadline - System.nanoTime()),
          TimeUnit.NANOSECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  @Override
  public String toString() {
    return "RadosBlobStore{pool=" + pool + ", namespace=" + baseNamespace + "}";
  }
}
