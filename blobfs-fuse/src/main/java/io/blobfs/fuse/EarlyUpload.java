package io.blobfs.fuse;

import io.blobfs.namespace.BlobNamespace;
import io.blobfs.namespace.FileWriter;
import io.blobfs.namespace.FsPath;
import java.io.IOException;
import java.nio.channels.FileChannel;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executor;

/**
 * The next version of a staged file, uploaded while it is being written: the bytes from
 * the start of the file up to the first byte not yet written go to a {@link FileWriter}
 * in the background, so that a close or fsync uploads only the rest instead of the whole
 * file (an HPC program writing its output front to back, or N processes each filling
 * their part, waits at the end for the last stripes, not for all of them).
 *
 * <p>Safety: the writer's bytes become visible only at its close, at the next
 * publication, as a whole new version (close-to-open is unchanged). An uploaded byte must
 * still be the file's byte then: a write below what is claimed for upload, or any
 * truncate, <em>breaks</em> this upload, and the publication writes the file whole as
 * before. A range is claimed only once written and no write into it is in flight, so a
 * claimed range never changes under the upload.
 *
 * <p>Thread-safety: the bookkeeping is under this object's monitor; the writer is used by
 * one background task at a time, then, after {@link #finish} has waited for it, by the
 * publishing thread.
 */
final class EarlyUpload {
  private static final System.Logger LOG = System.getLogger(EarlyUpload.class.getName());
  /** Bytes gathered before a background upload starts (and between its rounds). */
  static final long DEFAULT_CHUNK = 8L << 20;

  private final FileChannel channel;
  private long chunk = DEFAULT_CHUNK;
  /** Written ranges beyond the contiguous start, start to end, merged as they meet. */
  private final TreeMap<Long, Long> ranges = new TreeMap<>();
  /** Start offsets of writes in flight, with their counts. */
  private final TreeMap<Long, Integer> inFlight = new TreeMap<>();
  /** Every byte below it has been written (or was there when the file was staged). */
  private long prefix;
  private long uploaded;
  private long claimed;
  private boolean broken;
  /**
   * While a publication takes this upload ({@link #stopAt} to {@link #finish}): the
   * version's length, past which nothing is claimed; no task starts and the running one
   * ends at its next round. Without it, when other descriptors write faster than the
   * store takes the bytes, the task never ran out of work, the fsync waited for as long
   * as they wrote, and the task claimed bytes past the version, which threw the early
   * upload away and sent the whole file again. {@link #NO_LIMIT}: none.
   */
  private long limit = NO_LIMIT;
  private static final long NO_LIMIT = -1;
  private FileWriter writer;
  private CompletableFuture<Void> task = CompletableFuture.completedFuture(null);
  /**
   * The token of a task handed to the executor that has not started yet: {@link #finish}
   * and {@link #abandon} withdraw it instead of waiting behind other files' uploads in
   * the pool; the task, when it comes up, finds its token gone and does nothing.
   */
  private Object queued;

  private WriteStats stats = new WriteStats();

  EarlyUpload(FileChannel channel, long present) {
    this.channel = channel;
    this.prefix = present;
  }

  synchronized void stats(WriteStats s) {
    stats = s;
  }

  synchronized void chunk(long bytes) {
    chunk = bytes;
  }

  /** Before a write of {@code [offset, ...)} touches the file. */
  synchronized void writing(long offset) {
    if (offset < claimed) {
      broken = true;
    }
    inFlight.merge(offset, 1, Integer::sum);
  }

