package io.blobfs.fuse;

import io.blobfs.namespace.BlobNamespace;
import io.blobfs.namespace.FileInfo;
import io.blobfs.namespace.FileWriter;
import io.blobfs.namespace.FsPath;
import java.io.IOException;
import java.nio.channels.FileChannel;
import java.util.ArrayList;
import java.util.BitSet;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executor;

/**
 * The next version of a staged file, uploaded while it is being written: every whole
 * chunk of the file that has been written goes to a {@link FileWriter} in the background,
 * wherever it lies, so that a close or fsync uploads only the rest instead of the whole
 * file: an HPC program writing its output front to back, and N processes each filling
 * their part of one file (MPI-IO's N-to-1, fio's jobs on a shared file), wait at the end
 * for the last bytes, not for all of them. (Before, only the file's written prefix went
 * up early: with 4 writers filling their quarters, three quarters waited for the fsync.)
 *
 * <p>Safety: the writer's bytes become visible only at its close, at the next
 * publication, as a whole new version (close-to-open is unchanged). An uploaded byte must
 * still be the file's byte then: a write into a chunk claimed for upload, or a truncate
 * that cuts one, <em>breaks</em> this upload, and the publication writes the file whole
 * as before. A chunk is claimed only once written and with no write in flight into it, so
 * a claimed chunk never changes under the upload.
 *
 * <p>Passed-through files ({@link #verifySent}) are written by the kernel, not through the
 * mount: nothing tells of a write into a claimed chunk, during its send or after. There
 * the staged file's growth (polled, {@link #grown}) counts as written, each chunk is sent
 * with the SHA-256 of exactly the bytes sent ({@link SentDigest}), and the publication
 * reads every sent chunk again and sends it a second time if its digest differs
 * ({@link Taken#digests}): trusted bytes are the staged file's as the publication read
 * them, not as they were claimed.
 *
 * <p>Thread-safety: the bookkeeping is under this object's monitor; the writer is used by
 * one background task at a time, then, after {@link #awaitIdle} has waited for it, by the
 * publishing thread.
 */
final class EarlyUpload {
  private static final System.Logger LOG = System.getLogger(EarlyUpload.class.getName());
  /** Bytes gathered before a background upload starts; chunks are aligned to it. */
  static final long DEFAULT_CHUNK = 8L << 20;
  /** Chunks one round claims at most: one run of store writes, several in flight. */
  private static final int RUN = 8;

  private final FileChannel channel;
  private long chunk = DEFAULT_CHUNK;
  /** Written ranges, start to end, merged as they meet. */
  private final TreeMap<Long, Long> ranges = new TreeMap<>();
  /** Writes in flight, {start, end} each (a few at most: one per FUSE thread). */
  private final List<long[]> inFlight = new ArrayList<>();
  /** Chunks (index i: bytes [i * chunk, (i + 1) * chunk)) this version's upload claimed. */
  private final BitSet claimed = new BitSet();
  /** Of those, the ones sent. */
  private final BitSet uploaded = new BitSet();
  private boolean broken;
  /**
   * Passed-through file: the mount does not see its writes, so sent chunks are summed and
   * checked again by the publication instead of protected by {@link #writing}.
   */
  private boolean verify;
  /**
   * With {@link #verify}: the SHA-256 of each sent chunk, by index, as sent (32 bytes per
   * 8 MiB chunk until the publication takes them). Not a CRC32C: see {@link SentDigest}.
   */
  private final Map<Integer, byte[]> digests = new HashMap<>();
  /**
   * While a publication takes this upload (from {@link #stopAt} to {@link #resume}): the
   * version's length; no task starts and the running one ends at its next round. Without
   * it, when other descriptors write faster than the store takes the bytes, the task never
   * ran out of work and the fsync waited for as long as they wrote; and a task started for
   * the next version while the publication still reads would send the same bytes a second
   * time beside it, for a version that may never be needed. {@link #NO_LIMIT}: none.
   */
  private long limit = NO_LIMIT;
  private static final long NO_LIMIT = -1;
  private FileWriter writer;
  /**
   * The published version the next writer is made over ({@link BlobNamespace#createVersion},
   * so that the publication may take its unchanged stripes over); null: a plain new file.
   * Set by the staged file after each commit, before {@link #resume}: a writer is created
   * only by a task, which never runs between a publication's {@link #stopAt} and its
   * {@link #resume}, so every writer is made over the version its staged file holds then.
   */
  private FileInfo base;
  /** The base {@link #writer} was made over (null: a plain new file). */
  private FileInfo writerBase;
  private CompletableFuture<Void> task = CompletableFuture.completedFuture(null);
  /**
   * The token of a task handed to the executor that has not started yet: {@link #awaitIdle}
   * and {@link #abandon} withdraw it instead of waiting behind other files' uploads in
   * the pool; the task, when it comes up, finds its token gone and does nothing.
   */
  private Object queued;
  private WriteStats stats = new WriteStats();

