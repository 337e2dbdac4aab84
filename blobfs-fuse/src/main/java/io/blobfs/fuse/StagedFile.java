package io.blobfs.fuse;

import io.blobfs.namespace.BlobNamespace;
import io.blobfs.namespace.FileReader;
import io.blobfs.namespace.FileWriter;
import io.blobfs.namespace.FsPath;
import io.blobfs.store.StoreFullException;
import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Executor;
import java.util.concurrent.locks.ReadWriteLock;
import java.util.concurrent.locks.ReentrantLock;
import java.util.concurrent.locks.ReentrantReadWriteLock;

/**
 * A file open for writing in this mount: its bytes live in a sparse local file until they
 * are published, whole, as a new version of the blob file.
 *
 * <p>Why a local file: the namespace writes a file once, front to back, and publishes it
 * atomically at close ({@link FileWriter}); POSIX writes land at any offset, in any order,
 * from several processes, and may be read back at once. The local file takes the writes
 * in place (holes read as zeros, truncate in both directions), every descriptor of the
 * inode in this mount shares it, and {@link #publish} streams it through one
 * {@link FileWriter}: at each close(2) (FLUSH) of a descriptor that changed it, at each
 * fsync of the file while it has unpublished changes, and at the last release. A
 * blob:// reader, or another mount, sees published versions whole, never a mix of
 * versions (close-to-open consistency, as NFS gives); a write racing a publication may be
 * in that version in part, and is published whole by the next.
 *
 * <p>Concurrency: writes and reads take the shared side of a lock (the channel's
 * positional calls are safe together; disjoint ranges from several processes are the
 * MPI-IO N-to-1 pattern), truncates the exclusive side. Publications run one at a time
 * ({@code publishing}, which truncates take too, so a length never shrinks under an
 * upload) but <em>do not stop writes</em>: a version carries every change finished when
 * its publication began (what fsync and close promise); a write racing the upload may be
 * in it in part, and is counted as not yet published, so the next publication carries it
 * whole. Before, a publication held the exclusive side for its whole upload, and N
 * processes writing one file stood still while one of them fsynced: their own fsyncs
 * then came one after another, each a whole upload, instead of gathering behind the one
 * running.
 */
final class StagedFile {
  private final Path local;
  private final RandomAccessFile raf;
  private final FileChannel channel;
  private final ReadWriteLock lock = new ReentrantReadWriteLock();
  /** One publication at a time; a truncate waits for the one running. */
  private final ReentrantLock publishing = new ReentrantLock();
  private final Object lengthLock = new Object();
  private long length;
  private long mtime;
  /**
   * Changes so far (writes, truncates, times), counted under {@code lengthLock} once the
   * change is complete; {@code published}: the count when the last publication began, so
   * every change up to it is in that version (and changed since: {@code changes >
   * published}). A descriptor's close need publish only if a
   * change of its own came later, an fsync only if any change came later: with several
   * processes writing one file (MPI-IO's N-to-1) each close no longer uploads the whole
   * file again when another's publication already carried its writes.
   */
  private long changes;
  private volatile long published;
  /** The last change made by no descriptor in particular (truncate, utimensat, O_TRUNC). */
  private volatile long unowned;
  /** Open handles sharing this file. Guarded by the owner's map. */
  int handles;
  /** The next version's upload, under way while the file is written. */
  private final EarlyUpload early;
  /** Where early uploads run; null: none (every publication uploads the whole file). */
  private volatile BlobNamespace uploadNs;
  private volatile Executor uploadExecutor;
  private volatile WriteStats stats = new WriteStats();

  private StagedFile(Path local, long length, long mtime) throws IOException {
    this.local = local;
    this.raf = new RandomAccessFile(local.toFile(), "rw");
    this.channel = raf.getChannel();
    this.length = length;
    this.mtime = mtime;
    this.early = new EarlyUpload(channel, length);
  }

  /** Lets writes start uploading the next version in the background ({@link EarlyUpload}). */
  StagedFile uploadEarly(BlobNamespace ns, Executor executor, long chunk, WriteStats stats) {
    this.stats = stats;
    early.stats(stats);
    if (chunk > 0) {
      early.chunk(chunk);
      this.uploadNs = ns;
      this.uploadExecutor = executor;
    }
    return this;
  }

