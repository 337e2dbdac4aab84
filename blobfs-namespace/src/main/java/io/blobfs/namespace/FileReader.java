package io.blobfs.namespace;

import io.blobfs.store.BlobNotFoundException;
import io.blobfs.store.InProcess;
import io.blobfs.store.LendsReads;
import io.blobfs.store.LendsReads.ReadLoan;
import io.blobfs.store.SnapshotReads.Snapshot;
import java.io.EOFException;
import java.io.FileNotFoundException;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;

/**
 * Positioned reads of one file, straight from the blobs that hold the bytes: a read is
 * split at stripe boundaries and the parts are sent together. Thread-safe; the Hadoop
 * stream adds buffering and the seek position.
 *
 * <p>Where the store offers {@link io.blobfs.store.SnapshotReads} (Týr with local reads),
 * the reads of one data blob are served by one snapshot of it, opened at its first read
 * and held until {@link #close} or {@link #unbuffer} (at most {@value #MAX_SNAPSHOTS}):
 * on Týr, one grant and one open per segment file for a whole stripe instead of a grant,
 * opens and a release per read. This is safe only because a data blob never changes once the record
 * that names it is published: it is written under a fresh file id before the record, and
 * never written again (no append, truncate or rewrite: a new version of a file is a new
 * file id; a later version may name it through its stripe map instead of writing its own,
 * {@link FileWriter#takeOver}, but never writes it: a writer refuses to take over a stripe
 * it wrote, and to write one it took), only deleted. A reader of a version replaced by one
 * that took some of its stripes over reads its own bytes from those (the same key, the same
 * bytes) and FileNotFoundException from the others once deleted: never the new
 * version's. So the version a snapshot holds is the only version the blob
 * ever has while a record names it, and a snapshot's reads are the bytes the store's
 * reads would give. One difference: a stripe whose snapshot is open stays readable after
 * the file is deleted or overwritten (as HDFS's open blocks do), where a read through the
 * store fails with FileNotFoundException once the old data blobs are gone.
 */
public final class FileReader {
  /**
   * Snapshots held at once: the stripe being read and those its read-ahead reaches. Fixed,
   * not derived from the read-ahead or stripe size, because evicting a snapshot costs
   * little: Týr's snapshots let the reads they have accepted finish before their files
   * close (they count them); a read not yet accepted (its snapshot still opening when it
   * was evicted, or in the moment before the read starts) falls back to the store's plain
   * read, and another store's snapshot may fail its reads in flight
   * ({@link io.blobfs.store.SnapshotReads}), which then fall back too. So a small stripe or
   * a long read-ahead costs a later read of an evicted stripe a new snapshot, or one read a
   * fallback. A larger bound
   * would only hold more files open per stream (the client's file budget bounds them all).
   */
  static final int MAX_SNAPSHOTS = 4;

  /**
   * How long a stripe the store gave no snapshot (null: its file budget spent, or the
   * open failed) reads without one before its next read asks again. Why not never: the
   * budget frees as other streams close or go idle, and a long-lived stream opened while
   * it was spent (HBase, LLAP: hundreds of open files) would otherwise take a grant per
   * read on that stripe for its life. Why not every read: a refusal after the grant
   * (the grant named more files than the budget has left) or a failed open costs a round
   * trip, which asking once a second bounds; a refusal before it (budget already spent,
   * local reads off) costs nothing.
   */
  static final long SNAPSHOT_RETRY_NANOS = java.util.concurrent.TimeUnit.SECONDS.toNanos(1);

  private final BlobNamespace ns;
  private final FileInfo info;
  private final FileRecord record;
  private final long maxOp;
  private final boolean snapshotReads;
  /** Set by {@link #close}: no snapshot is opened after it; guarded by snapshots. */
  private boolean closed;
  /** Open snapshots by data key, least recently used first; guarded by itself. */
  private final Map<String, Asked> snapshots = new LinkedHashMap<>(4, 0.75f, true);

  /** A stripe's snapshot as asked of the store, and when (System.nanoTime). */
  private record Asked(CompletableFuture<Snapshot> future, long at) {}

  FileReader(BlobNamespace ns, FileInfo info) {
    this.ns = ns;
    this.info = info;
    this.record = info.record();
    this.maxOp = ns.calls().store().limits().maxOpBytes();
    this.snapshotReads = ns.calls().snapshotReads() && !record.isInline();
  }

  public FileInfo info() {
    return info;
  }

  public long length() {
    return info.length();
  }

  /**
   * True if the store serves calls in this process at memory speed ({@link InProcess}):
   * a stream then reads straight into the caller's array, with no buffer or read-ahead.
   */
  public boolean inProcess() {
    return ns.calls().store() instanceof InProcess;
  }