  /**
   * What a publication takes over: the writer and the chunks it holds; not {@code usable}:
   * to be aborted, its chunks are no version's. {@code digests}: for a passed-through
   * file, the SHA-256 of each chunk as sent (by index), which the publication checks
   * against the file before trusting the chunk; null: the chunks cannot have changed since
   * sent.
   */
  record Taken(FileWriter writer, BitSet chunks, long chunk, boolean usable,
      Map<Integer, byte[]> digests, FileInfo base) {
    /** The bytes of the chunks. */
    long bytes() {
      return chunks.cardinality() * chunk;
    }

    /** The end of the last chunk: where a version holding them all ends at the least. */
    long end() {
      return chunks.length() * chunk;
    }
  }

  EarlyUpload(FileChannel channel, long present) {
    this.channel = channel;
    if (present > 0) {
      ranges.put(0L, present);
    }
  }

  synchronized void stats(WriteStats s) {
    stats = s;
  }

  synchronized void chunk(long bytes) {
    chunk = bytes;
  }

  /** The version the next writer is made over; null: none (a plain new file). */
  synchronized void base(FileInfo version) {
    base = version;
  }

  /**
   * Bytes written so far no longer count as written: with shared stripes, a version
   * takes the unchanged stripes of its base over, and a chunk uploaded here makes its
   * stripe one the version must write whole (a writer never takes over a stripe it wrote
   * into, I3). So only chunks written since the last publication's snapshot go up early
   * (called there, and when a copied file starts, whose bytes are its base's). A write in
   * flight now adds its range when it finishes.
   */
  synchronized void forgetWritten() {
    ranges.clear();
  }

  /**
   * From now on the kernel writes the file (FUSE passthrough), unseen: sent chunks carry
   * their digests for the publication to check ({@link #grown} replaces {@link #written}).
   */
  synchronized void verifySent() {
    verify = true;
  }

  /**
   * A passed-through file grew from {@code from} to {@code to} (seen by a poll of its
   * size): those bytes count as written, and a background upload starts as after
   * {@link #written} when a whole chunk is ready. Growth may hide holes still to be
   * filled (another writer's part of the file): a chunk sent with a hole in it differs
   * from the file at the publication's check and is sent again then, never trusted.
   */
  void grown(long from, long to, BlobNamespace ns, FsPath path, Executor executor) {
    written(new long[] {from, to}, ns, path, executor);
  }

  /** Before a write of {@code [offset, end)} touches the file; returns its token. */
  synchronized long[] writing(long offset, long end) {
    if (claims(offset, end)) {
      broken = true;
    }
    long[] w = {offset, end};
    inFlight.add(w);
    return w;
  }

  /** Whether a claimed chunk holds a byte of {@code [start, end)}. */
  private boolean claims(long start, long end) {
    if (end <= start) {
      return false;
    }
    int i = claimed.nextSetBit(index(start));
    return i >= 0 && i <= index(end - 1);
  }

  /**
   * The chunk holding byte {@code offset}. Chunks past {@link #MAX_CHUNKS} (a sparse file
   * written terabytes out) are never claimed: they go up with the publication, and the
   * bitmaps stay small.
   */
  private int index(long offset) {
    return (int) Math.min(offset / chunk, MAX_CHUNKS);
  }

  /** The first chunk starting at or after byte {@code offset}. */
  private int indexUp(long offset) {
    return (int) Math.min((offset + chunk - 1) / chunk, MAX_CHUNKS);
  }

  private static final int MAX_CHUNKS = 1 << 24;

  /**
   * After that write: its range counts as written; starts a background upload when the
   * written range it joined holds a whole chunk not yet claimed and {@code path} has a
   * file to become.
   */
  void written(long[] w, BlobNamespace ns, FsPath path, Executor executor) {
    synchronized (this) {
      inFlight.remove(w); // by identity: arrays do not override equals
      long[] merged = addRange(w[0], w[1]);
      if (ns == null || broken || limit != NO_LIMIT || !task.isDone()
          || firstFree(merged[0], merged[1]) < 0) {
        return;
      }
      Object token = new Object();
      queued = token;
      task = CompletableFuture.runAsync(() -> start(token, ns, path), executor);
    }
  }

