package io.blobfs.fuse;

import io.blobfs.fuse.InodeTable.Node;
import io.blobfs.fuse.kernel.Attr;
import io.blobfs.fuse.kernel.DirBuffer;
import io.blobfs.fuse.kernel.Entry;
import io.blobfs.fuse.kernel.Errno;
import io.blobfs.fuse.kernel.FuseException;
import io.blobfs.fuse.kernel.FuseSession;
import io.blobfs.fuse.kernel.LowLevelFs;
import io.blobfs.fuse.kernel.Opened;
import io.blobfs.fuse.kernel.Passthrough;
import io.blobfs.fuse.kernel.SetAttr;
import io.blobfs.fuse.kernel.StatFs;
import io.blobfs.namespace.BlobNamespace;
import io.blobfs.namespace.FileInfo;
import io.blobfs.namespace.FileReader;
import io.blobfs.namespace.FileWriter;
import io.blobfs.namespace.FsPath;
import io.blobfs.namespace.IllegalPathException;
import io.blobfs.namespace.TargetChangedException;
import io.blobfs.store.StoreFullException;
import java.io.FileNotFoundException;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.DirectoryNotEmptyException;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.NotDirectoryException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Executor;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.ReentrantReadWriteLock;

/**
 * The file-system semantics of a mount (the paper's Table 4), over the namespace layer:
 * names are looked up as records and implicit directories, files are read straight from
 * their stripes, and files open for writing are {@link StagedFile}s published at close,
 * fsync and last release. Directories follow blob://: mkdir writes nothing (or a marker
 * where the namespace keeps markers), readdir and rmdir are the namespace's scans; in the
 * paper's mode mkdir, opendir and rmdir are not supported.
 */
public final class BlobFuseFs implements LowLevelFs {
  private static final System.Logger LOG = System.getLogger(BlobFuseFs.class.getName());

  /** Settings of the semantics. */
  /**
   * Settings of the semantics; {@code earlyUploadChunk}: bytes a file being written gathers
   * before its next version starts uploading in the background ({@link EarlyUpload}), 0 for
   * never; {@code takeover}: shared stripes ({@code fs.blob.fuse.takeover}, off by default:
   * see MountConfig), a publication of a file written here (not passed through) sends
   * only the stripes changed since the version before and names the others.
   */
  public record Settings(boolean paperMode, int permission, int blockSize, Path stagingDir,
      long earlyUploadChunk, boolean takeover) {
    public Settings(boolean paperMode, int permission, int blockSize, Path stagingDir) {
      this(paperMode, permission, blockSize, stagingDir, EarlyUpload.DEFAULT_CHUNK);
    }

    public Settings(boolean paperMode, int permission, int blockSize, Path stagingDir,
        long earlyUploadChunk) {
      this(paperMode, permission, blockSize, stagingDir, earlyUploadChunk, false);
    }
  }

  private final BlobNamespace ns;
  private final Settings settings;
  private final InodeTable inodes = new InodeTable();
  /** Node id to its staged file while any handle of this mount has it open. */
  private final Map<Long, StagedFile> staged = new HashMap<>();
  /**
   * Node id to how many of its staged files left {@link #staged} while an open copied the
   * file outside it (guarded by {@link #staged}; an entry lives while such opens run, so
   * the map stays as small as the opens under way): see open. Per node: with one count
   * for the whole mount, every release of any other file during a copy made the open copy
   * the whole file again, and a mount whose files close more often than a copy takes never
   * completed the open.
   */
  private final Map<Long, Copying> copying = new HashMap<>();
  /**
   * The staged files of {@link #staged} that pass through to the kernel, by node id: what
   * {@link #pollGrowth} looks at every 50 ms. A map of its own, concurrent, updated under
   * {@link #staged} where a file is admitted and where it leaves: the poll used to copy
   * the whole of {@link #staged} under its monitor, which every read, write, open and
   * release of the mount takes, at a cost that grew with the files open (thousands, for
   * an N-to-N job), passed through or not.
   */
  private final Map<Long, StagedFile> passedThrough = new ConcurrentHashMap<>();
  private final Map<Long, Handle> handles = new ConcurrentHashMap<>();
  private final AtomicLong nextHandle = new AtomicLong(1);
  /** Renames and unlinks exclusive, publications shared: see {@link #publish(Node, StagedFile)}. */
  private final ReentrantReadWriteLock names = new ReentrantReadWriteLock();
  /**
   * Runs the early uploads of files being written ({@link EarlyUpload}): two at a time,
   * since each keeps up to the write buffer's in-flight bytes moving on its own.
   */
  private final Executor uploads = Executors.newFixedThreadPool(2, r -> {
    Thread t = new Thread(r, "blobfs-early-upload");
    t.setDaemon(true);
    return t;
  });
  private final WriteStats writeStats = new WriteStats();
  /**
   * The kernel's passthrough, when the mount negotiated it (fs.blob.fuse.passthrough):
   * staged files are then read and written by the kernel itself; null: every read and
   * write comes here.
   */
  private volatile Passthrough passthrough;
  /** What an implicit directory, which has no time of its own, shows: the mount's start. */
  private final long mountedAt = System.currentTimeMillis();

  /** An open file; {@code reader} is null when the file was staged at open. */
  private record Handle(Node node, PublishedReader reader, boolean writable, boolean append,
      List<FileInfo> listing, AtomicLong written) {
    Handle(Node node, PublishedReader reader, boolean writable, boolean append,
        List<FileInfo> listing) {
      this(node, reader, writable, append, listing, new AtomicLong());
    }
  }