  /**
   * After that write: the range counts as written; starts a background upload when
   * enough lies ready ahead of what is uploaded and {@code path} has a file to become.
   */
  void written(long offset, long end, BlobNamespace ns, FsPath path, Executor executor) {
    synchronized (this) {
      inFlight.computeIfPresent(offset, (k, n) -> n == 1 ? null : n - 1);
      addRange(offset, end);
      if (ns == null || broken || limit != NO_LIMIT || !task.isDone()
          || ready() - uploaded < chunk) {
        return;
      }
      Object token = new Object();
      queued = token;
      task = CompletableFuture.runAsync(() -> start(token, ns, path), executor);
    }
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
  synchronized void failed(long offset) {
    inFlight.computeIfPresent(offset, (k, n) -> n == 1 ? null : n - 1);
    broken = true; // bytes of it may have landed anywhere in the range
  }

  /**
   * A truncate to {@code size}: what was uploaded may no longer be the file; bytes past
   * the size are gone, and an extension is a hole, never counted as written.
   */
  synchronized void truncated(long size) {
    broken = true;
    prefix = Math.min(prefix, size);
    ranges.tailMap(size, true).clear();
    Map.Entry<Long, Long> last = ranges.lastEntry();
    if (last != null && last.getValue() > size) {
      ranges.put(last.getKey(), size); // the entry is a snapshot: setValue is refused
    }
  }

  /** The end of what may be claimed: written, and no write in flight into it. */
  private long ready() {
    return inFlight.isEmpty() ? prefix : Math.min(prefix, inFlight.firstKey());
  }

  private void addRange(long start, long end) {
    if (start <= prefix) {
      prefix = Math.max(prefix, end);
    } else {
      Map.Entry<Long, Long> before = ranges.floorEntry(start);
      if (before != null && before.getValue() >= start) {
        start = before.getKey();
        end = Math.max(end, before.getValue());
      }
      ranges.put(start, end);
      Map.Entry<Long, Long> next;
      while ((next = ranges.higherEntry(start)) != null && next.getKey() <= end) {
        end = Math.max(end, next.getValue());
        ranges.remove(next.getKey());
        ranges.put(start, end);
      }
    }
    Map.Entry<Long, Long> first;
    while ((first = ranges.firstEntry()) != null && first.getKey() <= prefix) {
      prefix = Math.max(prefix, first.getValue());
      ranges.remove(first.getKey());
    }
  }

  /** The background task: uploads ready chunks until less than a chunk waits. */
  private void run(BlobNamespace ns, FsPath path) {
    try {
      while (true) {
        long from;
        long to;
        FileWriter w;
        synchronized (this) {
          if (broken) {
            return;
          }
          w = writer;
        }
        if (w == null) { // created outside the monitor: a store call
          FileWriter created = ns.create(path, true);
          synchronized (this) {
            writer = created; // only this task creates it; finish() waits for the task
          }
          w = created;
        }
        synchronized (this) {
          long end = ready();
          if (broken || limit != NO_LIMIT || end - uploaded < chunk) {
            return; // a publication is taking the upload: it sends the rest itself
          }
          from = uploaded;
          to = end - (end - uploaded) % chunk; // whole chunks: fewer, larger rounds
          claimed = to;
        }
        w.transferFrom(channel, from, to - from);
        synchronized (this) {
          uploaded = to;
          stats.early(to - from);
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
   * its snapshot): from now on nothing past them is claimed, and no round starts.
   */
  synchronized void stopAt(long length) {
    limit = length;
  }

  /**
   * Called by a publication (one at a time; writes may go on meanwhile): waits for the
   * background task, then returns the writer with the file's bytes up to {@code
   * uploadedOut[0]} for the publication to complete, or null (nothing usable: broken,
   * made for another name, or past {@code length}), giving up what was uploaded. Either
   * way this upload is over; the next writes start another, with a writer of its own.
   */
  FileWriter finish(FsPath path, long length, long[] uploadedOut) {
    FileWriter w;
    long done;
    boolean usable;
    stopAt(length); // if the caller did not at its snapshot
    while (true) {
      CompletableFuture<Void> running;
      synchronized (this) {
        running = withdrawOrRunning();
        if (running.isDone()) {
          // taken and reset in the monitor that saw no task running: a write racing this
          // publication starts its task only after, with a writer of its own, never this one
          w = writer;
          done = uploaded;
          usable = w != null && !broken && w.path().equals(path) && done <= length;
          writer = null;
          broken = false;
          uploaded = 0;
          claimed = 0;
          limit = NO_LIMIT;
          // the written ranges stay: the next version's upload starts again from the
          // start and claims only bytes written (holes another writer has yet to fill
          // are not)
          break;
        }
      }
      running.join(); // never fails: run() catches what it throws; it ends at its round
                      // under way, and no write starts another while the limit is set
    }
    if (!usable && w != null) {
      w.abort();
      w = null;
    }
    uploadedOut[0] = w == null ? 0 : done;
    return w;
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