  /** The first whole chunk within {@code [start, end)} not claimed, or -1. */
  private int firstFree(long start, long end) {
    int first = indexUp(start);
    int past = index(end);
    int i = claimed.nextClearBit(first);
    return i < past ? i : -1;
  }

  private void start(Object token, BlobNamespace ns, FsPath path) {
    synchronized (this) {
      if (queued != token) {
        return; // withdrawn while it waited in the queue
      }
      queued = null;
    }
    run(ns, path);
  }

  /**
   * Under the monitor: the task to wait for, none if it has not started (it is withdrawn:
   * what it would have uploaded goes up with the publication instead).
   */
  private CompletableFuture<Void> withdrawOrRunning() {
    if (queued != null) {
      queued = null;
      task = CompletableFuture.completedFuture(null); // written() may start the next one
    }
    return task;
  }

  /** That write failed part way: its range is not written, and no longer in flight. */
  synchronized void failed(long[] w) {
    inFlight.remove(w);
    broken = true; // bytes of it may have landed anywhere in the range
  }

  /**
   * A truncate to {@code size}: bytes past it are gone, and an extension is a hole, never
   * counted as written. Only a claimed chunk that reaches past the size is no longer the
   * file: then the upload is broken (a truncate before anything was claimed past it, as a
   * program sizing its file first does, costs nothing).
   */
  synchronized void truncated(long size) {
    if (claimed.nextSetBit(index(size)) >= 0) {
      broken = true;
    }
    ranges.tailMap(size, true).clear();
    Map.Entry<Long, Long> last = ranges.lastEntry();
    if (last != null && last.getValue() > size) {
      ranges.put(last.getKey(), size); // the entry is a snapshot: setValue is refused
    }
  }

  /** Adds a written range, merging it with those it meets; returns the merged range. */
  private long[] addRange(long start, long end) {
    Map.Entry<Long, Long> before = ranges.floorEntry(start);
    if (before != null && before.getValue() >= start) {
      start = before.getKey();
      end = Math.max(end, before.getValue());
    }
    Map.Entry<Long, Long> next;
    while ((next = ranges.ceilingEntry(start)) != null && next.getKey() <= end) {
      end = Math.max(end, next.getValue());
      ranges.remove(next.getKey());
    }
    ranges.put(start, end);
    return new long[] {start, end};
  }

  /**
   * Under the monitor: the next chunks to claim, {first, past} indexes, up to {@link #RUN}
   * consecutive ones, whole, written, unclaimed and with no write in flight; null: none.
   */
  private int[] nextRun() {
    for (Map.Entry<Long, Long> r : ranges.entrySet()) {
      int past = index(r.getValue());
      int i = indexUp(r.getKey());
      while ((i = claimed.nextClearBit(i)) < past) {
        if (busy(i)) {
          i++;
          continue;
        }
        int k = i + 1;
        while (k < past && k < i + RUN && !claimed.get(k) && !busy(k)) {
          k++;
        }
        return new int[] {i, k};
      }
    }
    return null;
  }

  /** Whether a write in flight touches chunk {@code i}. */
  private boolean busy(int i) {
    long start = i * chunk;
    long end = start + chunk;
    for (long[] w : inFlight) {
      if (w[0] < end && w[1] > start) {
        return true;
      }
    }
    return false;
  }