  /**
   * Reads {@code min(dst.remaining(), length - position)} bytes into {@code dst}, advancing
   * its position. Completes with that count, or -1 if {@code position} is at or past the
   * end of the file.
   */
  public CompletableFuture<Integer> read(long position, ByteBuffer dst) {
    if (position < 0) {
      return CompletableFuture.failedFuture(
          new EOFException("negative read position " + position + " in " + info.path()));
    }
    long length = info.length();
    if (position >= length) {
      return CompletableFuture.completedFuture(dst.hasRemaining() ? -1 : 0);
    }
    int total = (int) Math.min(dst.remaining(), length - position);
    int start = dst.position();
    if (record.isInline()) {
      dst.put(record.inline(), (int) position, total);
      return CompletableFuture.completedFuture(total);
    }
    long stripeSize = record.stripeSize();
    List<CompletableFuture<Void>> parts = new ArrayList<>();
    int done = 0;
    while (done < total) {
      long pos = position + done;
      long stripe = pos / stripeSize;
      long offset = pos % stripeSize;
      int n = (int) Math.min(Math.min(total - done, stripeSize - offset), maxOp);
      ByteBuffer slice = dst.slice(start + done, n);
      String key = record.stripeKey(ns.layout(), stripe);
      parts.add(snapshotReads ? readFromSnapshot(key, stripe, offset, slice, n)
          : readPart(key, offset, slice, n));
      done += n;
    }
    return CompletableFuture.allOf(parts.toArray(new CompletableFuture<?>[0]))
        .thenApply(v -> {
          dst.position(start + total);
          return total;
        });
  }

  /** Reads exactly {@code n} bytes: the record says they exist, so less is an error. */
  private CompletableFuture<Void> readPart(String key, long offset, ByteBuffer slice, int n) {
    return ns.calls().read(key, offset, slice).handle((got, error) -> {
      if (error != null) {
        throw failure(key, error);
      }
      return got;
    }).thenCompose(got -> {
      if (got < 0) {
        return CompletableFuture.failedFuture(endedEarly(key));
      }
      if (got < n) {
        return readPart(key, offset + got, slice, n - got);
      }
      return CompletableFuture.completedFuture(null);
    });
  }

  /**
   * Reads exactly {@code n} bytes from the stripe's snapshot, or through the store if it
   * has none or its read fails (the store's read then says what is wrong, if anything).
   */
  private CompletableFuture<Void> readFromSnapshot(String key, long stripe, long offset,
      ByteBuffer slice, int n) {
    int before = slice.position();
    return snapshot(key, stripe).thenCompose(s -> {
      if (s == null) {
        return readPart(key, offset, slice, n);
      }
      return ns.calls().read(s, offset, slice).handle((got, error) -> {
        if (error != null || got <= 0) {
          forget(key, s);
          slice.position(before);
          return readPart(key, offset, slice, n);
        }
        return got < n ? readPart(key, offset + got, slice, n - got)
            : CompletableFuture.<Void>completedFuture(null);
      }).thenCompose(f -> f);
    });
  }

  /** The stripe's snapshot, opened at its first read; completes with null if none. */
  private CompletableFuture<Snapshot> snapshot(String key, long stripe) {
    List<CompletableFuture<Snapshot>> evicted = new ArrayList<>();
    CompletableFuture<Snapshot> f;
    synchronized (snapshots) {
      if (closed) {
        return CompletableFuture.completedFuture(null); // read through the store instead
      }
      Asked asked = snapshots.get(key);
      f = asked == null ? null : asked.future();
      Snapshot held = f != null && f.isDone() ? f.join() : null;
      if (held != null && held.isClosed()) {
        // Closed by the store (idle too long, or its client closed): this read opens
        // another rather than failing over to the store's reads.
        snapshots.remove(key);
        f = null;
      } else if (f != null && f.isDone() && held == null
          && System.nanoTime() - asked.at() >= SNAPSHOT_RETRY_NANOS) {
        // None given (budget spent, or a failed open) a while ago: ask again (see
        // SNAPSHOT_RETRY_NANOS).
        snapshots.remove(key);
        f = null;
      }
      if (f == null) {
        long stripeSize = record.stripeSize();
        long length = Math.min(stripeSize, info.length() - stripe * stripeSize);
        f = ns.calls().openSnapshot(key, length).exceptionally(e -> null);
        snapshots.put(key, new Asked(f, System.nanoTime()));
        for (Iterator<Asked> it = snapshots.values().iterator();
            snapshots.size() > MAX_SNAPSHOTS && it.hasNext(); ) {
          evicted.add(it.next().future());
          it.remove();
        }
      }
    }
    evicted.forEach(FileReader::closeWhenOpen);
    return f;
  }