  public BlobFuseFs(BlobNamespace ns, Settings settings) throws IOException {
    this.ns = ns;
    this.settings = settings;
    Files.createDirectories(settings.stagingDir());
  }

  /**
   * How often the sizes of open passed-through files are polled for early upload
   * ({@link #pollGrowth}); 0: never (tests poll themselves). Set before {@link #initialized}.
   */
  long growthPollMillis = GROWTH_POLL_MILLIS;
  private static final long GROWTH_POLL_MILLIS = 50;
  private volatile ScheduledExecutorService growthPoll;

  @Override
  public void initialized(Passthrough p) {
    passthrough = p;
    if (p != null && growthPollMillis > 0 && settings.earlyUploadChunk() > 0) {
      // The kernel writes passed-through files without a WRITE request to this process:
      // a poll of their sizes (an fstat each) is what starts their early uploads. 50 ms
      // is ~5 MiB at a GB/s, well under a chunk; an idle mount's poll finds no file.
      ScheduledExecutorService t = Executors.newSingleThreadScheduledExecutor(r -> {
        Thread th = new Thread(r, "blobfs-growth-poll");
        th.setDaemon(true);
        return th;
      });
      t.scheduleWithFixedDelay(this::pollGrowth, growthPollMillis, growthPollMillis,
          TimeUnit.MILLISECONDS);
      growthPoll = t;
    }
  }