  /** An empty file, not yet in the store: {@code dirty} so that close publishes it. */
  static StagedFile empty(Path dir) throws IOException {
    StagedFile f = new StagedFile(Files.createTempFile(dir, "staged-", ""), 0,
        System.currentTimeMillis());
    f.changes = 1;
    f.unowned = 1; // an O_TRUNC of a published file: any descriptor's close publishes it
    return f;
  }

  /** A copy of the published file, to be changed in place. */
  static StagedFile copyOf(Path dir, FileReader reader) throws IOException {
    StagedFile f = new StagedFile(Files.createTempFile(dir, "staged-", ""), reader.length(),
        reader.info().modificationTime());
    ByteBuffer buf = ByteBuffer.allocateDirect(1 << 20);
    long pos = 0;
    try {
      while (pos < reader.length()) {
        buf.clear();
        int n = reader.read(pos, buf).get();
        if (n < 0) {
          break;
        }
        buf.flip();
        while (buf.hasRemaining()) {
          pos += f.channel.write(buf, pos);
        }
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      f.discard();
      throw new IOException("interrupted copying " + reader.info().path(), e);
    } catch (ExecutionException e) {
      f.discard();
      throw e.getCause() instanceof IOException io ? io : new IOException(e.getCause());
    } catch (IOException e) {
      f.discard();
      throw e;
    }
    return f;
  }

  long length() {
    synchronized (lengthLock) {
      return length;
    }
  }

  long mtime() {
    synchronized (lengthLock) {
      return mtime;
    }
  }

  /** The empty file was published at create, with {@link #mtime}: nothing to publish yet. */
  void publishedEmpty() {
    published = changes();
  }

  /** The count of changes so far: a descriptor that just wrote needs a version this new. */
  long changes() {
    synchronized (lengthLock) {
      return changes;
    }
  }

  /** The last change no descriptor owns: every close must see it published. */
  long unownedChanges() {
    return unowned;
  }

  /**
   * utimensat: the next publication carries this time (one running now may carry it too,
   * but counts it as not yet published).
   */
  void setMtime(long millis) {
    lock.readLock().lock();
    try {
      synchronized (lengthLock) {
        mtime = millis;
        unowned = ++changes;
      }
    } finally {
      lock.readLock().unlock();
    }
  }

  /** Changed since the last publication began. */
  boolean dirty() {
    return changes() > published;
  }

  /**
   * Writes {@code src} at {@code offset}, or at the end when {@code append}; {@code path}:
   * the file's name now, for an early upload (null: none).
   */
  int write(long offset, ByteBuffer src, boolean append, FsPath path) throws IOException {
    lock.readLock().lock();
    try {
      int n = src.remaining();
      long at = offset;
      if (append) {
        synchronized (lengthLock) {
          at = length;
          length += n; // reserve the range, so racing appends never overlap
        }
      }
      early.writing(at);
      long pos = at;
      try {
        while (src.hasRemaining()) {
          pos += channel.write(src, pos);
        }
      } finally {
        // written or not, the range may have changed: never counted as uploadable unless
        // it was fully written (a failed write leaves the upload claimed below it)
        if (pos == at + n) {
          synchronized (lengthLock) {
            length = Math.max(length, at + n);
            mtime = System.currentTimeMillis();
            changes++;
          }
          Executor ex = uploadExecutor;
          early.written(at, at + n, path == null || ex == null ? null : uploadNs, path, ex);
        } else {
          early.failed(at);
        }
      }
      return n;
    } finally {
      lock.readLock().unlock();
    }
  }

  /** Reads into {@code dst} from {@code offset} up to its limit or the end. */
  void read(long offset, ByteBuffer dst) throws IOException {
    lock.readLock().lock();
    try {
      long end = Math.min(length(), offset + dst.remaining());
      if (offset >= end) {
        return;
      }
      dst.limit(dst.position() + (int) (end - offset));
      long pos = offset;
      while (dst.hasRemaining()) {
        int n = channel.read(dst, pos);
        if (n < 0) {
          // the local file is shorter than the length after an extending truncate or a
          // write past its end raced: the rest is a hole
          while (dst.hasRemaining()) {
            dst.put((byte) 0);
          }
          break;
        }
        pos += n;
      }
    } finally {
      lock.readLock().unlock();
    }
  }

  void truncate(long size) throws IOException {
    publishing.lock(); // never shrinks the file under an upload reading it
    lock.writeLock().lock();
    try {
      raf.setLength(size); // sparse when it grows: the new bytes read as zeros
      early.truncated(size);
      synchronized (lengthLock) {
        length = size;
        mtime = System.currentTimeMillis();
        unowned = ++changes;
      }
    } finally {
      lock.writeLock().unlock();
      publishing.unlock();
    }
  }

  /**
   * Publishes the bytes as they are now as the file at {@code path}, if they changed since
   * the last publication; returns when the namespace's close returned (the store's
   * durability, see docs/semantics.md).
   */
  void publish(BlobNamespace ns, FsPath path) throws IOException {
    publish(ns, path, Long.MAX_VALUE);
  }

  /**
   * Publishes as {@link #publish(BlobNamespace, FsPath)}, unless a publication already
   * carried every change up to {@code needed} (a count from {@link #changes}): a close or
   * fsync that waited for another's publication, which took its writes, returns at once.
   */
  void publish(BlobNamespace ns, FsPath path, long needed) throws IOException {
    if (published >= Math.min(needed, changes())) {
      // already in a committed version: a close after its own fsync returns at once
      // rather than wait for another descriptor's publication under way
      return;
    }
    publishing.lock();
    try {
      long carried;
      long len;
      synchronized (lengthLock) {
        // every change counted here is complete in the staged file: this version has it
        carried = changes;
        len = length;
        if (published < Math.min(needed, carried)) {
          // at the snapshot: a write finishing after it may extend the file, and the early
          // upload must not claim those bytes (they are past this version)
          early.stopAt(len);
        }
      }
      if (published >= Math.min(needed, carried)) {
        return; // nothing new, or what the caller needs went up with the last version
      }
      long started = System.nanoTime();
      long[] uploaded = {0};
      FileWriter w = early.finish(path, len, uploaded);
      long waited = System.nanoTime() - started;
      boolean whole = w == null;
      if (w == null) {
        write(ns.create(path, true), 0, len);
      } else {
        try {
          write(w, uploaded[0], len); // the rest after what went up in the background
        } catch (IOException first) {
          // Only a failure of the early writer's own state (its lease lapsed while the file
          // sat open, a write it sent failed) is worth the whole file once more. A failed
          // commit (a lost race, an outcome unknown) or a full store would fail again, or
          // publish twice, at twice the space and time: thrown as it is.
          if (w.reachedCommit() || causedBy(first, StoreFullException.class)) {
            throw first;
          }
          try {
            whole = true;
            write(ns.create(path, true), 0, len);
          } catch (IOException | RuntimeException again) {
            again.addSuppressed(first);
            throw again;
          }
        }
      }
      published = carried;
      stats.published(whole ? 0 : uploaded[0], whole ? len : len - uploaded[0], whole, waited,
          System.nanoTime() - started);
    } finally {
      publishing.unlock();
    }
  }

  /** Completes a version in {@code w} from byte {@code from} and publishes it. */
  private void write(FileWriter w, long from, long len) throws IOException {
    try {
      // straight from the page cache into the writer's buffers; a hole at the end
      // (extending truncate) reads as zeros
      w.transferFrom(channel, from, len - from);
      // the time of the last write (or utimensat), not of this close: stat shows one time
      // while the file is open here and after, and tar, rsync and make see a stable mtime
      w.setModificationTime(mtime());
    } catch (IOException | RuntimeException e) {
      w.abort();
      throw e;
    }
    w.close();
  }

  private static boolean causedBy(Throwable e, Class<? extends Throwable> type) {
    for (Throwable t = e; t != null; t = t.getCause()) {
      if (type.isInstance(t)) {
        return true;
      }
    }
    return false;
  }

  /** Removes the local copy; unpublished changes are gone. */
  void discard() {
    early.abandon(); // before the channel closes under its task
    try {
      channel.close();
      raf.close();
    } catch (IOException ignored) {
      // the file is removed next, whether or not the close worked
    }
    try {
      Files.deleteIfExists(local);
    } catch (IOException ignored) {
      // a left-over temp file in the staging directory; the next mount starts a fresh one
    }
  }
}
