package io.blobfs.tyr.client;

import io.blobfs.tyr.api.BlobStat;
import io.blobfs.tyr.api.ErrorCode;
import io.blobfs.tyr.api.LocalGrant;
import io.blobfs.tyr.api.TyrException;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.ref.Cleaner;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executor;

/**
 * One granted version of a blob's first bytes, read from segment files this client opened
 * while the grant pinned them ({@link TyrClient#localSnapshot}): reads need no call to the
 * node, and its files stay open until {@link #close} (or until it is collected unclosed).
 * Thread-safe.
 */
public final class LocalSnapshot {
  private final BlobStat stat;
  private final List<LocalGrant.Piece> pieces;
  /** Where each piece starts in the blob. */
  private final long[] starts;
  /** Each piece's open file, null for a hole. */
  private final FileChannel[] channels;
  private final long length;
  private final Executor readers;
  private final LocalReads counts;
  /** Set by {@link #close} and {@link #closeIfIdle}; guarded by this. */
  private boolean closed;
  /** Reads accepted and not finished; guarded by this. */
  private int inFlight;
  /**
   * When the last read ended, or the snapshot opened (System.nanoTime); guarded by this. A
   * read's start needs no stamp: no snapshot with a read in flight is idle.
   */
  private long lastUsed = System.nanoTime();
  /**
   * Closes the files and gives them back to the client's budget, at most once: when the
   * snapshot is closed with no read in flight, or when it is collected unclosed. Why the
   * second: the client tracks snapshots only weakly (so that its close and idle sweeper
   * reach the live ones), and a snapshot dropped unclosed (a leaked stream, with the idle
   * timeout 0) would otherwise hold its files and its share of the budget for the
   * client's life. Collected means no read is in flight: a read holds the snapshot.
   */
  private final Cleaner.Cleanable release;
  private static final Cleaner CLEANER = Cleaner.create();

  /** The files of a snapshot: its clean-up action, which must not reach the snapshot. */
  static final class Files implements Runnable {
    private final FileChannel[] channels;
    private final int count;
    private final LocalReads counts;

    Files(FileChannel[] channels, int count, LocalReads counts) {
      this.channels = channels;
      this.count = count;
      this.counts = counts;
    }

    @Override
    public void run() {
      LocalReads.closeAll(Arrays.asList(channels));
      counts.closed(this, count);
    }
  }

  LocalSnapshot(BlobStat stat, List<LocalGrant.Piece> pieces, Files files,
      Executor readers, LocalReads counts) {
    this.stat = stat;
    this.pieces = pieces;
    this.channels = files.channels;
    this.readers = readers;
    this.counts = counts;
    this.starts = new long[pieces.size()];
    long at = 0;
    for (int i = 0; i < starts.length; i++) {
      starts[i] = at;
      at += pieces.get(i).length();
    }
    this.length = at;
    this.release = CLEANER.register(this, files);
  }

  /** The version granted (its size is the blob's). */
  public BlobStat stat() {
    return stat;
  }

  /** The bytes the snapshot holds: the blob's first ones. */
  public long length() {
    return length;
  }

  /**
   * Reads {@code dst.remaining()} bytes from {@code offset} (within {@link #length}) on a
   * reader thread, advancing {@code dst}'s position; completes with the count. Never on
   * the caller's thread: an application thread may be interrupted, and an interrupt during
   * a read closes the channel for every reader of the snapshot.
   */
  public CompletableFuture<Integer> read(long offset, ByteBuffer dst) {
    int n = dst.remaining();
    if (offset < 0 || offset > length - n) {
      return CompletableFuture.failedFuture(new IllegalArgumentException("read of " + n
          + " bytes at " + offset + " of a snapshot of " + length));
    }
    if (!enter()) {
      return CompletableFuture.failedFuture(closedError());
    }
    try {
      return CompletableFuture.supplyAsync(() -> {
        try {
          readNow(offset, dst, n);
        } catch (IOException e) {
          throw new UncheckedIOException(e);
        } finally {
          exit();
        }
        counts.countLocal(n);
        return n;
      }, readers);
    } catch (java.util.concurrent.RejectedExecutionException e) {
      exit(); // the client closed its reader threads: a failed future, not a throw
      return CompletableFuture.failedFuture(LocalReads.clientClosed());
    }
  }

  static TyrException closedError() {
    return new TyrException(ErrorCode.UNAVAILABLE, "the local snapshot is closed");
  }

  /**
   * A read accepted now holds the files open until it is done, however the snapshot is
   * closed meanwhile: a reader that evicts a stripe's snapshot (FileReader keeps a few) or
   * closes its stream while a read of it is queued or running would otherwise close the
   * channel under that read, which then fails and goes over the connection instead.
   */
  private synchronized boolean enter() {
    if (closed) {
      return false;
    }
    inFlight++;
    return true;
  }

  private void exit() {
    boolean last;
    synchronized (this) {
      last = --inFlight == 0 && closed;
      lastUsed = System.nanoTime();
    }
    if (last) {
      release();
    }
  }

  private void readNow(long offset, ByteBuffer dst, int n) throws IOException {
    int i = Arrays.binarySearch(starts, offset);
    if (i < 0) {
      i = -i - 2; // the piece that starts before offset
    }
    long at = offset;
    for (int left = n; left > 0; i++) {
      LocalGrant.Piece p = pieces.get(i);
      long within = at - starts[i];
      int k = (int) Math.min(p.length() - within, left);
      if (p.isHole()) {
        LocalReads.zeros(dst, k);
      } else {
        LocalReads.readFully(channels[i], p.position() + within, dst.slice(dst.position(), k));
        dst.position(dst.position() + k);
      }
      at += k;
      left -= k;
    }
  }

  /**
   * Closes the files, once no read accepted before is still running: the node's disk space
   * of any segment deleted since is then freed. Reads after it fail (a {@link TyrException}
   * {@code UNAVAILABLE}).
   */
  public void close() {
    boolean now;
    synchronized (this) {
      now = !closed && inFlight == 0;
      closed = true;
    }
    if (now) {
      release();
    }
  }

  /**
   * Closes the snapshot if no read is in flight and none ended (nor the snapshot opened) for
   * {@code nanos}.
   */
  void closeIfIdle(long nanos, long now) {
    synchronized (this) {
      if (closed || inFlight > 0 || now - lastUsed < nanos) {
        return;
      }
      closed = true;
    }
    release();
  }

  /**
   * True once closed, by {@link #close} or {@link #closeIfIdle} (its files may still be open
   * for reads in flight).
   */
  public synchronized boolean isClosed() {
    return closed;
  }

  private void release() {
    release.clean(); // runs the action once, however often called (or collected)
  }
}