  /** A snapshot whose read failed: closed, and the next read of its stripe opens another. */
  private void forget(String key, Snapshot s) {
    synchronized (snapshots) {
      Asked asked = snapshots.get(key);
      CompletableFuture<Snapshot> f = asked == null ? null : asked.future();
      if (f != null && f.isDone() && f.join() == s) {
        snapshots.remove(key);
      }
    }
    s.close();
  }

  private static void closeWhenOpen(CompletableFuture<Snapshot> f) {
    f.thenAccept(s -> {
      if (s != null) {
        s.close();
      }
    });
  }

  /**
   * Frees what the reader holds (the store's snapshots of its stripes), for a stream's
   * unbuffer: the reader may still be read, and then opens them again.
   */
  public void unbuffer() {
    List<CompletableFuture<Snapshot>> open;
    synchronized (snapshots) {
      open = new ArrayList<>();
      snapshots.values().forEach(a -> open.add(a.future()));
      snapshots.clear();
    }
    open.forEach(FileReader::closeWhenOpen);
  }

  /**
   * Frees what the reader holds for good: a read still running (a positioned read racing
   * the stream's close) or made later goes through the store, and opens no snapshot that
   * nobody would close (its files would stay open until a garbage collection).
   */
  public void close() {
    synchronized (snapshots) {
      closed = true;
    }
    unbuffer();
  }

  /**
   * True if {@link #lend} serves this file: the store lends the buffers its reads arrive
   * in ({@link LendsReads}) and the bytes are not inline in the record.
   */
  public boolean lends() {
    return ns.calls().lendsReads() && !record.isInline();
  }

  /**
   * The bytes {@code [position, position + length)}, which must lie within the file, as
   * the store's own buffers, in order; only where {@link #lends}. The caller releases
   * every loan; on failure none is left unreleased.
   */
  public CompletableFuture<List<ReadLoan>> lend(long position, int length) {
    if (position < 0 || length < 0 || position > info.length() - length) {
      throw new IllegalArgumentException("range " + position + "+" + length
          + " is not within the " + info.length() + " bytes of " + info.path());
    }
    long stripeSize = record.stripeSize();
    List<CompletableFuture<List<ReadLoan>>> parts = new ArrayList<>();
    for (int done = 0; done < length; ) {
      long pos = position + done;
      long offset = pos % stripeSize;
      int n = (int) Math.min(Math.min(length - done, stripeSize - offset), maxOp);
      parts.add(lendPart(record.stripeKey(ns.layout(), pos / stripeSize), offset, n));
      done += n;
    }
    return CompletableFuture.allOf(parts.toArray(new CompletableFuture<?>[0]))
        .handle((v, error) -> {
          List<ReadLoan> all = new ArrayList<>();
          for (CompletableFuture<List<ReadLoan>> p : parts) {
            if (!p.isCompletedExceptionally()) {
              all.addAll(p.join());
            }
          }
          if (error != null) {
            all.forEach(ReadLoan::release);
            throw error instanceof CompletionException c ? c : new CompletionException(error);
          }
          return all;
        });
  }

  /** Exactly {@code n} bytes of one blob, in as many loans as the store answers with. */
  private CompletableFuture<List<ReadLoan>> lendPart(String key, long offset, int n) {
    return ns.calls().lendRead(key, offset, n).handle((loan, error) -> {
      if (error != null) {
        throw failure(key, error);
      }
      return loan;
    }).thenCompose(loan -> {
      int got = loan.length();
      if (got == 0) {
        loan.release();
        return CompletableFuture.failedFuture(endedEarly(key));
      }
      if (got >= n) {
        return CompletableFuture.completedFuture(new ArrayList<>(List.of(loan)));
      }
      return lendPart(key, offset + got, n - got).handle((rest, error) -> {
        if (error != null) {
          loan.release();
          throw error instanceof CompletionException c ? c : new CompletionException(error);
        }
        rest.add(0, loan);
        return rest;
      });
    });
  }

  /** A store's failure as the file's: a blob gone means the file was deleted or replaced. */
  private CompletionException failure(String key, Throwable error) {
    Throwable cause = error instanceof CompletionException && error.getCause() != null
        ? error.getCause() : error;
    if (cause instanceof BlobNotFoundException) {
      return new CompletionException(new FileNotFoundException(
          info.path() + " was deleted or overwritten while open (" + key + " is gone)"));
    }
    return new CompletionException(cause);
  }

  private EOFException endedEarly(String key) {
    return new EOFException("data blob " + key + " of " + info.path()
        + " ends before the length its record gives");
  }
}
