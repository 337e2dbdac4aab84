package io.blobfs.fuse;

import io.blobfs.fuse.kernel.Passthrough;
import io.blobfs.namespace.BaseChangedException;
import io.blobfs.namespace.BlobNamespace;
import io.blobfs.namespace.FileInfo;
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
import java.util.BitSet;
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
  private static final System.Logger LOG = System.getLogger(StagedFile.class.getName());
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
  /** The publication reading the staged file now; null: none. Guarded by {@code lengthLock}. */
  private Reading reading;
  /**
   * Shared stripes (issue 16, {@code wip/shared-stripes/DESIGN.md} §3, seen writes): a
   * publication makes its version over {@link #base} ({@link BlobNamespace#createVersion})
   * and names the base's stripes no write or truncate changed since ({@link #dirty})
   * instead of sending them. Set by {@link #versions} (the mount's gate, off for files
   * passed through: their writes are not seen here). Guarded by {@code lengthLock}.
   */
  private boolean versions;
  /**
   * The published version this file's bytes started from: the record {@link #copyOf}
   * copied, then the record each publication committed ({@link FileWriter#published}),
   * never a version read back from the store (another client's could be there). Null:
   * none (O_TRUNC, a new file before its first publication, an inline version: nothing to
   * take over). Guarded by {@code lengthLock}.
   */
  private FileInfo base;
  /**
   * The granules ({@link #granule} bytes each, from byte 0) a write or truncate changed
   * since the last publication's snapshot, set under {@code lengthLock} where the change
   * is counted (a failed write too: its bytes may have landed). Swapped for an empty set
   * at the snapshot (writes finishing after it mark the next version), OR-ed back if the
   * publication fails. A stripe of the base is clean when no granule meeting it is set.
   * Granules, not stripes: the next base's stripe size is not known when a write lands (a
   * whole upload after {@link BaseChangedException} publishes with the mount's size); a
   * granule that straddles two stripes marks both (more sent, never less).
   */
  private BitSet dirty = new BitSet();
  private long granule = 1 << 20;
  /**
   * Of the publication under way (its thread only): the base stripes its version took
   * over (null: none) and their size, which {@link #read} skips.
   */
  private BitSet takenOver;
  private long takenStripe;
  /** The next version's upload, under way while the file is written. */
  private final EarlyUpload early;
  /** Where early uploads run; null: none (every publication uploads the whole file). */
  private volatile BlobNamespace uploadNs;
  private volatile Executor uploadExecutor;
  private volatile WriteStats stats = new WriteStats();
  /** Where the kernel reads and writes this file itself (FUSE passthrough); null: nowhere. */
  private volatile Passthrough passthrough;
  private volatile int backingId;
  /**
   * The local file's size and modification time (ns) when {@link #observe} last looked:
   * with passthrough, writes reach the local file without passing here, and a change of
   * either is how they are seen. Guarded by {@code lengthLock}.
   */
  private long seenSize;
  private long seenNanos = Long.MIN_VALUE;
  /**
   * With passthrough: the local file's size as {@link #pollGrowth} last handed it to the
   * early upload (bytes past it, once it grows, count as written there); a truncate sets
   * it, so that an extension by truncate is a hole, never counted. Guarded by {@code
   * lengthLock}.
   */
  private long grownTo;
  /**
   * Bytes the publication under way sent a second time: sent chunks of a passed-through
   * file that changed after their early send. Used by the publishing thread only.
   */
  private long resent;
  /**
   * With passthrough: the last publication that committed, with the local file's stamp
   * taken before its snapshot and checksums of the bytes it sent; null: none to compare
   * with, or a publication is under way (it clears the record at its snapshot and records
   * only once it committed: a record never describes a version older than this staged
   * file's last publication). Before this file's first publication: the version it was
   * copied from ({@link #copyOf}), or the empty file create published
   * ({@link #publishedEmpty}); either may be older than the store's by then (another
   * client, or a setattr of the closed file, published since). A forced {@link #observe}
   * (a writer's close, an fsync, the last release) counts no change when the file still
   * matches it ({@link Published#matches}): no write through this mount changed the bytes
   * since the version recorded, so skipping the upload loses none (and leaves a newer
   * version in the store in place). A close right after an fsync no longer uploads the
   * file a second time, nor does the close of a writer that wrote nothing. Guarded by
   * {@code lengthLock}.
   */
  private Published lastPublished;
  /** {@link #empty}'s file as created: the record {@link #publishedEmpty} installs. */
  private Published asCreated;
  /**
   * The buffer {@link Published#matches} reads the file into, allocated at the first check
   * and kept; checks of this file take turns on it.
   */
  private ByteBuffer checkBuffer;
  /**
   * The buffer a publication re-reads sent chunks into ({@link #digestOf}), apart from
   * {@link #checkBuffer}: a publication (holding {@code publishing} and the mount's names
   * lock) must not wait for a forced check's re-read of the whole file, a SHA-256 of it;
   * publications take turns on {@code publishing}, so one buffer serves them all.
   */
  private ByteBuffer sentBuffer;
  /**
   * Tests only: the record's stamp and the times the mount saw taken again now, as if
   * every write since had come in the stamp's clock tick (a kernel without multigrain
   * times): the bytes alone decide.
   */
  void restampRecord() throws IOException {
    Stamp now = stamp();
    synchronized (lengthLock) {
      lastPublished = new Published(now, lastPublished.sums());
      seenSize = now.size();
      seenNanos = now.mtimeNanos();
    }
  }

  /** Tests only: runs after a forced look's re-read, before what the look saw is applied. */
  volatile Runnable afterCheck;
  /** Tests only: runs in a publication of a passed-through file after its stamp, before its snapshot. */
  volatile Runnable afterStamp;

  private StagedFile(Path local, long length, long mtime) throws IOException {
    this.local = local;
    this.raf = new RandomAccessFile(local.toFile(), "rw");
    this.channel = raf.getChannel();
    this.length = length;
    this.mtime = mtime;
    this.early = new EarlyUpload(channel, length);
    this.grownTo = length;
  }
  /**
   * What identifies the local file's contents without reading them: size, mtime and ctime
   * to the nanosecond, inode and device (as git's index does). Equal stamps prove nothing
   * alone: the kernel stamps a write with a coarse clock, so a write in the same tick as
   * the change before a stamp leaves both times as they were (git's "racy timestamp"
   * problem), and a write through a shared mapping whose page is still dirty and writable
   * moves no time at all. They are the cheap pre-check before the checksums
   * ({@link Published#matches}), which decide.
   *
   * <p>Why no "settled" rule (session 12's first version counted a stamp only once its
   * times were older than 20 ms, and waited for that before every publication, holding
   * {@code publishing} and the mount's names lock: a close of a just-written small file
   * took ~34 ms instead of ~2): a skip needs the bytes read again to have the SHA-256 of
   * the bytes the version sent. A write in the same tick as the stamp either finished
   * before its piece was sent (then it is in the version, and the store has it) or after
   * (then the bytes differ from what was summed and the check publishes). A racy stamp
   * thus costs only a re-read, never a lost write; the rule bought nothing the digests do
   * not already give.
   */
  record Stamp(long size, long mtimeNanos, long ctimeNanos, long ino, long dev) {}

  /** Stats the local file. */
  private Stamp stamp() throws IOException {
    java.util.Map<String, Object> a = Files.readAttributes(local,
        "unix:size,lastModifiedTime,ctime,ino,dev");
    long m = ((java.nio.file.attribute.FileTime) a.get("lastModifiedTime"))
        .to(java.util.concurrent.TimeUnit.NANOSECONDS);
    long c = ((java.nio.file.attribute.FileTime) a.get("ctime"))
        .to(java.util.concurrent.TimeUnit.NANOSECONDS);
    return new Stamp((Long) a.get("size"), m, c, (Long) a.get("ino"), (Long) a.get("dev"));
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

  /**
   * Publishes versions that take the unchanged stripes of the version before over
   * (shared stripes: {@link #base}, {@link #dirty}); {@code mountStripe}: the stripe size
   * of the mount's new files (a whole upload's), which the granule of {@link #dirty}
   * divides when it is a power of two, as the base's size. Called before any write.
   */
  StagedFile versions(long mountStripe) {
    FileInfo over;
    synchronized (lengthLock) {
      versions = true;
      if (base != null && base.record().stripeCount() == 0) {
        base = null; // inline: no stripe to take over
      }
      long g = Long.lowestOneBit(mountStripe);
      if (base != null) {
        g = Math.min(g, Long.lowestOneBit(base.record().stripeSize()));
      }
      granule = Math.max(4096, Math.min(g, 1L << 20));
      over = base;
    }
    early.base(over);
    if (over != null) {
      early.forgetWritten(); // the copied bytes are the base's: taken over, not sent early
    }
    return this;
  }

  /** {@code version} at {@code path}: the same record under the name the file has now. */
  static FileInfo at(FileInfo version, FsPath path) {
    return version.path().equals(path) ? version : new FileInfo(path, false,
        version.length(), version.modificationTime(), version.blockSize(), version.record());
  }

  /** Under {@code lengthLock}: bytes {@code [start, end)} changed ({@link #dirty}). */
  private void changed(long start, long end) {
    if (versions && end > start) {
      dirty.set(granuleOf(start), granuleOf(end - 1) + 1);
    }
  }

  /** The granule holding byte {@code offset}; past 2^31 granules, all share the last. */
  private int granuleOf(long offset) {
    return (int) Math.min(offset / granule, Integer.MAX_VALUE - 1);
  }

  /**
   * Under {@code lengthLock}: the stripes of {@code over} a version of {@code len} bytes
   * may name instead of sending: no granule of them in {@code changed}, and whole in both
   * versions, or the last of both with equal lengths (DESIGN §2.2 I4; the writer checks
   * again, {@link FileWriter#takeOver}).
   */
  private BitSet cleanStripes(FileInfo over, BitSet changed, long len) {
    BitSet clean = new BitSet();
    long size = over.record().stripeSize();
    long count = Math.min(over.record().stripeCount(), Integer.MAX_VALUE - 1);
    long baseLen = over.record().length();
    for (long s = 0; s < count; s++) {
      boolean covered = (s + 1) * size <= Math.min(baseLen, len)
          || s == over.record().stripeCount() - 1 && baseLen == len;
      if (!covered) {
        continue;
      }
      int first = granuleOf(s * size);
      int next = changed.nextSetBit(first);
      if (next < 0 || next > granuleOf((s + 1) * size - 1)) {
        clean.set((int) s);
      }
    }
    return clean;
  }

  /**
   * Serves this file's handles by FUSE passthrough from now on: registers the local file
   * and returns its backing id ({@link #discard} gives it back). Called before any handle
   * is opened on it: the kernel wants every handle of an inode passing through, or none.
   */
  int passThrough(Passthrough p) throws IOException {
    int id = p.open(local);
    early.verifySent(); // before any handle opens: the kernel writes it from the first one
    early.base(null);
    synchronized (lengthLock) {
      // Its writes are not seen here: no dirty set to trust, every publication whole
      // (shared stripes for passed-through files, from digests, is DESIGN §4 step 6).
      versions = false;
      base = null;
      passthrough = p;
      backingId = id;
      seenSize = channel.size();
      seenNanos = diskNanos();
    }
    return id;
  }

  /**
   * With passthrough and early upload, called by the mount's poll ({@code BlobFuseFs}'s
   * timer) with the file's name now: hands the local file's growth since the last poll
   * to the early upload as written bytes ({@link EarlyUpload#grown}). The mount sees no
   * WRITE of a passed-through file; its size, a cheap fstat, is what tells of a file
   * being written front to back (fio, dd, cp, an HPC code's output). Writes in place
   * (no growth) are not seen here and go up with the publication, as before.
   */
  void pollGrowth(FsPath path) throws IOException {
    BlobNamespace ns = uploadNs;
    Executor ex = uploadExecutor;
    if (passthrough == null || ns == null || ex == null) {
      return;
    }
    // a truncate (the write lock) never runs between the size and its hand-over; tried,
    // not waited for: a truncate waiting for a publication would hold the mount's one
    // poll thread, and every other file's early upload with it (polled again next tick)
    if (!lock.readLock().tryLock()) {
      return;
    }
    try {
      long size = channel.size();
      long from;
      synchronized (lengthLock) {
        if (size <= grownTo) {
          return;
        }
        from = grownTo;
        grownTo = size;
      }
      early.grown(from, size, ns, path, ex);
    } finally {
      lock.readLock().unlock();
    }
  }

  /** The passthrough backing id of this file's handles; 0: they are served here. */
  int backingId() {
    return backingId;
  }

  /**
   * With passthrough, takes the local file's size and time as this file's (the kernel
   * wrote it without this process) and counts a change if they moved since the last look,
   * or in any case with {@code force}: a write that changed neither the size nor a coarse
   * timestamp is otherwise invisible, so a close of a descriptor open for writing, and an
   * fsync, count one. A change no descriptor owns: the next close or fsync publishes it.
   * Without passthrough, nothing: every change came through {@link #write}.
   */
  void observe(boolean force) throws IOException {
    if (passthrough == null) {
      return;
    }
    observeStamped(force);
  }

  /**
   * {@link #observe}; returns the stamp it applied. A forced look counts no change when
   * the file matches the last publication ({@link Published#matches}): nothing was written
   * since, so a close right after an fsync (fio's end_fsync, then its close) publishes
   * nothing where it uploaded the whole file a second time.
   */
  private Stamp observeStamped(boolean force) throws IOException {
    Published last = null;
    Stamp before = null;
    boolean same = false;
    if (force) {
      synchronized (lengthLock) {
        last = lastPublished;
      }
      if (last != null) {
        before = stamp();
        // Outside every lock: it reads the file (a page-cache read when the file is
        // cached, a disk read when not; far cheaper than the upload it spares), and a
        // truncate queued for the write lock would otherwise stop getattr and fsync of
        // the file meanwhile. A truncate or write racing the read moves the stat taken
        // again below, or is a change counted on its own.
        same = matches(last, before);
        Runnable hook = afterCheck;
        if (hook != null) {
          hook.run();
        }
      }
    }
    lock.readLock().lock(); // never between a truncate's length and its count
    try {
      synchronized (lengthLock) {
        // Stat here, under lengthLock, where it is applied: a stat taken before (the one
        // above, a whole-file read ago) would put back an older size over one recorded
        // meanwhile by another look or a publication's stamp, and a version could then be
        // cut short while counted as carrying everything.
        Stamp now = stamp();
        long size = now.size();
        long nanos = now.mtimeNanos();
        boolean moved = size != seenSize || nanos != seenNanos;
        boolean unchanged = same && last == lastPublished && now.equals(before);
        if (moved || force && !unchanged) {
          seenSize = size;
          seenNanos = nanos;
          length = size;
          mtime = nanos / 1_000_000;
          unowned = ++changes;
          if (reading != null) {
            reading.missed(changes); // unseen writes may be torn in the version being read
          }
        }
        return now;
      }
    } finally {
      lock.readLock().unlock();
    }
  }

  /** {@link Published#matches} on this file, with its one check buffer. */
  private boolean matches(Published last, Stamp now) throws IOException {
    synchronized (lengthLock) {
      if (checkBuffer == null) {
        checkBuffer = ByteBuffer.allocateDirect(CHECK_BUFFER);
      }
    }
    ByteBuffer buf = checkBuffer;
    synchronized (buf) {
      return last.matches(now, channel, buf);
    }
  }

  private long diskNanos() throws IOException {
    java.nio.file.attribute.FileTime t = Files.getLastModifiedTime(local);
    return t.to(java.util.concurrent.TimeUnit.NANOSECONDS);
  }

  /** An empty file, not yet in the store: {@code dirty} so that close publishes it. */
  static StagedFile empty(Path dir) throws IOException {
    StagedFile f = new StagedFile(Files.createTempFile(dir, "staged-", ""), 0,
        System.currentTimeMillis());
    f.changes = 1;
    f.unowned = 1; // an O_TRUNC of a published file: any descriptor's close publishes it
    f.asCreated = new Published(f.stamp(), new Reading.Sums()); // nothing wrote it yet
    return f;
  }

  /**
   * A copy of the published file, to be changed in place; with {@code recordCopy} (a mount
   * with passthrough: only a passed-through file's checks ever read the record) recorded as
   * the version it copies, at the cost of a SHA-256 of every byte copied. Without it the
   * copy costs no digest: a mount without passthrough sees every write and never checks.
   */
  static StagedFile copyOf(Path dir, FileReader reader, boolean recordCopy)
      throws IOException {
    StagedFile f = new StagedFile(Files.createTempFile(dir, "staged-", ""), reader.length(),
        reader.info().modificationTime());
    f.base = reader.info(); // used only if versions() is called: the bytes copied are its
    ByteBuffer buf = ByteBuffer.allocateDirect(1 << 20);
    long pos = 0;
    Reading.Sums sums = recordCopy ? new Reading.Sums() : null;
    try {
      while (pos < reader.length()) {
        buf.clear();
        int n = reader.read(pos, buf).get();
        if (n < 0) {
          break;
        }
        buf.flip();
        if (sums != null) {
          SentDigest digest = new SentDigest();
          digest.update(buf.duplicate());
          sums.add(pos, pos + n, digest.digest());
        }
        while (buf.hasRemaining()) {
          pos += f.channel.write(buf, pos);
        }
      }
      if (sums != null && pos == reader.length()) {
        // The copy is the published version (the one the record read named): recorded as
        // if this file had published it, so that the close of a writer that writes
        // nothing (fio's verify pass opens its file O_RDWR, reads it and closes) finds
        // the file unchanged and publishes nothing. Until session 15 such a close of a
        // passed-through file uploaded the whole file again, as a new version with the
        // same bytes (PassthroughEarlyIT's fio run sent 64 MiB twice: "4 publications, 3
        // whole"), and put the copy's bytes back over any version another client had
        // published since. Without passthrough such a close publishes nothing either
        // (no write of its descriptor). Stamped now: nothing but this copy wrote the file
        // yet (it is in no map, the kernel has no handle on it). The cost: a SHA-256 of
        // the copy at its open (~1.5 GB/s here, against the store's read of it at a few
        // hundred MB/s), and 36 bytes per MiB held while the file is open.
        Stamp stamp = f.stamp();
        synchronized (f.lengthLock) {
          f.lastPublished = new Published(stamp, sums);
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
    } finally {
      reader.close(); // the store's snapshots of the file's stripes, if it took any
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

  /**
   * The empty file was published at create, with {@link #mtime}: nothing to publish yet,
   * and a passed-through file's close without a write (fio lays its file out with an
   * open, a fallocate the mount refuses, and a close) publishes nothing: see
   * {@link #lastPublished}.
   */
  void publishedEmpty() {
    published = changes();
    synchronized (lengthLock) {
      lastPublished = asCreated;
    }
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
        if (reading != null) {
          reading.missed(changes); // the version's time is read at its end: never counted
        }
        if (passthrough != null) {
          // the local file carries the time observe reads: set there too, and seen
          Files.setLastModifiedTime(local, java.nio.file.attribute.FileTime.fromMillis(millis));
          seenNanos = diskNanos();
        }
      }
    } catch (IOException e) {
      throw new java.io.UncheckedIOException(e);
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
   * the file's name now, for an early upload (null: none). Returns the write's count among
   * the file's changes ({@link #changes}): the version its descriptor's close needs.
   */
  long write(long offset, ByteBuffer src, boolean append, FsPath path) throws IOException {
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
      long[] token = early.writing(at, at + n);
      long pos = at;
      long count = -1;
      try {
        while (src.hasRemaining()) {
          pos += channel.write(src, pos);
        }
      } finally {
        // written or not, the range may have changed: never counted as uploadable unless
        // it was fully written (a failed write leaves the upload claimed below it)
        boolean whole = pos == at + n;
        synchronized (lengthLock) {
          // Marked with the count, in one step: a publication's snapshot (which swaps the
          // dirty set) sees the write both counted and marked, or neither. A failed write
          // is marked too: its bytes may have landed anywhere in the range.
          changed(at, at + n);
          if (whole) {
            length = Math.max(length, at + n);
            mtime = System.currentTimeMillis();
            count = ++changes;
            if (reading != null) {
              reading.written(at, at + n, count);
            }
          }
        }
        if (whole) {
          Executor ex = uploadExecutor;
          early.written(token, path == null || ex == null ? null : uploadNs, path, ex);
        } else {
          early.failed(token);
        }
      }
      return count;
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
        // the stripe holding the new end and every one after it, up to the old end
        changed(Math.min(length, size), Math.max(length, size));
        length = size;
        mtime = System.currentTimeMillis();
        unowned = ++changes;
        grownTo = size;
        if (passthrough != null) {
          seenSize = size;
          seenNanos = diskNanos();
          mtime = seenNanos / 1_000_000;
        }
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
      Stamp stamp = null;
      BitSet changed = null;
      FileInfo over = null;
      BitSet clean = null;
      if (passthrough != null) {
        // Taken before the snapshot and applied to it (a write seen here is in this
        // version's length): a write after it moves the stamp or the bytes the version's
        // checksums describe, so comparing the file with both later tells whether
        // anything is unpublished. A stamp taken after the snapshot could hide a write in
        // between, missing from the version. Taken by every publication of a
        // passed-through file, even one that may find nothing new: a change counted
        // between a check here and the snapshot below (a concurrent fsync's look) would
        // otherwise be published with no stamp.
        stamp = observeStamped(false);
        Runnable hook = afterStamp;
        if (hook != null) {
          hook.run();
        }
      }
      synchronized (lengthLock) {
        // every change counted here is complete in the staged file: this version has it
        carried = changes;
        len = length;
        if (published >= Math.min(needed, carried)) {
          return; // nothing new, or what the caller needs went up with the last version
        }
        // The record describes the version before this one: cleared now, so that if this
        // one commits and no record follows (it fails after its commit, or its bytes were
        // not all summed), no later close is skipped against the older version while the
        // store holds this one. Recorded again below, only after the commit.
        lastPublished = null;
        // at the snapshot: a write finishing after it may extend the file, and the early
        // upload must not claim those bytes (they are past this version)
        early.stopAt(len);
        // Growth up to the snapshot is in this version: a poll
        // seeing it only now must not start the next version's upload of unchanged bytes
        grownTo = Math.max(grownTo, len);
        reading = new Reading(len, stamp != null);
        if (versions) {
          // The stripes changed up to this snapshot are this version's to send; a write
          // finishing after it marks the next one's set. A clean stripe is named from the
          // base; a write finishing into it from now on is not in this version (Reading),
          // and the next publication sends it: never lost.
          changed = dirty;
          dirty = new BitSet();
          over = base;
          clean = over == null ? new BitSet() : cleanStripes(over, changed, len);
          reading.clean(clean, over == null ? 1 : over.record().stripeSize());
          early.forgetWritten(); // only chunks written from now on are the next version's
        }
      }
      boolean done = false;
      try {
        Version v = upload(ns, path, len, carried, over, clean);
        published = v.carried();
        done = true;
        if (versions && v.info() != null) {
          FileInfo next = v.info().record().stripeCount() > 0 ? v.info() : null;
          synchronized (lengthLock) {
            base = next; // before early.resume() below: the next early writer is over it
          }
          early.base(next);
        }
        if (stamp != null) {
          synchronized (lengthLock) {
            // committed: the file as stamped, with the sums of the bytes this commit sent
            Reading.Sums sums = reading.sums;
            lastPublished = sums == null ? null : new Published(stamp, sums);
          }
        }
      } finally {
        synchronized (lengthLock) {
          reading = null;
          if (!done && changed != null) {
            dirty.or(changed); // not published: the next publication sends them
          }
        }
        early.resume();
      }
    } finally {
      publishing.unlock();
    }
  }

  /**
   * Uploads and commits the version of the first {@code len} bytes, from what the
   * background upload sent and the rest; returns it, with the count of changes it carries
   * (at least {@code carried}, the count at its snapshot: see {@link Reading}). With a
   * base ({@code over}, shared stripes) the version is made over it and names its stripes
   * in {@code clean} that the background upload did not write into; a base replaced
   * meanwhile ({@link BaseChangedException}) makes it a whole upload, as before.
   */
  private Version upload(BlobNamespace ns, FsPath path, long len, long carried,
      FileInfo over, BitSet clean) throws IOException {
    long started = System.nanoTime();
    early.awaitIdle(len); // the background round under way: outside every lock
    EarlyUpload.Taken taken;
    boolean use;
    long end = len;
    synchronized (lengthLock) {
      // The take (which clears the claimed chunks) and the reading's restart (which makes
      // a write into a sent chunk count as missed) are one step under lengthLock, under
      // which every write is counted. A write is then either counted before it: if it
      // touched a chunk claimed then, its early.writing() broke the upload (a chunk is
      // claimed only with no write in flight into it, so a write cannot start before the
      // claim and finish into the sent bytes), and the taken writer is not used; else the
      // chunk is still to be read, whole, by this publication. Or it is counted after it,
      // where Reading.written sees the sent chunks. Before, the take ran in EarlyUpload's
      // monitor alone: a write in between, into a sent chunk, broke nothing and was
      // counted as carried, its bytes skipped: acknowledged, closed and never published.
      // Lock order lengthLock -> EarlyUpload's monitor, as stopAt in publish.
      taken = early.take(path);
      // a writer made over another base than this snapshot's (none can be: bases change
      // only at commits, before the next writer starts) would name the wrong stripes
      use = taken != null && taken.usable() && sameVersion(taken.base(), over);
      if (use && taken.end() > len) {
        // A poll between this publication's stamp and its stopAt (another process
        // appending during the fsync) handed growth past len to the early upload, which
        // sent chunks past it. The version grows over them instead of dropping the whole
        // upload (all its chunks aborted, the file sent whole): bytes past len are bytes
        // written after the snapshot, which a version may hold (as in write()'s growth);
        // the file holds them (only a truncate shrinks it: it breaks an upload with a
        // claimed chunk past the new size, and waits for this publication), and a passed-
        // through file's sent chunks are read again and checked (checkSent) like the rest.
        // The stamp then no longer matches the version's length, so the next close
        // publishes again, as it must for an appender's later bytes.
        use = channel.size() >= taken.end(); // defensive: never a version past the file
        end = use ? taken.end() : len;
      }
      reading.restart(use ? taken : null, end);
    }
    if (taken != null && !use) {
      taken.writer().abort();
      taken = null;
    }
    long waited = System.nanoTime() - started;
    resent = 0;
    Version v;
    boolean whole = taken == null;
    if (taken == null) {
      // a version only if it has a stripe to take over: else a plain new file, as before
      // (a small one stays inline; a version's record is never inline)
      boolean version = over != null && !clean.isEmpty();
      whole = !version;
      try {
        v = version ? write(ns.createVersion(path, at(over, path)), null, len, over, clean)
            : write(ns.create(path, true), null, len, null, null);
      } catch (IOException first) {
        if (!version || !causedBy(first, BaseChangedException.class)) {
          throw first;
        }
        whole = true;
        v = writeWhole(ns, path, len, first);
      }
    } else {
      try {
        // the rest after what went up in the background
        v = write(taken.writer(), taken, end, taken.base(), clean);
      } catch (IOException first) {
        // Only a failure of the early writer's own state (its lease lapsed while the file
        // sat open, a write it sent failed) is worth the whole file once more. A failed
        // commit (a lost race, an outcome unknown) or a full store would fail again, or
        // publish twice, at twice the space and time: thrown as it is. A version whose
        // base another client replaced (BaseChangedException: nothing was applied, its
        // data discarded) is written whole as a plain new file: the staged bytes win, as
        // any publication of the mount does.
        if (!causedBy(first, BaseChangedException.class)
            && (taken.writer().reachedCommit() || causedBy(first, StoreFullException.class))) {
          throw first;
        }
        whole = true;
        v = writeWhole(ns, path, len, first);
      }
    }
    long fromEarly = whole ? 0 : taken == null ? 0 : taken.bytes() - resent;
    long kept = whole ? 0 : takenBytes(v.length());
    stats.published(fromEarly, v.length() - fromEarly - kept, whole, waited,
        System.nanoTime() - started);
    Version done = v;
    LOG.log(System.Logger.Level.DEBUG, () -> path + ": published " + done.length() + " bytes ("
        + fromEarly + " sent before and kept, " + kept + " taken over from the version before, "
        + resent + " sent again, length " + len
        + " at the snapshot), changes up to "
        + done.carried() + " (" + carried + " at the snapshot, " + changes() + " now), waited "
        + waited / 1_000_000 + " ms, took " + (System.nanoTime() - started) / 1_000_000 + " ms");
    return new Version(v.length(), Math.max(carried, v.carried()), v.info());
  }

  /**
   * The publication's second pass after its first failed ({@code first}): every byte of
   * the first {@code len}, through a plain new writer, the sent chunks and the stripes a
   * version would have taken over read too (a write into them meanwhile was counted as
   * missed: see {@link Reading#clean}).
   */
  private Version writeWhole(BlobNamespace ns, FsPath path, long len, IOException first)
      throws IOException {
    try {
      synchronized (lengthLock) {
        reading.restart(null, len); // a second pass reads the sent chunks too
        reading.clean(null, 1);
      }
      return write(ns.create(path, true), null, len, null, null);
    } catch (IOException | RuntimeException again) {
      again.addSuppressed(first);
      throw again;
    }
  }

  /** Whether two bases are the same published version (same file id), or both none. */
  private static boolean sameVersion(FileInfo a, FileInfo b) {
    return a == null ? b == null
        : b != null && a.record().fileId().equals(b.record().fileId());
  }

  /** The bytes of the stripes the last {@link #write} took over, of a version of {@code len}. */
  private long takenBytes(long len) {
    BitSet t = takenOver;
    long bytes = 0;
    for (int s = t == null ? -1 : t.nextSetBit(0); s >= 0; s = t.nextSetBit(s + 1)) {
      bytes += Math.max(0, Math.min(takenStripe, len - s * takenStripe));
    }
    return bytes;
  }

  /** Bytes a publication reads from the staged file at a time (see {@link Reading}). */
  private static final long PIECE = 1 << 20;
  /** The buffer a check of the file against its last publication reads through. */
  private static final int CHECK_BUFFER = 64 << 10;
  /**
   * How many times a version grows over what other descriptors wrote past its length
   * while it was read: enough for N writers of one file finishing a moment apart (the one
   * filling the last part extends the file while the first one's fsync reads it), bounded
   * so that an fsync never chases a writer that appends faster than the store takes it.
   */
  private static final int MAX_GROWTH = 16;

  /**
   * A version uploaded: its length, the count of changes it carries and, once committed,
   * the record published ({@link FileWriter#published}).
   */
  private record Version(long length, long carried, FileInfo info) {}

  /**
   * A committed version of a passed-through file: the local file's {@link Stamp} before its
   * snapshot and the SHA-256 of every piece it sent, read once, as sent.
   */
  private record Published(Stamp stamp, Reading.Sums sums) {
    /**
     * Whether the local file, stamped {@code now}, holds this version still: the stamp
     * unchanged (a cheap pre-check: a write with {@code write(2)} after the stamp's tick
     * moves mtime and ctime) and the bytes the same, read again into {@code buf}. The
     * bytes decide: a write in the stamp's tick moves no time, nor does a write through a
     * shared mapping while its page is dirty and writable (the page written before the
     * fsync's publication stays so); both are seen only in the bytes (a read and a
     * SHA-256, cheaper than an upload: see {@link Reading.Sums}).
     */
    boolean matches(Stamp now, FileChannel channel, ByteBuffer buf) throws IOException {
      return stamp.equals(now) && sums.length() == now.size() && sums.matches(channel, buf);
    }
  }

  /**
   * Completes a version in {@code w}, which holds {@code sent}'s chunks already (null:
   * nothing), with the rest of the first {@code len} bytes, and any written past them while
   * it read ({@link #MAX_GROWTH}), and publishes it. With {@code over} (w is a version of
   * it: shared stripes), its stripes in {@code clean} that {@code sent} did not write into
   * are taken over ({@link FileWriter#takeOver}) and not read.
   */
  private Version write(FileWriter w, EarlyUpload.Taken sent, long len, FileInfo over,
      BitSet clean) throws IOException {
    Version v;
    takenOver = null;
    try {
      long end = len; // the caller restarted the reading for this pass
      long pos = 0;
      boolean mayGrow = true;
      if (over != null) {
        // The length first: takeOver checks each stripe against it (I4).
        w.setLength(end);
        long size = over.record().stripeSize();
        BitSet want = (BitSet) clean.clone();
        if (sent != null) {
          // a stripe the background upload wrote into is this writer's to write whole
          for (int i = sent.chunks().nextSetBit(0); i >= 0; i = sent.chunks().nextSetBit(i + 1)) {
            long from = i * sent.chunk() / size;
            long to = Math.min(((i + 1) * sent.chunk() - 1) / size, Integer.MAX_VALUE - 1);
            if (from <= to) {
              want.clear((int) Math.min(from, Integer.MAX_VALUE - 1), (int) to + 1);
            }
          }
        }
        takenStripe = size;
        takenOver = w.takeOver(want);
        int last = takenOver.length() - 1;
        // A version that took the base's last, partial stripe (equal lengths) cannot grow:
        // that stripe would no longer be whole in it. Writes past its end go to the next.
        mayGrow = last < 0 || (last + 1) * size <= end;
      }
      for (int grown = 0; ; grown++) {
        pos = read(w, sent, pos, end);
        synchronized (lengthLock) {
          if (length <= end || grown == MAX_GROWTH || !mayGrow) {
            // all of it has been read
            v = new Version(end, reading.carriedUpTo(changes), null);
            break;
          }
          end = length;
          reading.grow(end);
        }
        if (over != null) {
          w.setLength(end);
        }
      }
      // the time of the last write (or utimensat), not of this close: stat shows one time
      // while the file is open here and after, and tar, rsync and make see a stable mtime
      w.setModificationTime(mtime());
    } catch (IOException | RuntimeException e) {
      w.abort();
      throw e;
    }
    w.close();
    return new Version(v.length(), v.carried(), w.published());
  }

  /**
   * Sends {@code [pos, end)} of the staged file to {@code w}, straight from the page cache
   * into the writer's buffers, in ascending order, skipping {@code sent}'s chunks; a hole
   * at the end (extending truncate) reads as zeros. Returns {@code end}.
   */
  private long read(FileWriter w, EarlyUpload.Taken sent, long pos, long end)
      throws IOException {
    BitSet skip = takenOver;
    long size = takenStripe;
    while (pos < end) {
      long gapEnd = end;
      if (skip != null && pos / size < skip.length()) {
        int s = (int) (pos / size);
        if (skip.get(s)) {
          // taken over: the base's key holds these bytes (DESIGN §3), none sent
          pos = Math.min(end, skip.nextClearBit(s) * size);
          continue;
        }
        int next = skip.nextSetBit(s);
        if (next >= 0) {
          gapEnd = Math.min(gapEnd, next * size);
        }
      }
      if (sent != null && pos / sent.chunk() < sent.chunks().length()) {
        int i = (int) (pos / sent.chunk());
        if (sent.chunks().get(i)) {
          if (sent.digests() != null) {
            pos = checkSent(w, sent, i); // passed through: read again, not trusted
          } else {
            pos = Math.min(end, sent.chunks().nextClearBit(i) * sent.chunk());
          }
          continue;
        }
        int next = sent.chunks().nextSetBit(i);
        if (next >= 0) {
          gapEnd = Math.min(gapEnd, next * sent.chunk());
        }
      }
      w.seek(pos);
      while (pos < gapEnd) {
        long to = Math.min(gapEnd, pos + PIECE);
        Reading.Sums sums;
        synchronized (lengthLock) {
          reading.cursor = to; // before reading them: see Reading
          sums = reading.sums;
        }
        if (sums == null) {
          w.transferFrom(channel, pos, to - pos);
        } else {
          SentDigest sum = new SentDigest();
          w.transferFrom(channel, pos, to - pos, sum); // the digest of exactly what was sent
          sums.add(pos, to, sum.digest());
        }
        pos = to;
      }
    }
    return pos;
  }

  /**
   * Sent chunk {@code i} of a passed-through file ({@link EarlyUpload.Taken#digests}): the
   * kernel may have written into it while the background upload read it, or after (a
   * write(2), or a shared mapping's page, unseen by the mount). It is read again now and
   * kept only if its SHA-256 is the one of the bytes sent; else it is sent again, so the
   * version holds the chunk as this publication read it, as for any byte it reads itself.
   * The same digest is the one the version's {@link Reading.Sums} keep. Returns the
   * chunk's end. (The version's length covers every sent chunk: see {@link #upload}.)
   *
   * <p>Why SHA-256 and not the CRC32C that decided until session 14: a CRC32C of 8 MiB
   * lets a changed chunk pass with a chance of 2^-32 (only changes within 32 bits are
   * always caught), and that
   * chunk was then published stale with no trace; keeping the sent bytes to compare would
   * cost 8 MiB of memory per chunk in flight. A SHA-256 collision is out of reach.
   */
  private long checkSent(FileWriter w, EarlyUpload.Taken sent, int i) throws IOException {
    long start = i * sent.chunk();
    long to = start + sent.chunk();
    Reading.Sums sums;
    synchronized (lengthLock) {
      reading.cursor = to; // before reading them: see Reading
      sums = reading.sums;
    }
    byte[] digest = digestOf(start, to);
    byte[] was = sent.digests().get(i);
    if (was == null || !java.security.MessageDigest.isEqual(was, digest)) {
      // Sent again over the first send, on the same writer (its blob range is overwritten
      // in place on every store: BlobStoreContract). First every write of that send must
      // be acknowledged: two writes of one range in flight may land in either order.
      w.awaitWrites();
      w.seek(start);
      SentDigest sum = new SentDigest();
      w.transferFrom(channel, start, to - start, sum); // the digest of exactly what was sent
      digest = sum.digest();
      resent += to - start;
      stats.resent(to - start);
    }
    if (sums != null) {
      sums.add(start, to, digest);
    }
    return to;
  }

  /**
   * The SHA-256 of the staged file's bytes {@code [start, to)}, zeros past its end (as
   * FileWriter.transferFrom sends a hole at the end); one read, through
   * {@link #sentBuffer}.
   */
  private byte[] digestOf(long start, long to) throws IOException {
    synchronized (lengthLock) {
      if (sentBuffer == null) {
        sentBuffer = ByteBuffer.allocateDirect(CHECK_BUFFER);
      }
    }
    ByteBuffer buf = sentBuffer;
    SentDigest sum = new SentDigest();
    synchronized (buf) {
      long at = start;
      while (at < to) {
        buf.clear().limit((int) Math.min(buf.capacity(), to - at));
        int n = channel.read(buf, at);
        if (n < 0) {
          buf.clear();
          while (buf.hasRemaining()) {
            buf.put((byte) 0);
          }
          while (at < to) {
            int k = (int) Math.min(buf.capacity(), to - at);
            sum.update(buf.clear().limit(k));
            at += k;
          }
          break;
        }
        sum.update(buf.flip());
        at += n;
      }
    }
    return sum.digest();
  }

  /**
   * What a publication has read of the staged file so far, to tell which writes that finish
   * while it reads are in its version. Writes go on during a publication; before, a version
   * carried only the changes finished when it began, so with N processes each fsyncing
   * its part of one file (fio's jobs, MPI-IO's N-to-1), the writes the others finished a
   * moment after the first fsync made every later fsync a whole new version, each the
   * whole file uploaded again. The publication reads the staged file in ascending order,
   * and {@link #cursor} is set past each piece before that piece is read: a write that
   * finishes at or past the cursor, within the version's length and outside the chunks the
   * background upload sent before, lands in bytes still to be read, so the version holds
   * it whole. Any other write finishing meanwhile may be in it in part and is not counted
   * ({@link #firstMissed}): the version carries every change up to the first one missed.
   * Guarded by the staged file's {@code lengthLock}, which counts the changes.
   */
  private static final class Reading {
    /** The version's length so far: it grows over what was written past it meanwhile. */
    private long length;
    private EarlyUpload.Taken sent;
    /** Bytes from here on are still to be read (a write below it may be torn). */
    long cursor;
    private long firstMissed = Long.MAX_VALUE;
    /** The first change still to be read but past {@link #length}: carried if it grows. */
    private long firstPast = Long.MAX_VALUE;
    /**
     * Checksums of the pieces this pass sent, in order (passthrough only); null: none, or
     * the version holds bytes this pass did not read (the background upload's chunks).
     */
    Sums sums;
    private final boolean summed;
    /**
     * Shared stripes: the base's stripes ({@link #cleanStripe} bytes each) this version may
     * name instead of reading; null: none. A write finishing into one after the snapshot
     * is not in the version (the base's key holds the bytes before it) and is counted as
     * missed, whatever the cursor: the next publication, whose dirty set holds it, sends
     * it. Without this, a write in flight at the snapshot into a stripe taken over would
     * be counted as carried, and a close needing it would publish nothing.
     */
    private BitSet clean;
    private long cleanStripe = 1;

    Reading(long length, boolean summed) {
      this.length = length;
      this.summed = summed;
    }

    void clean(BitSet stripes, long stripeSize) {
      clean = stripes;
      cleanStripe = stripeSize;
    }

    private boolean cleanHolds(long start, long end) {
      if (clean == null || end <= start) {
        return false;
      }
      int i = clean.nextSetBit((int) Math.min(start / cleanStripe, Integer.MAX_VALUE - 1));
      return i >= 0 && i <= (end - 1) / cleanStripe;
    }

    /**
     * A pass over the first {@code length} bytes begins, the background upload's chunks
     * {@code sent} skipped (a second pass, after the early writer failed, reads them too).
     */
    void restart(EarlyUpload.Taken sent, long length) {
      this.sent = sent;
      this.length = length;
      cursor = 0;
      // the background upload's chunks of a passed-through file are read again and summed
      // (checkSent): the version's sums then cover every byte, early or not
      sums = summed && (sent == null || sent.digests() != null) ? new Sums() : null;
    }

    /**
     * SHA-256 of consecutive pieces {@code [start, end)} of a version, from byte 0: 36 bytes
     * per piece of at most {@link #PIECE} or a sent chunk (arrays grown by doubling: 36-72
     * MiB of heap per TiB of file).
     *
     * <p>Why SHA-256 and not the CRC32C kept until session 15: these sums decide whether a
     * close publishes at all, and a change that moves no time (a write in the stamp's tick,
     * a write through a dirty, writable mapped page) is seen only in them. A CRC32C let
     * such a change through with a chance of 2^-32 per changed piece (certainly one that
     * kept it), and if that close was the file's last publication (the last release, the
     * unmount) the staged copy was discarded with the write. The cost: SHA-256 runs at
     * ~1.5 GB/s here (CRC32C ~22), paid on every byte a publication sends and at every
     * close or fsync whose stat matches the last publication (a re-read of the file).
     */
    static final class Sums {
      private static final int DIGEST = 32;
      private byte[] digests = new byte[4 * DIGEST];
      private int[] lengths = new int[4];
      private int count;
      private long end;

      void add(long start, long to, byte[] digest) {
        if (start != end) {
          throw new IllegalStateException("piece at " + start + ", expected " + end);
        }
        if (digest.length != DIGEST) {
          throw new IllegalArgumentException("a SHA-256 has 32 bytes, not " + digest.length);
        }
        if (count == lengths.length) {
          digests = java.util.Arrays.copyOf(digests, count * 2 * DIGEST);
          lengths = java.util.Arrays.copyOf(lengths, count * 2);
        }
        System.arraycopy(digest, 0, digests, count * DIGEST, DIGEST);
        lengths[count++] = Math.toIntExact(to - start);
        end = to;
      }

      /** The bytes summed, from 0. */
      long length() {
        return end;
      }

      /**
       * Whether {@code channel} holds, to its first {@link #length} bytes, what was summed;
       * reads through {@code buf} (any size: a piece's digest is fed a buffer at a time).
       */
      boolean matches(FileChannel channel, ByteBuffer buf) throws IOException {
        SentDigest sum = new SentDigest();
        long at = 0;
        for (int i = 0; i < count; i++) {
          long to = at + lengths[i];
          while (at < to) {
            buf.clear().limit((int) Math.min(buf.capacity(), to - at));
            while (buf.hasRemaining()) {
              int n = channel.read(buf, at + buf.position());
              if (n < 0) {
                return false; // shorter than the version: changed
              }
            }
            at += buf.position();
            sum.update(buf.flip());
          }
          if (!java.util.Arrays.equals(sum.digest(), 0, DIGEST, digests, i * DIGEST,
              (i + 1) * DIGEST)) {
            return false; // digest() reset it for the next piece
          }
        }
        return true;
      }
    }

    /** A write of {@code [start, end)}, change number {@code count}, has finished. */
    void written(long start, long end, long count) {
      if (start < cursor || sentHolds(start, end) || cleanHolds(start, end)) {
        missed(count);
      } else if (end > length) {
        firstPast = Math.min(firstPast, count);
      }
    }

    /**
     * The version grows to {@code newLength}, the file's length now, which holds every
     * write finished so far: those past the old length, still to be read, are carried.
     */
    void grow(long newLength) {
      length = newLength;
      firstPast = Long.MAX_VALUE;
    }

    /** Change {@code count} may not be in this version. */
    void missed(long count) {
      firstMissed = Math.min(firstMissed, count);
    }

    private boolean sentHolds(long start, long end) {
      if (sent == null || start / sent.chunk() >= sent.chunks().length()) {
        return false;
      }
      int i = sent.chunks().nextSetBit((int) (start / sent.chunk()));
      return i >= 0 && i <= (end - 1) / sent.chunk();
    }

    /** Once every byte is read: the changes up to this count are in the version. */
    long carriedUpTo(long changes) {
      return Math.min(changes, Math.min(firstMissed, firstPast) - 1);
    }
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
    Passthrough p = passthrough;
    if (p != null) {
      p.close(backingId); // handles still open (the kernel's) keep the file until released
    }
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
