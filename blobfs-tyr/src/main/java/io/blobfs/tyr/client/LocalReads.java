package io.blobfs.tyr.client;

import io.blobfs.tyr.api.BlobStat;
import io.blobfs.tyr.api.ErrorCode;
import io.blobfs.tyr.api.LocalGrant;
import io.blobfs.tyr.api.LocalIdentity;
import io.blobfs.tyr.api.TyrException;
import java.io.EOFException;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.AccessDeniedException;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Short-circuit reads: when this process sees the node's files, a read asks the node for a
 * grant (the pieces of log segment files that hold one committed version of the range,
 * pinned against compaction) and reads them itself, straight into the caller's buffer,
 * instead of having the bytes sent over the connection. Segments are append-only and
 * their numbers never reused, and a file opened stays readable after it is deleted, so
 * the bytes are exactly the version granted however the blob is overwritten or compacted
 * meanwhile.
 *
 * <p><b>When.</b> Once per client, the node names its directory and a token it wrote
 * there; local reads are on only if this process reads that token at that path (same host,
 * same file system view, and the permission to read the node's files: its directory is
 * owner-only, so in practice the node's own user). Grants are answered on authenticated
 * connections only, like every request.
 *
 * <p><b>Fallback.</b> Any failure of a local read (no grant, a file that cannot be opened
 * or is short) makes that read go over the connection, counted in {@link LocalReadStats#fallbacks}.
 * A failure that will not go away (the node does not know grants, the files are not ours
 * to read) turns local reads off for this client.
 */
final class LocalReads {
  private static final Logger LOG = LoggerFactory.getLogger(LocalReads.class);
  private static final ByteBuffer ZEROS = ByteBuffer.allocateDirect(64 << 10);

  /** What this needs of the client: calls, on a connection the caller can call again. */
  interface Calls {
    CompletableFuture<LocalIdentity> localInfo();

    /** A grant and the connection it was made on (its release must go there). */
    CompletableFuture<Granted> grant(String key, long offset, int length);

    void release(Granted g);
  }

  record Granted(LocalGrant grant, CompletableFuture<Connection> connection) {}

  private final Calls calls;
  private final String address;
  /**
   * The budget of segment files open in snapshots at once, and what open snapshots hold of
   * it (guarded by budgetLock). Why a budget: each open stream holds a snapshot per stripe
   * it reads, each with its segment files open, for as long as the stream is open; without
   * a bound, many open streams (FUSE handles, a Spark executor's readers) take the process
   * to its {@code ulimit -n}, and then sockets and staging files fail too, not only
   * snapshots. A snapshot over budget is simply not opened (its reads take a grant each).
   */
  private final int maxFds;
  private int fdsHeld;
  /**
   * A snapshot not read for this long is closed (0: never), checked by {@link #sweeper}.
   * Why: a snapshot keeps its segment files open, and one stripe (64 MiB) keeps its whole
   * segment's disk (1 GiB by default) once compaction deletes it, counted by no one; a
   * stream held open and idle (an HBase or LLAP cache, a FUSE handle) would keep it for
   * its whole life. Its next read opens another snapshot: a grant and the opens again.
   */
  private final long idleNanos;
  private volatile ScheduledExecutorService sweeper;
  private final Object budgetLock = new Object();
  private final AtomicLong localReads = new AtomicLong();
  private final AtomicLong localBytes = new AtomicLong();
  private final AtomicLong fallbacks = new AtomicLong();
  /**
   * The node's directory as this process sees it: completes with null if it does not see
   * it, fails if the question was lost with its connection; null until first asked.
   */
  private volatile CompletableFuture<LocalIdentity> identity;
  private volatile boolean off;
  /**
   * Set by {@link #close}: no snapshot is opened after it, and reads fail with the client's
   * "closed" error. The snapshots open are tracked so that close closes them: a stream left
   * open past its client's close would otherwise keep segment files (and a deleted
   * segment's disk) open until a garbage collection.
   */
  private volatile boolean closed;
  /**
   * The snapshots handed out and not yet released, by their files, held weakly: a snapshot
   * dropped unclosed is then collected and its {@link LocalSnapshot.Files} (its Cleaner
   * action) gives its files back, where a strong set would keep it, and its share of the
   * budget, for the client's life when no idle timeout closes it.
   */
  private final Map<LocalSnapshot.Files, java.lang.ref.WeakReference<LocalSnapshot>> handedOut =
      new java.util.concurrent.ConcurrentHashMap<>();
  /** Snapshots not opened because the file budget was spent (see {@link #refusedForBudget}). */
  private final AtomicLong refusedForBudget = new AtomicLong();
  private volatile ExecutorService readers;
  private final java.util.concurrent.atomic.AtomicBoolean prepared =
      new java.util.concurrent.atomic.AtomicBoolean();

  LocalReads(Calls calls, String address, int maxFds, Duration idle) {
    this.calls = calls;
    this.address = address;
    this.maxFds = maxFds;
    // Saturated: a huge timeout (200000d) is "practically never", not an overflow at start.
    this.idleNanos = idle.compareTo(Duration.ofNanos(Long.MAX_VALUE)) >= 0 ? Long.MAX_VALUE
        : idle.toNanos();
  }

  /** The reader threads, once local reads are on: for tests. */
  ExecutorService readers() {
    return readers;
  }

  /** Segment files open in snapshots now: for tests. */
  int fdsHeld() {
    synchronized (budgetLock) {
      return fdsHeld;
    }
  }

  /** Takes {@code n} files of the budget, or none and false if that would pass it. */
  private boolean takeFds(int n) {
    synchronized (budgetLock) {
      if (fdsHeld + n > maxFds) {
        return false;
      }
      fdsHeld += n;
      return true;
    }
  }

  /** A snapshot's files are closed: they go back to the budget. */
  void closed(LocalSnapshot.Files s, int files) {
    handedOut.remove(s);
    returnFds(files);
  }

  private void returnFds(int n) {
    synchronized (budgetLock) {
      fdsHeld -= n;
    }
  }

  static TyrException clientClosed() {
    return new TyrException(ErrorCode.UNAVAILABLE, "the Týr client is closed");
  }

  /**
   * The reader threads, or this thread once they are shut down (the client closed while
   * a grant was under way): the step then sees {@link #closed} and ends at once. Without
   * this, a rejected step would leave its future never completed.
   */
  private void onReaders(Runnable step) {
    try {
      readers.execute(step);
    } catch (java.util.concurrent.RejectedExecutionException e) {
      step.run();
    }
  }

  private boolean budgetFull() {
    synchronized (budgetLock) {
      return fdsHeld >= maxFds;
    }
  }

  LocalReadStats stats() {
    CompletableFuture<LocalIdentity> id = identity;
    boolean on = !off && id != null && id.isDone() && !id.isCompletedExceptionally()
        && id.join() != null;
    return new LocalReadStats(localReads.get(), localBytes.get(), fallbacks.get(),
        refusedForBudget.get(), on);
  }

  /**
   * Reads into {@code dst} from the node's files, or through {@code remote} if that is not
   * possible; completes with the version read.
   */
  CompletableFuture<BlobStat> read(String key, long offset, ByteBuffer dst,
      Supplier<CompletableFuture<BlobStat>> remote) {
    if (closed) {
      return CompletableFuture.failedFuture(clientClosed());
    }
    if (off) {
      return remote.get();
    }
    return identity().handle((id, err) -> {
      if (err != null) {
        fallbacks.incrementAndGet();
        return null;
      }
      return id;
    }).thenCompose(id -> {
      if (id == null) {
        return remote.get();
      }
      int before = dst.position();
      return calls.grant(key, offset, dst.remaining())
          .thenApplyAsync(g -> readGranted(id, g, dst), this::onReaders)
          .handle((stat, err) -> {
            if (err == null) {
              return CompletableFuture.completedFuture(stat);
            }
            Throwable e = TyrClient.unwrap(err);
            if (e instanceof TyrException t && (t.code() == ErrorCode.NOT_FOUND
                || t instanceof io.blobfs.tyr.ring.WrongEpochException)) {
              // The TCP read would say the same; a cluster client retries on the right node.
              return CompletableFuture.<BlobStat>failedFuture(t);
            }
            fellBack(e);
            dst.position(before);
            return remote.get();
          }).thenCompose(f -> f);
    });
  }

  private BlobStat readGranted(LocalIdentity id, Granted granted, ByteBuffer dst) {
    LocalGrant g = granted.grant();
    Map<String, FileChannel> open = new HashMap<>();
    try {
      if (closed) {
        throw clientClosed();
      }
      if (g.length() > dst.remaining()) {
        throw new IOException("grant of " + g.length() + " bytes for " + dst.remaining());
      }
      for (LocalGrant.Piece p : g.pieces()) {
        if (p.isHole()) {
          zeros(dst, p.length());
          continue;
        }
        FileChannel ch = open.get(p.file());
        if (ch == null) {
          ch = FileChannel.open(id.directory().resolve(p.file()), StandardOpenOption.READ);
          open.put(p.file(), ch);
        }
        readFully(ch, p.position(), dst.slice(dst.position(), p.length()));
        dst.position(dst.position() + p.length());
      }
      countLocal((int) g.length());
      return g.stat();
    } catch (IOException e) {
      throw new java.io.UncheckedIOException(e);
    } finally {
      closeAll(open.values());
      calls.release(granted); // the files are read: the node may reclaim them
    }
  }

  static void closeAll(java.util.Collection<FileChannel> channels) {
    for (FileChannel ch : channels) {
      if (ch == null) {
        continue;
      }
      try {
        ch.close();
      } catch (IOException ignored) {
        // read-only: nothing to lose
      }
    }
  }

  void countLocal(int bytes) {
    localReads.incrementAndGet();
    localBytes.addAndGet(bytes);
  }

  /**
   * A snapshot of the first {@code length} bytes of the newest version of {@code key},
   * read from the node's files for as long as it is open (see {@link LocalSnapshot});
   * completes with null where local reads are off or anything fails on the way (the
   * caller then reads through {@link #read}), never exceptionally. For a caller that
   * knows the blob does not change while it reads (BlobFS's data blobs): {@link #read}
   * keeps "one read, the newest version" for every other caller.
   *
   * <p>Why each step is safe, on top of what makes {@link #read} safe (an authenticated
   * connection, the token check, one committed version per grant):
   * <ol>
   *   <li>GRANT of the whole range: the node answers the pieces of one committed version
   *       and pins their segments, exactly as for one read; only the range is larger.
   *   <li>Every file the grant names is opened before anything else: the pin holds, so no
   *       segment named can have been deleted, and segment numbers are never given to
   *       another file, so each open finds the file the grant means. Segments are
   *       append-only (compaction writes to the log's head, never into a segment), so
   *       the bytes at the granted positions are that version's for as long as the file
   *       is open.
   *   <li>RELEASE at once, unanswered: the pin's only job is that the files exist until
   *       they are opened. An open file stays readable after compaction deletes it, so a
   *       snapshot outlives the grant's lease (60 s) and any compaction, and the node
   *       keeps no state for it. The cost is disk: a segment deleted meanwhile keeps its
   *       blocks until the snapshot closes, as an HDFS short-circuit reader keeps a
   *       deleted block file's.
   *   <li>Reads are positional reads of those files on the reader threads: no call to
   *       the node, no event loop. A read that fails fails its future; the caller reads
   *       through the connection instead.
   * </ol>
   * A grant shorter than {@code length} (the blob is shorter than the caller thinks)
   * gives null, files closed: the caller's own read reports it. So does a snapshot whose
   * files would pass the client's budget of open files ({@link ClientConfig#localReadFds}):
   * checked before the grant when the budget is spent already (no round trip), and taken
   * for the files the grant names before any is opened.
   */
  CompletableFuture<LocalSnapshot> snapshot(String key, int length) {
    if (off || closed) {
      return CompletableFuture.completedFuture(null);
    }
    if (budgetFull()) {
      refusedForBudget();
      return CompletableFuture.completedFuture(null);
    }
    return identity().exceptionally(err -> null).thenCompose(id -> {
      if (id == null || (id.maxGrantBytes() > 0 && length > id.maxGrantBytes())) {
        // Longer than the node grants at once (its frame limit may be below this
        // client's): it would answer TOO_LARGE, so ask nothing; the reads take their own.
        return CompletableFuture.<LocalSnapshot>completedFuture(null);
      }
      return calls.grant(key, 0, length)
          .thenApplyAsync(g -> openGranted(id, g, length), this::onReaders)
          .exceptionally(err -> {
            Throwable e = TyrClient.unwrap(err);
            if (!(e instanceof TyrException t && (t.code() == ErrorCode.NOT_FOUND
                || t instanceof io.blobfs.tyr.ring.WrongEpochException))) {
              fellBack(e); // the caller's reads go over the connection
            }
            return null;
          });
    });
  }

  /** Step 2 of {@link #snapshot}: opens every file, then (step 3) releases the grant. */
  private LocalSnapshot openGranted(LocalIdentity id, Granted granted, int length) {
    LocalGrant g = granted.grant();
    Map<String, FileChannel> open = new HashMap<>();
    int taken = 0;
    boolean done = false;
    try {
      if (closed || g.length() != length) {
        return null; // shorter than the caller thinks: its own read will say so
      }
      int files = (int) g.pieces().stream().filter(p -> !p.isHole())
          .map(LocalGrant.Piece::file).distinct().count();
      if (!takeFds(files)) {
        refusedForBudget();
        return null; // over budget: the caller reads without a snapshot
      }
      taken = files;
      FileChannel[] channels = new FileChannel[g.pieces().size()];
      for (int i = 0; i < channels.length; i++) {
        LocalGrant.Piece p = g.pieces().get(i);
        if (!p.isHole()) {
          FileChannel ch = open.get(p.file());
          if (ch == null) {
            ch = FileChannel.open(id.directory().resolve(p.file()), StandardOpenOption.READ);
            open.put(p.file(), ch);
          }
          if (ch.size() < p.position() + p.length()) {
            throw new EOFException(p.file() + " ends at " + ch.size() + " within a granted piece");
          }
          channels[i] = ch;
        }
      }
      LocalSnapshot.Files held = new LocalSnapshot.Files(channels, taken, this);
      LocalSnapshot s = new LocalSnapshot(g.stat(), g.pieces(), held, readers, this);
      handedOut.put(held, new java.lang.ref.WeakReference<>(s));
      done = true; // from here the snapshot (or its Cleaner) gives the files back
      if (closed) { // close() may have looked before the add: one of the two closes it
        s.close();
        return null;
      }
      return s;
    } catch (IOException e) {
      throw new java.io.UncheckedIOException(e);
    } finally {
      if (!done) {
        closeAll(open.values());
        returnFds(taken);
      }
      // Every file is open (or the snapshot is abandoned): the pin has done its job.
      calls.release(granted);
    }
  }

  static void readFully(FileChannel ch, long position, ByteBuffer dst)
      throws IOException {
    long at = position;
    while (dst.hasRemaining()) {
      int n = ch.read(dst, at);
      if (n < 0) {
        throw new EOFException("segment ends at " + at + " within a granted piece");
      }
      at += n;
    }
  }

  static void zeros(ByteBuffer dst, int n) {
    while (n > 0) {
      int k = Math.min(n, ZEROS.capacity());
      dst.put(ZEROS.duplicate().limit(k));
      n -= k;
    }
  }

  /**
   * Asks the node where its files are now, without waiting, so that the first read finds
   * the answer (and the reader threads) there instead of asking first: the client calls
   * this when it first connects. A job whose reads start after its set-up (TestDFSIO's
   * read job writes only its control files before) then does not ask inside its timed
   * part. Once per client; the question is asked again only as {@link #identity} asks it
   * again (after a connection lost).
   */
  void prepare() {
    if (!off && prepared.compareAndSet(false, true)) {
      identity();
    }
  }

  /** The question of {@link #prepare} or of a read, once asked: for tests. */
  CompletableFuture<LocalIdentity> asked() {
    return identity;
  }

  /**
   * The node's directory if this process sees it, else null; asked once, and again after
   * a call that failed for want of a connection (then the future fails, and this read
   * goes over the connection).
   */
  private CompletableFuture<LocalIdentity> identity() {
    CompletableFuture<LocalIdentity> f = identity;
    if (f != null && !f.isCompletedExceptionally()) {
      return f;
    }
    synchronized (this) {
      if (identity == f) {
        identity = calls.localInfo().thenApply(this::checked)
            .exceptionally(err -> {
              Throwable e = TyrClient.unwrap(err);
              if (e instanceof TyrException t && t.code() == ErrorCode.UNAVAILABLE) {
                throw new java.util.concurrent.CompletionException(t); // ask again later
              }
              turnOff("the node did not say where its files are: " + e);
              return null;
            });
      }
      return identity;
    }
  }

  private LocalIdentity checked(LocalIdentity id) {
    if (!id.visibleHere()) {
      turnOff("this process does not see the node's files at " + id.directory()
          + " (another host or file system, or another user)");
      return null;
    }
    synchronized (this) {
      if (closed) {
        // closed before the node's identity came back: starting the threads now would
        // leave them running, as close() (under this monitor) found none to shut down
        return null;
      }
      if (readers == null) {
        readers = Executors.newFixedThreadPool(4, r -> {
          Thread t = new Thread(r, "tyr-local-read");
          t.setDaemon(true);
          return t;
        });
        if (idleNanos > 0) {
          sweeper = Executors.newSingleThreadScheduledExecutor(r -> {
            Thread t = new Thread(r, "tyr-local-read-idle");
            t.setDaemon(true);
            return t;
          });
          long every = Math.max(idleNanos / 4, TimeUnit.MILLISECONDS.toNanos(10));
          sweeper.scheduleWithFixedDelay(this::closeIdle, every, every,
              TimeUnit.NANOSECONDS);
        }
      }
    }
    LOG.info("Týr {}: reading from the node's files in {}", address, id.directory());
    return id;
  }

  private void fellBack(Throwable e) {
    long n = fallbacks.incrementAndGet();
    Throwable c = e instanceof java.io.UncheckedIOException u ? u.getCause() : e;
    if (c instanceof AccessDeniedException || (c instanceof TyrException t
        && (t.code() == ErrorCode.BAD_REQUEST || t.code() == ErrorCode.UNAUTHENTICATED))) {
      turnOff("a local read failed: " + c);
    } else if (n == 1 || n % 1000 == 0) {
      LOG.warn("Týr {}: a local read fell back to the connection ({} so far): {}", address, n,
          c.toString());
    }
  }

  /**
   * Counts a snapshot not opened for the budget, and says so once per client: a spent
   * budget makes reads slower (a grant per read) and would otherwise be silent.
   */
  private void refusedForBudget() {
    if (refusedForBudget.incrementAndGet() == 1) {
      LOG.info("Týr {}: the budget of {} segment files for local snapshots is spent; reads "
          + "without a snapshot take a grant each (local-reads.max-fds, counted in "
          + "LocalReadStats.snapshotsRefused)", address, maxFds);
    }
  }

  private void turnOff(String why) {
    if (!off) {
      off = true;
      LOG.info("Týr {}: local reads off, reading over the connection: {}", address, why);
    }
  }

  /** Closes the snapshots handed out that nobody has read for {@link #idleNanos}. */
  private void closeIdle() {
    long now = System.nanoTime();
    for (java.lang.ref.WeakReference<LocalSnapshot> r : handedOut.values()) {
      LocalSnapshot s = r.get();
      if (s != null) { // else collected: its Cleaner gives its files back
        s.closeIfIdle(idleNanos, now);
      }
    }
  }

  /**
   * Closes every snapshot handed out (each once its reads in flight are done) and then the
   * reader threads; reads after it fail with the client's "closed" error, as its calls do.
   */
  void close() {
    closed = true;
    for (java.lang.ref.WeakReference<LocalSnapshot> r : handedOut.values()) {
      LocalSnapshot s = r.get();
      if (s != null) {
        s.close();
      }
    }
    ExecutorService r;
    ScheduledExecutorService w;
    synchronized (this) { // as checked(), which starts them only while not closed
      r = readers;
      w = sweeper;
    }
    if (r != null) {
      r.shutdown();
    }
    if (w != null) {
      w.shutdownNow();
    }
  }
}