  /** The background task: uploads runs of ready chunks until none is left. */
  private void run(BlobNamespace ns, FsPath path) {
    try {
      while (true) {
        FileWriter w;
        synchronized (this) {
          if (broken) {
            return;
          }
          w = writer;
        }
        if (w == null) { // created outside the monitor: a store call
          FileInfo over;
          synchronized (this) {
            over = base;
          }
          // A version of the staged file's base (shared stripes): its publication names
          // the base's unchanged stripes instead of sending them (StagedFile#upload). The
          // base's name may be an older one (renamed while open): the version is of the
          // same file (same record) at the name it has now.
          FileWriter created = over == null ? ns.create(path, true)
              : ns.createVersion(path, StagedFile.at(over, path));
          synchronized (this) {
            writer = created; // only this task creates it; awaitIdle() waits for the task
            writerBase = over;
          }
          w = created;
        }
        int[] run;
        synchronized (this) {
          if (broken || limit != NO_LIMIT) {
            return; // a publication is taking the upload: it sends the rest itself
          }
          run = nextRun();
          if (run == null) {
            return;
          }
          claimed.set(run[0], run[1]);
        }
        long from = run[0] * chunk;
        long bytes = (run[1] - run[0]) * chunk;
        w.seek(from);
        if (!verify) {
          w.transferFrom(channel, from, bytes);
        } else {
          // the kernel may write into these bytes while they are read, and after: the
          // digest of exactly what was sent, which the publication compares with the file
          for (int i = run[0]; i < run[1]; i++) {
            SentDigest digest = new SentDigest();
            w.transferFrom(channel, i * chunk, chunk, digest);
            byte[] d = digest.digest();
            synchronized (this) {
              digests.put(i, d);
            }
          }
        }
        synchronized (this) {
          uploaded.set(run[0], run[1]);
          stats.early(bytes);
        }
      }
    } catch (IOException | RuntimeException e) {
      synchronized (this) {
        broken = true; // the publication writes the file whole and reports what fails
      }
      // No data is lost, but an upload that keeps failing (a full pool, a lapsed lease, a
      // dead OSD) would otherwise go unseen. Once per version: a broken upload starts no
      // other task until the next publication.
      LOG.log(System.Logger.Level.WARNING, "background upload of " + path + " failed; its"
          + " next publication uploads the whole file", e);
    }
  }

  /**
   * A publication of the file's first {@code length} bytes begins (called where it takes
   * its snapshot): from now on nothing past them is claimed, and no round starts, until
   * {@link #resume}.
   */
  synchronized void stopAt(long length) {
    limit = length;
  }

  /** The publication ended: the next writes may start the next version's upload. */
  synchronized void resume() {
    limit = NO_LIMIT;
  }

  /**
   * Called by a publication (one at a time; writes may go on meanwhile), outside any lock:
   * stops the upload at {@code length} and waits until no background task runs. None
   * starts again before {@link #resume}: written() starts none while the limit is set, and
   * a queued one is withdrawn here.
   */
  void awaitIdle(long length) {
    stopAt(length); // if the caller did not at its snapshot
    while (true) {
      CompletableFuture<Void> running;
      synchronized (this) {
        running = withdrawOrRunning();
        if (running.isDone()) {
          return;
        }
      }
      running.join(); // never fails: run() catches what it throws; it ends at its round
                      // under way, and no write starts another while the limit is set
    }
  }

  /**
   * After {@link #awaitIdle}: takes the writer with the chunks it holds for the publication
   * to complete, and resets this upload ({@code claimed} cleared: from here on a write into
   * a sent chunk no longer breaks anything, so the caller must already be tracking such
   * writes, see StagedFile's Reading). Returns null if there is no writer. The writer is
   * {@link Taken#usable} unless broken or made for another name; an unusable one is the
   * caller's to abort, outside its locks (a store call). Either way this upload is over;
   * once the publication calls {@link #resume}, the next writes start another, with a
   * writer of its own.
   *
   * <p>Its chunks may reach past the version's length: a passed-through file's growth
   * polled between the publication's stamp and its {@link #stopAt} (another process
   * appending during an fsync) is claimed and sent before the limit is set. Such a writer
   * is still usable (the publication grows the version over those chunks, see StagedFile's
   * upload); until session 14 it was not, and the publication aborted every chunk sent
   * and uploaded the whole file.
   */
  synchronized Taken take(FsPath path) {
    if (!withdrawOrRunning().isDone()) {
      throw new IllegalStateException("take() before awaitIdle(): a task still runs");
    }
    FileWriter w = writer;
    FileInfo over = writerBase;
    BitSet chunks = (BitSet) uploaded.clone();
    boolean usable = w != null && !broken && w.path().equals(path);
    Map<Integer, byte[]> sent = verify ? new HashMap<>(digests) : null;
    writer = null;
    writerBase = null;
    broken = false;
    claimed.clear();
    uploaded.clear();
    digests.clear();
    // the written ranges stay: the next version's upload claims again every chunk written
    // (holes another writer has yet to fill are not)
    return w == null ? null : new Taken(w, chunks, chunk, usable, sent, over);
  }

  /** The staged file is gone: the upload is dropped, its data removed. */
  void abandon() {
    CompletableFuture<Void> running;
    synchronized (this) {
      // in one step: a written() before this started the task read here, and one after
      // sees broken and starts none, so no task can set a writer after the abort below
      broken = true;
      running = withdrawOrRunning();
    }
    running.join();
    synchronized (this) {
      if (writer != null) {
        writer.abort();
        writer = null;
      }
    }
  }
}