  /** Stops the poll of passed-through files' growth (the unmount). */
  public void stopPolling() {
    ScheduledExecutorService t = growthPoll;
    if (t != null) {
      // Not shutdownNow: its interrupt would close the staged file's channel a poll is
      // reading (an interruptible channel), failing that file's publication.
      t.shutdown();
      try {
        if (!t.awaitTermination(10, TimeUnit.SECONDS)) {
          LOG.log(System.Logger.Level.WARNING, "the growth poll did not stop within 10 s");
        }
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }
  }

  /**
   * One poll: every open passed-through file hands its growth since the last poll to its
   * early upload ({@link StagedFile#pollGrowth}), under its name now (an unlinked file's
   * is never published: none). Never throws: a failing stat is logged and polled again.
   */
  void pollGrowth() {
    // Not under the map's monitor: a weakly consistent view of the concurrent map. A file
    // leaving meanwhile may still be polled once: its discarded upload starts nothing (a
    // closed channel, logged below), as when a copy of the map was polled.
    for (Map.Entry<Long, StagedFile> e : passedThrough.entrySet()) {
      StagedFile s = e.getValue();
      Node n = inodes.get(e.getKey());
      if (n == null || n.unlinked) {
        continue;
      }
      try {
        s.pollGrowth(n.path);
      } catch (IOException | RuntimeException ex) {
        LOG.log(System.Logger.Level.DEBUG, "growth poll of " + n.path + ": " + ex);
      }
    }
  }

  /** How many staged files {@link #pollGrowth} looks at (tests). */
  int polledFiles() {
    return passedThrough.size();
  }

  /** The passed-through staged file of node {@code node}, or null (tests). */
  StagedFile passedThrough(long node) {
    return passedThrough.get(node);
  }

  /**
   * Under {@link #staged}, as {@code s} enters it for node {@code n}: with passthrough, its
   * handles will all pass through to it, unless the node has handles open on the published
   * file through the kernel's page cache (which the kernel does not mix with passthrough
   * on one inode): then it is served here for as long as it is staged, as without it.
   * Called before any handle is opened on {@code s}, so all its handles agree.
   */
  private void admit(Node n, StagedFile s) {
    Passthrough p = passthrough;
    if (p == null || n.cachedOpens > 0 || s.backingId() > 0) {
      return;
    }
    try {
      s.passThrough(p);
      passedThrough.put(n.id, s);
    } catch (IOException e) {
      LOG.log(System.Logger.Level.WARNING, n.path + " is served without passthrough: " + e);
    }
  }

  /** The open reply of handle {@code o} on staged file {@code s}: passing through if it does. */
  private static Opened onStaged(Opened o, StagedFile s) {
    int id = s.backingId();
    return id > 0 ? new Opened(o.fh(), false, false, id) : o;
  }

  // ---------------------------------------------------------------- names

  @Override
  /**
   * Under the shared side of {@link #names}, as open: a rename (the exclusive side) is
   * never seen half done by a lookup in this mount.
   */
  public Entry lookup(long parent, String name) throws FuseException {
    FsPath path = child(parent, name);
    names.readLock().lock();
    try {
      Node known = inodes.find(path);
      StagedFile s = known == null ? null : stagedOf(known.id);
      if (s != null) {
        observe(path, s);
        return new Entry(inodes.lookup(path).id, fileAttr(known.id, s.length(), s.mtime()));
      }
      FileInfo info = probe(path).orElseThrow(() -> new FuseException(Errno.ENOENT, path.toString()));
      Node n = inodes.lookup(path);
      n.lastAttr = attrOf(n.id, info);
      return new Entry(n.id, n.lastAttr);
    } finally {
      names.readLock().unlock();
    }
  }

  @Override
  public void forget(long node, long count) {
    inodes.forget(node, count);
  }

  /** Under the shared side of {@link #names}, as lookup: never between a replace's calls. */
  @Override
  public Attr getattr(long node) throws FuseException {
    names.readLock().lock();
    try {
      return getattrLocked(node);
    } finally {
      names.readLock().unlock();
    }
  }

  private Attr getattrLocked(long node) throws FuseException {
    Node n = node(node);
    StagedFile s = stagedOf(node);
    if (s != null) {
      observe(n.path, s); // with passthrough, the size the kernel's writes gave it
      n.lastAttr = fileAttr(node, s.length(), s.mtime());
      return n.lastAttr;
    }
    if (n.unlinked) {
      Attr last = n.lastAttr; // fstat of a file unlinked or replaced while open
      if (last == null) {
        throw new FuseException(Errno.ENOENT, "unlinked");
      }
      return new Attr(last.ino(), last.size(), last.mtimeMillis(), last.mode(), 0,
          last.blksize(), last.uid(), last.gid());
    }
    FileInfo info = probe(n.path).orElseThrow(() -> new FuseException(Errno.ENOENT, n.path.toString()));
    n.lastAttr = attrOf(node, info);
    return n.lastAttr;
  }

  /**
   * Truncation and a new modification time change the file: the staged copy if it is open
   * here, else a new version published at once (a copy of the file: costly for a large
   * closed file). Mode and owner are accepted and not kept: every file shows
   * {@code fs.blob.permission} and the mount's user.
   */
  @Override
  public Attr setattr(long node, SetAttr change) throws FuseException {
    Node n = node(node);
    if (change.size() >= 0 || change.mtimeMillis() >= 0) {
      try {
        if (!changeStaged(node, change)) {
          FileInfo info = probe(n.path).orElseThrow(() -> new FuseException(Errno.ENOENT, n.path.toString()));
          if (info.isDirectory()) {
            if (change.size() >= 0) {
              throw new FuseException(Errno.EISDIR, n.path.toString());
            }
            return getattr(node); // a directory has no time to keep
          }
          // With shared stripes a time or a truncate of a closed file sends only the
          // stripes it changes (none for a time): the copy is still read whole.
          StagedFile tmp = versions(change.size() == 0 ? StagedFile.empty(settings.stagingDir())
              : StagedFile.copyOf(settings.stagingDir(), ns.open(info), false));
          try {
            if (change.size() >= 0) {
              tmp.truncate(change.size());
            }
            tmp.setMtime(change.mtimeMillis() >= 0 ? change.mtimeMillis()
                : System.currentTimeMillis());
            tmp.publish(ns, n.path);
          } finally {
            tmp.discard();
          }
        }
      } catch (IOException | RuntimeException e) {
        throw errno(n.path, e);
      }
    }
    return getattr(node);
  }

  /**
   * Applies a truncate or new time to the node's staged file, if it has one. The file is
   * pinned under the map's monitor (counted as a handle, so no last release takes it out
   * of the map) and changed outside it: a truncate waits for the file's publication under
   * way, and only this file's calls should wait for that, not every open and release of
   * the mount. A last release meanwhile leaves the file to this call, which then
   * publishes it as that release would have ({@link #unpin}), so the change is never
   * missed.
   */
  private boolean changeStaged(long node, SetAttr change) throws IOException, FuseException {
    StagedFile s;
    synchronized (staged) {
      s = staged.get(node);
      if (s == null) {
        return false;
      }
      s.handles++;
    }
    try {
      if (change.size() >= 0) {
        s.truncate(change.size());
      }
      if (change.mtimeMillis() >= 0) {
        s.setMtime(change.mtimeMillis());
      }
    } finally {
      unpin(node(node), s);
    }
    return true;
  }

  @Override
  public Entry mkdir(long parent, String name) throws FuseException {
    paperModeRefuses("mkdir");
    FsPath path = child(parent, name);
    if (probe(path).isPresent()) {
      throw new FuseException(Errno.EEXIST, path.toString());
    }
    try {
      ns.mkdirs(path);
    } catch (IOException | RuntimeException e) {
      throw errno(path, e);
    }
    Node n = inodes.lookup(path);
    return new Entry(n.id, dirAttr(n.id, System.currentTimeMillis()));
  }

  @Override
  public Entry mknod(long parent, String name, int mode) throws FuseException {
    if ((mode & 0170000) != Attr.S_IFREG) {
      throw new FuseException(Errno.EOPNOTSUPP, "only regular files");
    }
    Opened[] h = new Opened[1];
    Entry e = create(parent, name, FuseSession.O_EXCL | FuseSession.O_WRONLY, h);
    release(e.node(), h[0].fh());
    return e;
  }

  @Override
  public void unlink(long parent, String name) throws FuseException {
    names.writeLock().lock();
    try {
      unlinkLocked(parent, name);
    } finally {
      names.writeLock().unlock();
    }
  }

  private void unlinkLocked(long parent, String name) throws FuseException {
    FsPath path = child(parent, name);
    FileInfo info = probe(path).orElseThrow(() -> new FuseException(Errno.ENOENT, path.toString()));
    if (info.isDirectory()) {
      throw new FuseException(Errno.EISDIR, path.toString());
    }
    try {
      if (!ns.delete(path, false)) {
        throw new FuseException(Errno.ENOENT, path.toString());
      }
    } catch (IOException | RuntimeException e) {
      throw errno(path, e);
    }
    inodes.unlink(path); // open handles keep their staged bytes, never published again
  }

  @Override
  public void rmdir(long parent, String name) throws FuseException {
    names.writeLock().lock();
    try {
      rmdirLocked(parent, name);
    } finally {
      names.writeLock().unlock();
    }
  }

  private void rmdirLocked(long parent, String name) throws FuseException {
    paperModeRefuses("rmdir");
    FsPath path = child(parent, name);
    FileInfo info = probe(path).orElseThrow(() -> new FuseException(Errno.ENOENT, path.toString()));
    if (info.isFile()) {
      throw new FuseException(Errno.ENOTDIR, path.toString());
    }
    try {
      ns.delete(path, false);
    } catch (IOException | RuntimeException e) {
      throw errno(path, e);
    }
    inodes.unlink(path);
  }

  /**
   * POSIX rename(2) over the namespace. A file replaces an existing file through the
   * namespace's {@link BlobNamespace#renameOver}: one transaction on Týr and memory,
   * crash-safe on RADOS, the target never missing in between, and only the target probed
   * here replaced; if another client changed it since, it is probed again (the rename
   * then replaces what is there now, as it would had it come a moment later). A directory
   * replaces an empty directory (ENOTEMPTY otherwise). Changes staged here under the
   * source are published first, so the name carries them.
   */
  @Override
  public void rename(long parent, String name, long newParent, String newName,
      boolean noReplace) throws FuseException {
    names.writeLock().lock();
    try {
      renameLocked(parent, name, newParent, newName, noReplace);
    } finally {
      names.writeLock().unlock();
    }
  }

  /** How often a rename probes its target again when other clients keep changing it. */
  private static final int RENAME_ATTEMPTS = 5;

  private void renameLocked(long parent, String name, long newParent, String newName,
      boolean noReplace) throws FuseException {
    FsPath src = child(parent, name);
    FsPath dst = child(newParent, newName);
    FileInfo from = probe(src).orElseThrow(() -> new FuseException(Errno.ENOENT, src.toString()));
    if (src.equals(dst)) {
      return;
    }
    if (dst.isAtOrUnder(src)) {
      throw new FuseException(Errno.EINVAL, "a directory cannot move under itself");
    }
    try {
      publishUnder(src);
      for (int attempt = 1; ; attempt++) {
        if (renameOnce(src, from, dst, noReplace)) {
          break;
        }
        if (attempt == RENAME_ATTEMPTS) {
          throw new FuseException(Errno.EAGAIN, "rename " + src + " to " + dst + ": other"
              + " clients kept changing " + dst + "; nothing was changed");
        }
      }
    } catch (IOException | RuntimeException e) {
      throw errno(src, e);
    }
    inodes.unlink(dst); // whatever the name held before is not this node's any more
    inodes.rename(src, dst);
  }

  /** One try; false if another client changed the target after it was probed. */
  private boolean renameOnce(FsPath src, FileInfo from, FsPath dst, boolean noReplace)
      throws IOException, FuseException {
    Optional<FileInfo> to = probe(dst);
    if (to.isPresent()) {
      if (noReplace) {
        throw new FuseException(Errno.EEXIST, dst.toString());
      }
      if (from.isFile() && to.get().isDirectory()) {
        throw new FuseException(Errno.EISDIR, dst.toString());
      }
      if (from.isDirectory() && to.get().isFile()) {
        throw new FuseException(Errno.ENOTDIR, dst.toString());
      }
      if (from.isFile()) {
        try {
          ns.renameOver(src, to.get());
          return true;
        } catch (TargetChangedException e) {
          return false;
        }
      }
      // Directories have no versions to condition on; an empty one holds no data.
      ns.delete(dst, false); // a non-empty directory: ENOTEMPTY, as POSIX
    }
    // false, changing nothing, also for a target created after the rename's own check
    if (ns.rename(src, dst)) {
      return true;
    }
    if (ns.probe(src).isEmpty()) {
      throw new FuseException(Errno.ENOENT, src + " was renamed or removed meanwhile");
    }
    if (ns.probe(dst).isPresent()) {
      return false; // created at the target meanwhile
    }
    throw new FuseException(Errno.ENOENT, "rename " + src + " to " + dst + " was refused:"
        + " the target's parent directory is missing");
  }

  // ---------------------------------------------------------------- files

  @Override
  public Opened open(long node, int flags) throws FuseException {
    names.readLock().lock();
    try {
      return openLocked(node, flags);
    } finally {
      names.readLock().unlock();
    }
  }

  private Opened openLocked(long node, int flags) throws FuseException {
    Node n = node(node);
    // The kernel may open a node it looked up before a rename replaced it (its name cache
    // lasts 1 s): the name now holds another file, which is what an open of the name
    // should read. Served with direct I/O, so that the new file's bytes never share the
    // old node's page cache with the old file's readers (that mixed two versions).
    // A writer gets ESTALE instead (the VFS then looks the name up again): its writes to a
    // node without a name would never be published.
    boolean replaced = n.unlinked && stagedOf(node) == null;
    if (replaced && (flags & FuseSession.O_ACCMODE) != 0) {
      throw new FuseException(Errno.ESTALE, n.path + " was replaced");
    }
    boolean writable = (flags & FuseSession.O_ACCMODE) != 0;
    boolean trunc = writable && (flags & FuseSession.O_TRUNC) != 0;
    boolean append = (flags & FuseSession.O_APPEND) != 0;
    try {
      FileReader reader = null;
      StagedFile s;
      boolean truncateStaged = false;
      // The store calls (the record, and without O_TRUNC a copy of the whole file) run
      // outside the map's monitor, which every read, write and release of the mount takes:
      // an open for writing of a large file used to stall every file of the mount for as
      // long as its copy took. The copy is put in the map only if no staged copy of the
      // file appeared meanwhile (then that one is used) and none left the map (its
      // publication may postdate the record copied: copied again).
      while (true) {
        Copying copy = null;
        long removals = 0;
        CompletableFuture<Void> mine = null;
        CompletableFuture<Void> another = null;
        synchronized (staged) {
          s = staged.get(node);
          if (s != null) {
            truncateStaged = trunc; // below, outside the map's monitor: see changeStaged
            s.handles++; // this open's handle, which also keeps s in the map meanwhile
            break;
          }
          if (!writable) {
            n.cachedOpens++; // before the reply: no staged copy may pass through meanwhile
          } else {
            copy = copying.computeIfAbsent(node, id -> new Copying());
            if (!trunc && copy.copied != null) {
              another = copy.copied;
            } else {
              copy.openers++;
              removals = copy.removals;
              if (!trunc) { // an O_TRUNC open copies nothing: it never makes others wait
                mine = copy.copied = new CompletableFuture<>();
              }
            }
          }
        }
        if (another != null) {
          // Another open copies this file now: wait for it, outside the map's monitor, and
          // look again (its copy is then in the map; if it failed or was discarded, this
          // open copies in turn). Before, N processes opening one large file each copied
          // it whole at once, N times the reads and the staging space.
          another.handle((ok, failed) -> null).join();
          continue;
        }
        if (!writable) {
          // a fresh record read: close-to-open; a copy staged meanwhile is what the reads
          // of this handle find first (see read)
          try {
            reader = ns.open(n.path);
          } catch (IOException | RuntimeException e) {
            synchronized (staged) {
              n.cachedOpens--;
            }
            throw e;
          }
          break;
        }
        StagedFile fresh = null;
        try {
          fresh = stage(n, trunc);
        } finally {
          synchronized (staged) {
            if (mine != null) {
              copy.copied = null;
              mine.complete(null); // its waiters look again once this monitor is free
            }
            if (--copy.openers == 0) {
              copying.remove(node);
            }
            if (fresh != null) {
              s = staged.get(node);
              if (s != null) {
                truncateStaged = trunc;
                s.handles++;
              } else if (removals == copy.removals) {
                s = fresh;
                staged.put(node, s);
                admit(n, s);
                s.handles++;
                fresh = null;
              }
            }
          }
        }
        if (fresh != null) {
          fresh.discard();
        }
        if (s != null) {
          break;
        }
      }
      if (truncateStaged) {
        try {
          s.truncate(0);
        } catch (IOException | RuntimeException e) {
          unpin(n, s); // no handle was made: give its count back
          throw e;
        }
      }
      boolean keep = false;
      if (replaced) {
        n.pages.openStaged(); // direct I/O: no pages; counted so that release balances it
      } else if (reader != null) {
        keep = n.pages.openPublished(KeptPages.versionOf(reader.info().record()));
      } else {
        n.pages.openStaged();
      }
      Opened o = handle(new Handle(n, reader == null ? null : new PublishedReader(reader),
          writable, append, null), keep);
      return replaced ? new Opened(o.fh(), false, true) : reader == null ? onStaged(o, s) : o;
    } catch (IOException | RuntimeException e) {
      throw errno(n.path, e);
    }
  }

  /** A staged copy of the file {@code n} names, empty with {@code trunc}. */
  private StagedFile stage(Node n, boolean trunc) throws IOException, FuseException {
    for (int attempt = 1; ; attempt++) {
      FileInfo info = ns.getFileInfo(n.path);
      if (info.isDirectory()) {
        throw new FuseException(Errno.EISDIR, n.path.toString());
      }
      try {
        return versions(trunc ? StagedFile.empty(settings.stagingDir())
            : StagedFile.copyOf(settings.stagingDir(), ns.open(info), passthrough != null))
            .uploadEarly(ns, uploads, settings.earlyUploadChunk(), writeStats);
      } catch (FileNotFoundException e) {
        // A data blob of the version being copied is gone: another client published a new
        // version (or deleted the file) meanwhile, which deletes the old one's blobs. The
        // open copies what the name holds now, as it would had it come a moment later; the
        // same version still named means data really lost: that fails.
        if (attempt == COPY_ATTEMPTS || !replacedSince(n.path, info)) {
          throw e;
        }
      }
    }
  }

  /**
   * {@code s} publishing versions that take unchanged stripes over, where the mount's
   * settings ask for it and no file passes through (the kernel's writes are not seen:
   * DESIGN §4 step 6, not built); else as it is, each publication a whole new file.
   */
  private StagedFile versions(StagedFile s) {
    return settings.takeover() && passthrough == null
        ? s.versions(ns.options().stripeSize()) : s;
  }

  /** How often an open for writing copies again when other clients keep publishing. */
  private static final int COPY_ATTEMPTS = 5;

  /** True if {@code path} names no longer the version {@code copied} (or nothing). */
  private boolean replacedSince(FsPath path, FileInfo copied) throws IOException {
    Optional<FileInfo> now = ns.probe(path);
    return now.isEmpty() || now.get().record() == null
        || !Objects.equals(now.get().record().fileId(), copied.record().fileId());
  }

  /**
   * Publishes an empty file at once, so that the name exists from create on (as in any
   * POSIX file system) and O_EXCL is decided by the store: the namespace's exclusive
   * create fails if another client published the name first.
   */
  @Override
  public Entry create(long parent, String name, int flags, Opened[] handle) throws FuseException {
    FsPath path = child(parent, name);
    boolean excl = (flags & FuseSession.O_EXCL) != 0;
    Optional<FileInfo> existing = probe(path);
    if (existing.isPresent()) {
      if (excl) {
        throw new FuseException(Errno.EEXIST, path.toString());
      }
      if (existing.get().isDirectory()) {
        throw new FuseException(Errno.EISDIR, path.toString());
      }
      Node n = inodes.lookup(path);
      handle[0] = open(n.id, flags);
      return new Entry(n.id, getattr(n.id));
    }
    StagedFile s;
    try {
      s = versions(StagedFile.empty(settings.stagingDir()))
          .uploadEarly(ns, uploads, settings.earlyUploadChunk(), writeStats);
      try {
        FileWriter w = ns.create(path, !excl);
        w.setModificationTime(s.mtime());
        w.close();
      } catch (IOException | RuntimeException e) {
        s.discard();
        throw e;
      }
    } catch (IOException | RuntimeException e) {
      throw errno(path, e);
    }
    Node n = inodes.lookup(path);
    synchronized (staged) {
      StagedFile old = staged.putIfAbsent(n.id, s);
      if (old != null) { // another create of the same name in this mount won
        s.discard();
        s = old;
      } else {
        s.publishedEmpty();
        admit(n, s);
      }
      s.handles++;
    }
    n.pages.openStaged();
    handle[0] = onStaged(
        handle(new Handle(n, null, true, (flags & FuseSession.O_APPEND) != 0, null)), s);
    n.lastAttr = fileAttr(n.id, s.length(), s.mtime());
    return new Entry(n.id, n.lastAttr);
  }

  @Override
  public void read(long node, long fh, long offset, ByteBuffer dst) throws FuseException {
    Handle h = handleOf(fh);
    StagedFile s = stagedOf(node);
    try {
      if (s != null) {
        s.read(offset, dst); // this mount's writes, seen at once by every reader here
        return;
      }
      if (h.reader() == null) {
        throw new FuseException(Errno.EBADF, "handle lost its staged file");
      }
      h.reader().read(offset, dst);
    } catch (ExecutionException e) {
      throw errno(h.node().path, e.getCause());
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new FuseException(Errno.EINTR, "interrupted");
    } catch (IOException | RuntimeException e) {
      throw errno(h.node().path, e);
    }
  }

  @Override
  public int write(long node, long fh, long offset, ByteBuffer src) throws FuseException {
    Handle h = handleOf(fh);
    StagedFile s = stagedOf(node);
    if (!h.writable() || s == null) {
      throw new FuseException(Errno.EBADF, "not open for writing");
    }
    try {
      int n = src.remaining();
      // this write's own count, not the file's latest: a racing writer's later write that
      // a publication did not carry must not make this descriptor's close publish again
      long count = s.write(offset, src, h.append(), h.node().path);
      h.written().accumulateAndGet(count, Math::max);
      return n;
    } catch (IOException e) {
      // the staging directory's disk is full: the only ENOSPC a write can meet here
      boolean full = String.valueOf(e.getMessage()).contains("No space left");
      throw new FuseException(full ? Errno.ENOSPC : Errno.EIO,
          "staging write failed: " + e.getMessage(), e);
    }
  }

  /** close(2): publishes what this mount changed, so the next open anywhere sees it. */
  @Override
  public void flush(long node, long fh) throws FuseException {
    publishFor(handleOf(fh), false);
  }

  @Override
  public void fsync(long node, long fh, boolean dataOnly) throws FuseException {
    publishFor(handleOf(fh), true);
  }

  @Override
  public void release(long node, long fh) throws FuseException {
    Handle h = handles.remove(fh);
    if (h == null) {
      return;
    }
    if (h.reader() != null) {
      h.reader().close();
      synchronized (staged) {
        h.node().cachedOpens--;
      }
    }
    if (h.listing() == null) {
      h.node().pages.released();
    }
    StagedFile s;
    synchronized (staged) {
      s = staged.get(h.node().id);
    }
    // a handle counts on the staged file when it was opened on it (it has no reader); the
    // count keeps that file in the map, so s is the one it was counted on
    if (s != null && h.reader() == null) {
      unpin(h.node(), s);
    }
  }

  /**
   * Gives back one count (a handle, or a setattr's pin) on {@code s}, the staged file of
   * {@code node}; the last one publishes it and takes it out of the map.
   */
  private void unpin(Node node, StagedFile s) throws FuseException {
    synchronized (staged) {
      if (--s.handles > 0) {
        return;
      }
    }
    // Published while still in the map, so that a rename or unlink of the name, which
    // publishes what is staged under it first, never misses it; an open racing in
    // meanwhile keeps the staged file alive. A setattr (utimensat after close, as rsync
    // and tar do) pins it while it changes it: then the setattr's unpin publishes it
    // again, and it leaves the map only clean.
    //
    // The discard runs outside the map's monitor, once s has left the map (no open can
    // find it then): it waits for the file's background upload under way and aborts its
    // writer, store calls that can take seconds (an unlinked file's release skips the
    // publication that would have waited for them), and every read and write of the
    // mount takes the monitor to find its staged file.
    while (true) {
      try {
        if (!node.unlinked) {
          // Forced: a write through a shared mapping after the last close(fd), before the
          // munmap, moves no time when its page was dirty and writable since before that
          // close's publication (on tmpfs never); only the bytes show it. Unforced, the
          // look saw no change and the write was lost. With the checksums of the last
          // publication, a file that did not change costs a read here, not an upload.
          observe(node.path, s, true);
        }
        publish(node, s);
      } catch (FuseException e) {
        boolean drop;
        synchronized (staged) {
          drop = s.handles == 0 && removeStaged(node.id, s);
        }
        if (drop) {
          s.discard();
        }
        throw e;
      }
      synchronized (staged) {
        if (s.handles > 0) {
          return; // reopened meanwhile: the new handles own it
        }
        if (s.dirty() && !node.unlinked) {
          continue; // changed by a setattr meanwhile: published again
        }
        removeStaged(node.id, s);
      }
      s.discard();
      return;
    }
  }

  /**
   * Under {@link #staged}: takes {@code s} out of the map if it is {@code id}'s staged
   * file there, and tells the opens copying that file (their copy may predate what s
   * published: they copy again).
   */
  private boolean removeStaged(long id, StagedFile s) {
    if (!staged.remove(id, s)) {
      return false;
    }
    passedThrough.remove(id, s);
    Copying c = copying.get(id);
    if (c != null) {
      c.removals++;
    }
    return true;
  }

  /** Opens copying one file outside {@link #staged}; guarded by it. */
  private static final class Copying {
    int openers;
    /** Staged files of the file that left the map since the first of them began. */
    long removals;
    /** Completed when the copy under way (not an O_TRUNC open's) ends; null: none. */
    CompletableFuture<Void> copied;
  }

  // ---------------------------------------------------------------- directories

  @Override
  public Opened opendir(long node) throws FuseException {
    paperModeRefuses("opendir");
    Node n = node(node);
    try {
      List<FileInfo> listing = n.path.isRoot() || probe(n.path).map(FileInfo::isDirectory).orElse(false)
          ? ns.list(n.path) : null;
      if (listing == null) {
        throw new FuseException(Errno.ENOTDIR, n.path.toString());
      }
      return handle(new Handle(n, null, false, false, listing));
    } catch (FileNotFoundException e) {
      return handle(new Handle(n, null, false, false, List.of())); // emptied since lookup
    } catch (IOException | RuntimeException e) {
      throw errno(n.path, e);
    }
  }

  /** Offsets: 1 after ".", 2 after "..", 2 + i + 1 after the i-th name of the listing. */
  @Override
  public void readdir(long node, long fh, long offset, DirBuffer out) throws FuseException {
    Handle h = handleOf(fh);
    List<FileInfo> listing = h.listing();
    long off = offset;
    if (off == 0 && !out.add(node, ".", DirBuffer.DT_DIR, 1)) {
      return;
    }
    off = Math.max(off, 1);
    if (off == 1) {
      FsPath parent = h.node().path.isRoot() ? FsPath.ROOT : h.node().path.parent();
      if (!out.add(inodes.inoOf(parent), "..", DirBuffer.DT_DIR, 2)) {
        return;
      }
      off = 2;
    }
    for (int i = (int) (off - 2); i < listing.size(); i++) {
      FileInfo f = listing.get(i);
      if (!out.add(inodes.inoOf(f.path()), f.path().name(),
          f.isDirectory() ? DirBuffer.DT_DIR : DirBuffer.DT_REG, i + 3)) {
        return;
      }
    }
  }

  @Override
  public void releasedir(long node, long fh) {
    handles.remove(fh);
  }

  /** The store reports no capacity: a large constant, so that tools do not refuse to write. */
  @Override
  public StatFs statfs() {
    return new StatFs(1L << 32, 1L << 32, 1L << 32, 1L << 32, 4096, 255);
  }

  // ---------------------------------------------------------------- shutdown

  /**
   * Publishes every file open for writing: an unmount loses nothing written so far.
   * Returns the paths of the files that had unpublished changes.
   */
  public List<FsPath> publishAll() {
    List<Map.Entry<Long, StagedFile>> open;
    synchronized (staged) {
      open = new ArrayList<>(staged.entrySet());
    }
    List<FsPath> dirty = new ArrayList<>();
    for (Map.Entry<Long, StagedFile> e : open) {
      Node n = inodes.get(e.getKey());
      if (n != null) {
        try {
          // forced: a passed-through write that moved neither size nor time is lost
          // otherwise; an unmount with files still open is rare enough to pay an upload
          e.getValue().observe(true);
        } catch (IOException | RuntimeException ex) {
          LOG.log(System.Logger.Level.WARNING, "cannot stat the staged copy of " + n.path, ex);
        }
        if (e.getValue().dirty() && !n.unlinked) {
          dirty.add(n.path);
        }
        try {
          publish(n, e.getValue());
        } catch (FuseException ex) {
          LOG.log(System.Logger.Level.ERROR, "could not publish " + n.path + " at unmount", ex);
        }
      }
    }
    return dirty;
  }

  /** The publications' bytes and times so far ({@link WriteStats}), for the unmount's log. */
  public String writeSummary() {
    return writeStats.summary();
  }

  WriteStats writeStats() {
    return writeStats;
  }

  // ---------------------------------------------------------------- helpers

  /**
   * close(2) of one descriptor: publishes the staged file unless a publication already
   * carried this descriptor's writes and every change no descriptor owns. fsync ({@code
   * wholeFile}) publishes every change of the file so far: POSIX fsync flushes the file,
   * not the descriptor, and a descriptor that wrote nothing may still be the one synced
   * (sync FILE opens it read-only; the kernel sends a shared mmap's writes under any
   * writable handle of the inode). An fsync with nothing newer still returns at once.
   */
  private void publishFor(Handle h, boolean wholeFile) throws FuseException {
    StagedFile s = stagedOf(h.node().id);
    if (s != null) {
      // with passthrough, the kernel's writes are seen here only now: a close of a
      // descriptor that may have written, or an fsync, counts them
      try {
        s.observe(h.writable() || wholeFile);
      } catch (IOException | RuntimeException e) {
        throw errno(h.node().path, e);
      }
      long needed = wholeFile ? s.changes() : Math.max(h.written().get(), s.unownedChanges());
      publish(h.node(), s, needed);
    }
  }

  /**
   * Publishes {@code s} under the node's current name, unless it has none. Under the shared
   * side of {@link #names}: a rename or unlink (the exclusive side) never runs between
   * reading the name and the record's commit, which would put the file back under a name
   * that was just renamed or unlinked.
   */
  private void publish(Node n, StagedFile s) throws FuseException {
    publish(n, s, Long.MAX_VALUE);
  }

  /** As {@link #publish(Node, StagedFile)}, if changes up to {@code needed} are not yet. */
  private void publish(Node n, StagedFile s, long needed) throws FuseException {
    names.readLock().lock();
    try {
      if (!n.unlinked) {
        s.observe(false); // passthrough writes since the last look (an mmap's, at release)
        s.publish(ns, n.path, needed);
      }
    } catch (IOException | RuntimeException e) {
      throw errno(n.path, e);
    } finally {
      names.readLock().unlock();
    }
  }

  /** Publishes the staged files at or under {@code path}, before it is renamed. */
  private void publishUnder(FsPath path) throws FuseException {
    List<Map.Entry<Long, StagedFile>> open;
    synchronized (staged) {
      open = new ArrayList<>(staged.entrySet());
    }
    for (Map.Entry<Long, StagedFile> e : open) {
      Node n = inodes.get(e.getKey());
      if (n != null && !n.unlinked && n.path.isAtOrUnder(path)) {
        publish(n, e.getValue());
      }
    }
  }

  /** {@link StagedFile#observe}, not forced: a stat sees the kernel's passthrough writes. */
  private static void observe(FsPath path, StagedFile s) throws FuseException {
    observe(path, s, false);
  }

  /** {@link StagedFile#observe}, its failure as the errno of {@code path}. */
  private static void observe(FsPath path, StagedFile s, boolean force) throws FuseException {
    try {
      s.observe(force);
    } catch (IOException | RuntimeException e) {
      throw errno(path, e);
    }
  }

  private StagedFile stagedOf(long node) {
    synchronized (staged) {
      return staged.get(node);
    }
  }

  private Opened handle(Handle h) {
    return handle(h, false); // page cache dropped at open: close-to-open
  }

  /** {@code keepCache}: the pages hold the version this open reads (see KeptPages). */
  private Opened handle(Handle h, boolean keepCache) {
    long fh = nextHandle.getAndIncrement();
    handles.put(fh, h);
    return new Opened(fh, keepCache);
  }

  private Handle handleOf(long fh) throws FuseException {
    Handle h = handles.get(fh);
    if (h == null) {
      throw new FuseException(Errno.EBADF, "no handle " + fh);
    }
    return h;
  }

  private Node node(long id) throws FuseException {
    Node n = inodes.get(id);
    if (n == null) {
      throw new FuseException(Errno.ENOENT, "stale node " + id);
    }
    return n;
  }

  private FsPath child(long parent, String name) throws FuseException {
    Node p = node(parent);
    try {
      FsPath path = p.path.child(name);
      ns.checkPath(path);
      return path;
    } catch (IllegalArgumentException e) {
      throw errno(p.path, e);
    }
  }

  private Optional<FileInfo> probe(FsPath path) throws FuseException {
    try {
      return ns.probe(path);
    } catch (IOException | RuntimeException e) {
      throw errno(path, e);
    }
  }

  private void paperModeRefuses(String op) throws FuseException {
    if (settings.paperMode()) {
      throw new FuseException(Errno.EOPNOTSUPP, op + " is not supported in the paper's mode");
    }
  }

  private Attr attrOf(long ino, FileInfo info) {
    return info.isDirectory() ? dirAttr(ino, info.modificationTime())
        : fileAttr(ino, info.length(), info.modificationTime());
  }

  private Attr fileAttr(long ino, long size, long mtime) {
    return new Attr(ino, size, mtime, Attr.S_IFREG | settings.permission(), 1,
        settings.blockSize(), 0, 0);
  }

  private Attr dirAttr(long ino, long mtime) {
    return new Attr(ino, 0, mtime > 0 ? mtime : mountedAt, Attr.S_IFDIR | settings.permission(), 1,
        settings.blockSize(), 0, 0);
  }

  /** Whether the store refused for want of space, however deep the namespace wrapped it. */
  private static boolean storeFull(Throwable e) {
    for (Throwable t = e; t != null; t = t.getCause()) {
      if (t instanceof StoreFullException) {
        return true;
      }
    }
    return false;
  }

  /** The errno of a namespace or store failure. */
  static FuseException errno(FsPath path, Throwable e) {
    if (e instanceof FuseException f) {
      return f;
    }
    int code;
    if (e instanceof FileNotFoundException) {
      code = Errno.ENOENT;
    } else if (e instanceof FileAlreadyExistsException) {
      code = Errno.EEXIST;
    } else if (e instanceof DirectoryNotEmptyException) {
      code = Errno.ENOTEMPTY;
    } else if (e instanceof NotDirectoryException) {
      code = Errno.ENOTDIR;
    } else if (storeFull(e)) {
      // A RADOS pool at its quota or a full cluster (EDQUOT or ENOSPC from the OSDs):
      // ENOSPC, the errno programs know; the message says which store refused.
      code = Errno.ENOSPC;
      LOG.log(System.Logger.Level.WARNING, path + ": the store is full: " + e.getMessage());
    } else if (e instanceof IllegalPathException) {
      code = e.getMessage() != null && e.getMessage().contains("over the store's limit")
          ? Errno.ENAMETOOLONG : Errno.EINVAL;
    } else {
      code = Errno.EIO;
      LOG.log(System.Logger.Level.WARNING, path + ": " + e, e);
    }
    return new FuseException(code, path + ": " + e.getMessage(), e);
  }
}
