package io.blobfs.namespace;

import io.blobfs.store.BlobAlreadyExistsException;
import io.blobfs.store.BlobNotFoundException;
import io.blobfs.store.BlobStore;
import io.blobfs.store.Futures;
import io.blobfs.store.PutMode;
import io.blobfs.store.ScanPage;
import io.blobfs.store.StoreFullException;
import io.blobfs.store.StoreLimits;
import io.blobfs.store.TransactionConflictException;
import io.blobfs.store.VersionedBytes;
import java.io.FileNotFoundException;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.DirectoryNotEmptyException;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.NotDirectoryException;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.NoSuchElementException;
import java.util.Optional;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;

/**
 * File-system semantics over a flat blob store: path to key rules, the record + data
 * layout, implicit directories, and the orchestration of create, delete and rename.
 * It speaks of paths and files, never of Hadoop, and is thread-safe.
 *
 * <p>Failures use java.nio.file's exception types ({@link FileAlreadyExistsException},
 * {@link DirectoryNotEmptyException}, {@link NotDirectoryException}) and
 * {@link FileNotFoundException}; the adapter maps them to Hadoop's.
 */
public final class BlobNamespace {
  private static final System.Logger LOG = System.getLogger(BlobNamespace.class.getName());
  /**
   * How often a mutation that lost a race to a concurrent change re-reads and tries again
   * before it reports the conflict: enough for a few racing writers, bounded so that a
   * caller under a storm of changes gets an answer.
   */
  static final int RACE_ATTEMPTS = 5;

  private final StoreCalls calls;
  private final KeyLayout layout;
  private final NamespaceOptions options;
  private final PendingDirectories pending = new PendingDirectories();
  private final Deleter deleter = new Deleter(this);
  private final Renamer renamer = new Renamer(this);
  private final Replacer replacer = new Replacer(this);
  private final DataLocks locks = new DataLocks(this);
  private final TakeoverCommit takeovers = new TakeoverCommit(this);

  public BlobNamespace(BlobStore store, NamespaceOptions options, StoreCallCounters counters) {
    StoreLimits limits = store.limits();
    if (options.stripeSize() > limits.maxObjectBytes()) {
      throw new IllegalArgumentException("stripe size " + options.stripeSize()
          + " is over the store's largest object size " + limits.maxObjectBytes());
    }
    this.calls = new StoreCalls(store, counters);
    this.layout = new KeyLayout(limits);
    this.options = options;
  }

  public NamespaceOptions options() {
    return options;
  }

  /** True when a directory rename is one atomic store transaction. */
  public boolean hasAtomicRename() {
    return calls.transactional();
  }

  /** Rejects a path whose keys the store would refuse, before any store call. */
  public void checkPath(FsPath path) {
    layout.checkPath(path);
  }

  // ---------------------------------------------------------------- lookups

  /** What is at {@code path}: one record read, then a prefix probe if no file is there. */
  public Optional<FileInfo> probe(FsPath path) throws IOException {
    layout.checkPath(path);
    if (path.isRoot()) {
      return Optional.of(FileInfo.directory(path, 0));
    }
    Optional<VersionedRecord> record = readRecord(layout.recordKey(path), false);
    if (record.isPresent()) {
      return Optional.of(FileInfo.file(path, record.get().record()));
    }
    return pending.covers(path) || isDirectory(path)
        ? Optional.of(FileInfo.directory(path, 0)) : Optional.empty();
  }

  public FileInfo getFileInfo(FsPath path) throws IOException {
    return probe(path).orElseThrow(() -> new FileNotFoundException("No such file or directory: " + path));
  }

  /** A directory exists while a marker or any name lies under its prefix. */
  boolean isDirectory(FsPath path) throws IOException {
    return path.isRoot()
        || !calls.firstKeys(layout.dirPrefix(path), 1).isEmpty();
  }

  /**
   * The entries directly under {@code path}, sorted by name; a file lists as itself.
   *
   * @throws FileNotFoundException if nothing is there
   */
  public List<FileInfo> list(FsPath path) throws IOException {
    List<FileInfo> all = listLazily(path).drain();
    all.sort(Comparator.comparing(FileInfo::path));
    return all;
  }

  /** As {@link #list} in store order, one scan page at a time. */
  public EntryIterator<FileInfo> listLazily(FsPath path) throws IOException {
    return new DirectoryLister(this, path, false);
  }

  /** Every file below {@code path} at any depth, from one flat scan; no directories. */
  public EntryIterator<FileInfo> listFilesRecursively(FsPath path) throws IOException {
    return new DirectoryLister(this, path, true);
  }

  // ---------------------------------------------------------------- reads and writes

  /**
   * Starts a new file; it becomes visible at {@link FileWriter#close()}. Fails at once if
   * {@code path} is a directory, or a file and {@code overwrite} is false (unless
   * {@link NamespaceOptions#createPerformance()}: then an existing file fails the close).
   * Parents are neither created nor checked (the paper's rule).
   */
  public FileWriter create(FsPath path, boolean overwrite) throws IOException {
    if (path.isRoot()) {
      throw new FileAlreadyExistsException("/", null, "the root is a directory");
    }
    layout.checkPath(path);
    if (options.createPerformance()) {
      return new FileWriter(this, path, overwrite, newFileId());
    }
    Optional<FileInfo> existing = probe(path);
    if (existing.isPresent()) {
      if (existing.get().isDirectory()) {
        throw new FileAlreadyExistsException(path.toString(), null, "is a directory");
      }
      if (!overwrite) {
        throw new FileAlreadyExistsException(path.toString(), null, "file exists");
      }
    }
    return new FileWriter(this, path, overwrite, newFileId());
  }

  /**
   * Starts a new version of the file {@code base} (what {@link #probe} or a listing
   * returned for {@code path}), which may name the stripes of {@code base} it leaves
   * unchanged instead of writing them again ({@link FileWriter#takeOver}; issue 16,
   * {@code wip/shared-stripes/DESIGN.md} §2.3). The new version keeps the base's stripe
   * size. Its {@link FileWriter#close()} publishes it only while the name still holds
   * {@code base}, else throws {@link BaseChangedException} and applies nothing; the
   * replace then deletes exactly the keys of {@code base} the new version does not name.
   * Records that name other versions' stripes are stored as BFS3, which clients before
   * it refuse to read ({@link FileRecord}): every client of the store must be at this
   * version or later.
   *
   * <p>With transactions the commit is one transaction; without (RADOS), seven
   * conditional steps, any cut of which leaves the name holding one version whole
   * ({@link TakeoverCommit}).
   */
  public FileWriter createVersion(FsPath path, FileInfo base) throws IOException {
    layout.checkPath(path);
    if (!base.isFile() || !base.path().equals(path)) {
      throw new IllegalArgumentException("the base of a version of " + path
          + " must be the file at that path, not " + base.path()
          + (base.isFile() ? "" : " (a directory)"));
    }
    return new FileWriter(this, path, newFileId(), base.record());
  }

  /**
   * {@link #create}, but the parent must already be a directory (Hadoop's
   * {@code createNonRecursive}): a file as parent is a {@link NotDirectoryException}; a
   * missing parent is a {@link FileNotFoundException} only where directories exist on their
   * own (markers kept). In the paper's mode every parent exists implicitly, so that case is
   * not refused. The root's parent rule is trivially met.
   */
  public FileWriter createNonRecursive(FsPath path, boolean overwrite) throws IOException {
    FsPath parent = path.parent();
    if (parent != null && !parent.isRoot()) {
      Optional<FileInfo> info = probe(parent);
      if (info.isPresent() && info.get().isFile()) {
        throw new NotDirectoryException(parent + " is a file");
      }
      if (info.isEmpty() && options.keepDirectoryMarkers()) {
        throw new FileNotFoundException("parent directory does not exist: " + parent);
      }
    }
    return create(path, overwrite);
  }

  /** Opens a file for reading: one record read (which also carries a small file's bytes). */
  public FileReader open(FsPath path) throws IOException {
    layout.checkPath(path);
    Optional<VersionedRecord> record = path.isRoot()
        ? Optional.empty() : readRecord(layout.recordKey(path), true);
    if (record.isEmpty()) {
      if (isDirectory(path)) {
        throw new FileNotFoundException("Path is a directory, not a file: " + path);
      }
      throw new FileNotFoundException("No such file: " + path);
    }
    return new FileReader(this, FileInfo.file(path, record.get().record()));
  }

  /** Opens a file whose info the caller already holds: no metadata read for large files. */
  public FileReader open(FileInfo info) throws IOException {
    if (info.isDirectory()) {
      throw new FileNotFoundException("Path is a directory, not a file: " + info.path());
    }
    if (info.record().isInline() && !info.record().hasInlineBytes()) {
      return open(info.path());
    }
    return new FileReader(this, info);
  }

  // ---------------------------------------------------------------- directories

  /**
   * Dropped by default, as in the paper: nothing is written, and directories exist through
   * the names under them; this instance alone remembers the empty directories it made
   * ({@link PendingDirectories}). A file at the path or above it is refused either way: by
   * default with one record read per level, sent together; with markers kept, by probes
   * up to the nearest existing directory, before the marker is written.
   */
  public boolean mkdirs(FsPath path) throws IOException {
    layout.checkPath(path);
    if (path.isRoot()) {
      return true;
    }
    if (!options.keepDirectoryMarkers()) {
      refuseFileAtOrAbove(path);
      pending.add(path);
      return true;
    }
    for (FsPath p = path; !p.isRoot(); p = p.parent()) {
      Optional<FileInfo> info = probe(p);
      if (info.isEmpty()) {
        continue;
      }
      if (info.get().isFile()) {
        throw fileInTheWay(path, p);
      }
      if (p.equals(path)) {
        return true;
      }
      break;
    }
    putMarker(path);
    return true;
  }

  /**
   * Without markers a directory is only the names under it, so nothing cheaper than the
   * records of every level says that no file is in the way; their reads overlap.
   */
  private void refuseFileAtOrAbove(FsPath path) throws IOException {
    List<FsPath> levels = new ArrayList<>(path.depth());
    List<String> keys = new ArrayList<>(path.depth());
    for (FsPath p = path; !p.isRoot(); p = p.parent()) {
      levels.add(p);
      keys.add(layout.recordKey(p));
    }
    List<Optional<FileRecord>> records = readHeaders(keys);
    for (int i = 0; i < levels.size(); i++) {
      if (records.get(i).isPresent()) {
        throw fileInTheWay(path, levels.get(i));
      }
    }
  }

  private static IOException fileInTheWay(FsPath path, FsPath file) {
    return file.equals(path)
        ? new FileAlreadyExistsException(path.toString(), null, "a file exists there")
        : new NotDirectoryException(file + " is a file, not a directory");
  }

  /**
   * Deletes a file or directory; a non-empty directory needs {@code recursive}. A
   * recursive delete of a non-empty root deletes nothing and returns false, as S3A does,
   * so that a stray "rm -r /" loses no data. See {@link Deleter}.
   */
  public boolean delete(FsPath path, boolean recursive) throws IOException {
    return deleter.delete(path, recursive);
  }

  /**
   * Renames without moving data, as HDFS does: into an existing directory the source keeps
   * its name; a missing source, an existing destination file, a source above its
   * destination, or (with markers kept) a missing destination parent make it return
   * false. See {@link Renamer}.
   */
  public boolean rename(FsPath src, FsPath dst) throws IOException {
    return renamer.rename(src, dst);
  }

  /**
   * Renames the file {@code src} over the file {@code target} (what {@link #probe} of the
   * destination returned), as POSIX rename(2) replaces a file: atomically with
   * transactions, crash-safe without (a crash part-way is rolled forward), and with no
   * moment in which the destination is missing. The destination is replaced only while it
   * still holds the probed file; see {@link Replacer}.
   *
   * @throws TargetChangedException if it holds another file now, or none (nothing changed:
   *     probe again)
   * @throws FileNotFoundException if {@code src} is missing
   * @throws NotDirectoryException if {@code src} is a directory
   */
  public void renameOver(FsPath src, FileInfo target) throws IOException {
    replacer.renameOver(src, target);
  }

  /**
   * Recovery after a crash: finishes every operation that was cut off part-way and
   * returns them, each as "rename SRC to DST", "delete DIR" or "settled N interrupted file
   * rename(s)".
   * Without transactions, first settles every file rename cut off between its copy and
   * the source's removal whose lock has expired ({@link MoveSettler}: the source is
   * removed if the copy was made), then finishes every interrupted directory rename (what
   * is left under its source moves to its destination) and recursive delete (what is
   * left and older than it goes). With transactions only renames too large for one
   * transaction have parts, and only they are finished.
   */
  public List<String> finishInterruptedRenames() throws IOException {
    return recover(false);
  }

  /**
   * {@link #finishInterruptedRenames}; with {@code nothingRuns}, also what is under a
   * lease that has not run out (a test's checkpoint, where no client runs).
   */
  List<String> recover(boolean nothingRuns) throws IOException {
    List<String> done = new ArrayList<>();
    if (!calls.transactional()) {
      int settled = MoveSettler.settleAll(this, nothingRuns);
      if (settled > 0) {
        done.add("settled " + settled + " interrupted file rename(s)");
      }
    }
    for (RenameIntent i : DirectoryMove.finishAtOrUnder(this, renamer, FsPath.ROOT,
        nothingRuns ? DirectoryMove.Live.FINISH : DirectoryMove.Live.LEAVE)) {
      done.add(i.toString());
    }
    return done;
  }

  /** The answer to a mutation that found what it read changed, and applied nothing. */
  static IOException lostRace(String what, IOException e) {
    return new IOException(what + " conflicted with a concurrent change and was not applied;"
        + " retry", e);
  }

  // ---------------------------------------------------------------- block locations

  /** The stripes covering {@code [start, start+len)} and where each one is stored. */
  public List<BlockInfo> locate(FileInfo file, long start, long len) throws IOException {
    List<BlockInfo> blocks = new ArrayList<>();
    FileRecord record = file.record();
    // Not min(length, start + len): callers pass Long.MAX_VALUE for "to the end".
    long end = start + Math.min(len, Math.max(0, file.length() - start));
    if (file.isDirectory() || start < 0 || len < 0 || start >= end && file.length() > 0) {
      return blocks;
    }
    if (record.isInline() || file.length() == 0) {
      blocks.add(new BlockInfo(0, file.length(),
          calls.hostsOf(layout.recordKey(file.path()))));
      return blocks;
    }
    long stripe = record.stripeSize();
    for (long s = start / stripe; s * stripe < end; s++) {
      long offset = s * stripe;
      long length = Math.min(stripe, file.length() - offset);
      blocks.add(new BlockInfo(offset, length, calls.hostsOf(record.stripeKey(layout, s))));
    }
    return blocks;
  }

  // ---------------------------------------------------------------- package internals

  StoreCalls calls() {
    return calls;
  }

  KeyLayout layout() {
    return layout;
  }

  DataLocks locks() {
    return locks;
  }

  PendingDirectories pending() {
    return pending;
  }

  Renamer renamer() {
    return renamer;
  }

  Deleter deleter() {
    return deleter;
  }

  /**
   * Publishes a finished file: the single metadata operation of a create.
   *
   * <p>{@code discardData} removes the writer's data blobs; it runs only while no record
   * can name them: on a failure before the put, when the put is refused because the name
   * is taken, or when it is refused for want of space and the name, read back, does not
   * hold this file (a refusal may come after the record was written: RADOS's index). A
   * put that fails otherwise may still have been applied (a timeout after the OSD or the
   * Týr server wrote it), so the record is read back: if it is this file's,
   * the file is published and this returns normally. If not, or if the read-back fails
   * too, the failure is thrown and the data is left to the {@link OrphanSweeper}, which
   * keeps it if a record names it after all: the name not holding the record does not
   * prove the put failed, since a rename may have moved it away meanwhile.
   *
   * <p>{@code renewWriterLock} renews the writer's own lease once more before any put that
   * may follow a wait: after waiting for the replaced file's lock (without transactions),
   * and on every attempt after the first (the wait may have ended with the name changed or
   * deleted), so that a sweeper never takes the data of a writer that waited past its
   * lease, or the writer learns it did and publishes nothing.
   *
   * <p>An overwrite replaces only the record it read (a put conditional on its version),
   * so the data it then removes is that of the file it replaced, never of one renamed
   * away meanwhile; a name changed in between is read again. Removing that data is
   * cleanup after the publication, as in S3A and the GCS connector: a failure there is
   * logged, not thrown, because the caller's file is durable and readable; the old blobs
   * are orphans for the sweeper.
   */
  void commitFile(FsPath path, FileRecord record, boolean overwrite, Runnable discardData,
      Renewal renewWriterLock) throws IOException {
    String key = layout.recordKey(path);
    ByteBuffer encoded;
    try {
      encoded = record.encode();
    } catch (RuntimeException e) {
      discardData.run();
      throw e;
    }
    Optional<VersionedRecord> replaced;
    DataLocks.Lock nameLock = null; // without transactions: the replaced file's lock
    FileRecord carrying = null; // the record as put, with the replaced one's keys as dues
    try {
      for (int attempt = 1; ; attempt++) {
        Optional<VersionedRecord> old;
        ByteBuffer put = encoded;
        try {
          old = overwrite ? readRecord(key, false) : Optional.empty();
          carrying = null;
          if (old.isPresent() && old.get().record().isMapped()) {
            // The replaced file borrows other ids' keys (issue 16), which are ADOPTED: no
            // sweep takes them, so a cleanup cut after the put would leave them with no
            // record to find them. Its keys go into this record as cleanup dues (DESIGN
            // §2.3 step 7), dropped again once the cleanup is done.
            carrying = record.withStripes(record.map(),
                TakeoverCommit.duesFor(old.get().record(), record));
            put = carrying.encode();
          }
          // The writer renewed its lease right before calling this; a later attempt may
          // follow a long wait (below, for the replaced file's lock, which ended with the
          // name changed), so it renews again before its put.
          boolean waited = attempt > 1;
          if (old.isPresent() && locksNames(old.get())) {
            DataLocks.Held taken = locks.takeForReplace(key, old.get(), path,
                locks.forWriter());
            if (taken.changed()) {
              if (attempt < RACE_ATTEMPTS) {
                continue; // the name changed after it was read: replace what is there now
              }
              throw lostRace("publish " + path, new TransactionConflictException(
                  path + " kept changing while this writer tried to replace it"));
            }
            nameLock = taken.lock();
            waited = true;
          }
          if (waited) {
            // Taking the lock may have waited, past the writer's own lease: the lease is
            // renewed again (conditionally: it fails if a sweeper took the data), so that
            // the last renewal still comes right before the put. Before, only the attempt
            // that took the lock renewed: one whose wait ended with the name deleted
            // meanwhile went on to put its record, unrenewed, over data a sweeper had
            // deleted while it waited (the soak's data loss, seed 5151810870002).
            renewWriterLock.renew();
          }
        } catch (IOException | RuntimeException e) {
          discardData.run();
          throw e;
        }
        try {
          if (old.isPresent()) {
            calls.putIfVersion(key, put.duplicate(), old.get().version());
          } else {
            calls.put(key, put.duplicate(), PutMode.CREATE);
          }
          replaced = old;
          break;
        } catch (BlobAlreadyExistsException | TransactionConflictException e) {
          if (nameLock != null) {
            locks.release(nameLock, key); // a taken-over adoption may have to stay (S1)
            nameLock = null;
          }
          if (e instanceof BlobAlreadyExistsException && attempt < RACE_ATTEMPTS
              && removedDeadIncomingQuietly(key, e)) {
            continue; // a dead rename's invisible record held the name
          }
          if (overwrite && attempt < RACE_ATTEMPTS) {
            continue; // the name changed after it was read: replace what is there now
          }
          discardData.run();
          if (e instanceof BlobAlreadyExistsException && !overwrite) {
            throw new FileAlreadyExistsException(path.toString(), null,
                "created by another writer while this one was open");
          }
          throw lostRace("publish " + path, e);
        } catch (StoreFullException e) {
          // Refused for want of space. That does not prove nothing was applied: RADOS with
          // the name index writes the record object and then the index entry, and a full
          // flag set between the two refuses the second after the record exists (readers
          // already see it). So the name is read back first: this file's record there is
          // a publication. Otherwise the data goes now, rather than filling the pool
          // until a sweep: no rename can have moved the record away meanwhile, since
          // renaming a file takes its lock, which this writer holds (renewed just before
          // the put).
          if (publishedDespite(path, key, record, e)) {
            replaced = old;
            break;
          }
          if (nameLock != null) {
            locks.release(nameLock, key); // a taken-over adoption may have to stay (S1)
            nameLock = null;
          }
          discardData.run();
          throw e;
        } catch (IOException | RuntimeException e) {
          confirmPublished(path, key, record, e);
          replaced = old;
          break;
        }
      }
      if (replaced.isPresent() && !replaced.get().record().fileId().equals(record.fileId())) {
        try {
          if (deleteDataUnder(replaced.get().record(), nameLock) && carrying != null) {
            dropDues(key, record, encoded, renewWriterLock);
          }
        } catch (IOException | RuntimeException e) {
          LOG.log(System.Logger.Level.WARNING, "published " + path + ", but removing the data"
              + " of the file it replaced failed; the orphan sweeper will remove it", e);
        }
      }
    } finally {
      if (nameLock != null) {
        locks.release(nameLock, key); // a taken-over adoption may have to stay (S1)
      }
    }
  }

  /** The commit of a {@link #createVersion} writer: {@link TakeoverCommit}. */
  void commitVersion(FsPath path, FileRecord record, String baseId, Runnable discardData,
      Renewal renewWriterLock) throws IOException {
    takeovers.commit(path, record, baseId, discardData, renewWriterLock);
  }

  /**
   * Puts {@code record} ({@code encoded}, without cleanup dues) over the same version
   * carrying dues, once its cleanup is done: only over that version as its writer put it,
   * with no rename's mark (a conflict or a skip leaves the dues, which are harmless: each
   * names keys no record names). The put does not return the version it made, so "as
   * put" is: the version read now, while {@code writer}'s lock is still as the writer
   * left it, read AFTER the name (review must-fix 1). For a writer that holds a lock,
   * every other change of the record takes that lock first (a delete, which fences then
   * writes its will, a rename, a new version), so a change before the name's read fails
   * the lock's check, and one after it fails the put. A writer without a lock
   * ({@code writer.held()} is always true) has no such check: a delete's fence put before
   * the name's read is not seen, and the put goes over the fenced version (the delete's
   * conditional removal of the name then fails). That case is safe only through
   * {@link DataLocks#settleWill}'s file-id rule: a will whose name still holds its file,
   * at any version, is void, so no live record's data is deleted (the will's second
   * review, should-fix 3). Before, it put over whatever version
   * was there: over a delete's fence, after which the delete's will took the live record
   * for deleted.
   */
  void dropDues(String key, FileRecord record, ByteBuffer encoded, Renewal writer)
      throws IOException {
    Optional<VersionedRecord> now = readStored(key, false);
    if (now.isPresent() && now.get().record().mark() == FileRecord.Mark.NONE
        && now.get().record().fileId().equals(record.fileId())
        && !now.get().record().dues().isEmpty() && writer.held()) {
      try {
        calls.putIfVersion(key, encoded.duplicate(), now.get().version());
      } catch (TransactionConflictException changed) {
        // renamed or replaced meanwhile: the dues stay with the record
      }
    }
  }

  /** {@link #removedDeadIncoming}, a failure of it added to {@code cause}: false then. */
  private boolean removedDeadIncomingQuietly(String key, IOException cause) {
    try {
      return removedDeadIncoming(key);
    } catch (IOException | RuntimeException e) {
      cause.addSuppressed(e);
      return false;
    }
  }

  /** A writer's renewal of the lock on its data ({@link FileWriter}). */
  interface Renewal {
    void renew() throws IOException;

    /**
     * Whether the writer's lock is still as it last took or renewed it (nobody took it
     * over since); true for a writer that holds none.
     */
    default boolean held() throws IOException {
      return true;
    }
  }

  /**
   * Whether the record under {@code key} is {@code ours} after its put was refused for want
   * of space. If reading it back fails, the outcome is unknown: the refusal is thrown with
   * the read's failure suppressed, and the data is left to the {@link OrphanSweeper}.
   */
  boolean publishedDespite(FsPath path, String key, FileRecord ours,
      StoreFullException refusal) throws StoreFullException {
    try {
      Optional<VersionedRecord> found = readRecord(key, false);
      boolean published = found.isPresent() && found.get().record().fileId().equals(ours.fileId());
      if (published) {
        LOG.log(System.Logger.Level.INFO, "the put of " + path + "'s record was refused for"
            + " want of space after it was applied: the file is published", refusal);
      }
      return published;
    } catch (IOException | RuntimeException readFailure) {
      refusal.addSuppressed(readFailure);
      throw refusal;
    }
  }

  /** Returns if the record under {@code key} is {@code ours}, else throws. */
  void confirmPublished(FsPath path, String key, FileRecord ours, Exception putFailure)
      throws IOException {
    Optional<VersionedRecord> found;
    try {
      found = readRecord(key, false);
    } catch (IOException | RuntimeException e) {
      putFailure.addSuppressed(e);
      throw new IOException(path + " may or may not be published: the put of its record"
          + " failed and reading the record back failed too; the orphan sweeper removes"
          + " its data unless a record names it", putFailure);
    }
    if (found.isEmpty() || !found.get().record().fileId().equals(ours.fileId())) {
      throw new IOException(path + " may not have been published: the put of its record failed"
          + " and the name does not hold this file now (a put that timed out may still apply);"
          + " its data is left to the orphan sweeper", putFailure);
    }
  }

  /**
   * Whether a delete or overwrite of the name that holds {@code read} must first see to
   * its file's lock ({@link DataLocks#takeForReplace}): without transactions, for a file.
   */
  boolean locksNames(VersionedRecord read) {
    return !calls.transactional() && read.record().kind() == FileRecord.Kind.FILE;
  }

  /**
   * Removes the data of a file whose name a delete or overwrite just removed, if the
   * file's lock it took ({@code held}; null: none was needed) is still its own. A client
   * that stalled past the lock's lease may have been overtaken by a rename of the file that
   * put a copy and died: that copy names the data now, and only the sweeper, which checks
   * every name, may decide it is unnamed. So the data is then left to it. Returns whether
   * the data was removed.
   */
  boolean deleteDataUnder(FileRecord record, DataLocks.Lock held) throws IOException {
    if (held != null && !locks.stillHeld(held)) {
      LOG.log(System.Logger.Level.INFO, "the lock on " + held.key() + " was taken over"
          + " while its name was removed: its data is left to the orphan sweeper");
      return false;
    }
    deleteData(record);
    return true;
  }

  /** Removes the data blobs of a file whose record is gone; missing ones are fine. */
  void deleteData(FileRecord record) throws IOException {
    // Every key the record names (its own or borrowed through its map, BFS3), then the
    // keys its cleanup dues list: a replace cut before its cleanup left them to whoever
    // removes the record next (DESIGN §2.3). A key in both is deleted once. Then the
    // ADOPTED locks of those other ids, after their keys (I2: the lock stays while any key
    // of the id may be named; this record was the only one to name them, I1). Streamed in
    // that order, with no set of keys (a due may list up to 2^32 stripes, review MF2): a
    // due's key is skipped if the map named it (the record's own id is never a due's, and
    // due ids are distinct: decode refuses both).
    for (long s = 0; s < record.stripeCount(); s++) {
      calls.delete(record.stripeKey(layout, s));
    }
    for (FileRecord.Due due : record.dues()) {
      for (long s = 0; s < due.stripeCount(); s++) {
        if (s >= record.stripeCount() || !due.fileId().equals(record.map().idOf(s))) {
          calls.delete(layout.dataKey(due.fileId(), s));
        }
      }
    }
    Set<String> others = new LinkedHashSet<>(record.map().ids());
    record.dues().forEach(d -> others.add(d.fileId()));
    for (String id : others) {
      locks.releaseAdopted(id);
    }
  }

  /**
   * Reads a name's record, or only its header, with the version it was read at, as readers
   * see it: empty if no blob is there. A file rename's records ({@link Renamer}) read as
   * the source's mark says, the mark taken off: a source {@code MOVING} is there, one
   * {@code MOVED} is gone; a destination {@code INCOMING} is there only once its source is
   * {@code MOVED} to it (a second read, paid only while a rename is under way or was cut
   * off). A moved source is rolled forward on the way ({@link #removeMovedSource}), so
   * that a name can be made there again; nothing else is: an incoming record or a moving
   * source is the rename's, or its settler's, to undo.
   */
  Optional<VersionedRecord> readRecord(String key, boolean withInline) throws IOException {
    for (int attempt = 1; ; attempt++) {
      Optional<VersionedRecord> stored = readStored(key, withInline);
      if (stored.isEmpty()) {
        return stored;
      }
      FileRecord r = stored.get().record();
      boolean seen = switch (r.mark()) {
        case NONE, MOVING, REPLACING -> true;
        case MOVED -> {
          removeMovedSource(key, stored.get());
          yield false;
        }
        case INCOMING -> readStored(r.moveKey(), false).filter(src -> src.record()
            .is(FileRecord.Mark.MOVED, key, r.fileId(), r.moveToken())).isPresent();
      };
      if (!seen && r.mark() == FileRecord.Mark.INCOMING
          && !incomingUnchanged(key, stored.get().version())) {
        // The move may have committed and been finished (the destination made plain, the
        // source removed) between the two reads: the source's state says nothing then.
        if (attempt < RACE_ATTEMPTS) {
          continue;
        }
        throw lostRace("read " + key, new TransactionConflictException(
            key + " kept changing while a rename to it was read"));
      }
      return seen ? Optional.of(new VersionedRecord(r.unmarked(), stored.get().version()))
          : Optional.empty();
    }
  }

  /**
   * Removes the record at {@code key} if it is the incoming record of a file rename that
   * can never commit, so that a create or a rename to that name can go on. Readers take
   * such a record for absent, but its object takes the name: left by a mover that was
   * fenced and died before its own rollback, it blocked the name for good (third review,
   * should-fix 2). The record is read before its source: its move's mark applied before
   * the record was created, so a source read after it that carries neither that mark nor
   * the commit has left the marked version for good (versions never repeat), and the
   * move is dead. Removed conditionally on the version read. Returns whether it was (then
   * the caller tries its create again); false while the move may still commit.
   */
  boolean removedDeadIncoming(String key) throws IOException {
    Optional<VersionedRecord> there = readStored(key, false);
    if (there.isEmpty() || there.get().record().mark() != FileRecord.Mark.INCOMING) {
      return false;
    }
    FileRecord r = there.get().record();
    Optional<VersionedRecord> source = readStored(r.moveKey(), false);
    if (source.isPresent()
        && (source.get().record().is(FileRecord.Mark.MOVING, key, r.fileId(), r.moveToken())
        || source.get().record().is(FileRecord.Mark.MOVED, key, r.fileId(), r.moveToken()))) {
      return false; // under way, or committed: the record is, or is about to be, the name
    }
    try {
      calls.deleteIfVersion(key, there.get().version());
    } catch (TransactionConflictException changed) {
      // changed meanwhile: the caller's create meets what is there now
    }
    return true;
  }

  /**
   * Whether a destination read incoming at {@code version} still is, after its source was
   * read not moved to it. Every roll-forward makes the destination plain before it removes
   * the source, so an incoming record unchanged on both sides of the source's read means
   * that the move had not committed when the source was read: the name is not there yet.
   */
  private boolean incomingUnchanged(String key, long version) throws IOException {
    try {
      return calls.readWithVersion(key, 1).version() == version;
    } catch (FileNotFoundException e) {
      return false;
    }
  }

  /**
   * Rolls a committed move forward, as a reader meets its source: the commit is final, so
   * anyone may finish it ({@link CommittedMove}). So a rename cut off after its commit does
   * not leave its source's name taken until a settler comes.
   */
  private void removeMovedSource(String key, VersionedRecord moved) {
    try {
      CommittedMove.finish(this, key, moved, Optional.empty());
    } catch (IOException e) {
      // changed meanwhile, or not now (a full store): hidden all the same
    }
  }

  /** A name's record as stored, a rename's mark included ({@link #readRecord}). */
  Optional<VersionedRecord> readStored(String key, boolean withInline) throws IOException {
    int first = FileRecord.MAX_HEADER + (withInline ? options.inlineThreshold() : 0);
    while (true) {
      VersionedBytes head;
      try {
        head = calls.readWithVersion(key, first);
      } catch (FileNotFoundException e) {
        return Optional.empty();
      }
      byte[] bytes = head.bytes();
      int n = bytes.length;
      if (n == 0) {
        throw new CorruptRecordException(key, "empty record");
      }
      int header = FileRecord.storedHeaderSize(bytes, n);
      if (header > 0 && n >= first && n < header + (withInline ? options.inlineThreshold() : 0)) {
        // A rename's mark or a stripe map (BFS3) made the header longer than the first
        // read: read enough of it. A BFS3 record is never decoded from part of its header.
        first = header + (withInline ? options.inlineThreshold() : 0);
        continue;
      }
      FileRecord decoded = FileRecord.decode(key, bytes, n, false);
      if (!withInline || !decoded.isInline()) {
        return Optional.of(new VersionedRecord(decoded, head.version()));
      }
      int total = decoded.headerSize() + (int) decoded.length(); // the header bounds the length
      if (total <= n || n < first) { // a short read is the whole record: decode checks it
        return Optional.of(new VersionedRecord(FileRecord.decode(key, bytes, n, true),
            head.version()));
      }
      VersionedBytes whole;
      try {
        whole = calls.readWithVersion(key, total);
      } catch (FileNotFoundException e) {
        return Optional.empty();
      }
      if (whole.version() != head.version()) {
        continue; // replaced between the two reads: its header may not fit these bytes
      }
      if (whole.bytes().length < total) {
        throw new CorruptRecordException(key, "shorter than the " + total
            + " bytes its header gives");
      }
      return Optional.of(new VersionedRecord(FileRecord.decode(key, whole.bytes(), total, true),
          whole.version()));
    }
  }

  /** Reads the headers of many records at once: the store may overlap the reads. */
  List<Optional<FileRecord>> readHeaders(List<String> keys) throws IOException {
    List<CompletableFuture<Integer>> reads = new ArrayList<>(keys.size());
    List<ByteBuffer> bufs = new ArrayList<>(keys.size());
    for (String key : keys) {
      ByteBuffer buf = ByteBuffer.allocate(FileRecord.MAX_HEADER);
      bufs.add(buf);
      reads.add(calls.read(key, 0, buf));
    }
    List<Optional<FileRecord>> out = new ArrayList<>(keys.size());
    for (int i = 0; i < keys.size(); i++) {
      int n;
      try {
        n = Futures.await(reads.get(i));
      } catch (BlobNotFoundException e) {
        out.add(Optional.empty()); // removed since the scan
        continue;
      }
      if (n < 0) {
        throw new CorruptRecordException(keys.get(i), "empty record");
      }
      byte[] head = bufs.get(i).array();
      if (FileRecord.isMarked(head, n) || FileRecord.storedHeaderSize(head, n) > n) {
        // A file rename's source: listed only while its move has not committed. Or a
        // header longer than the read (a long stripe map): read whole, never decoded
        // without its map.
        out.add(readRecord(keys.get(i), false).map(VersionedRecord::record));
        continue;
      }
      out.add(Optional.of(FileRecord.decode(keys.get(i), bufs.get(i).array(), n, false)));
    }
    return out;
  }

  List<String> scanAll(String prefix) throws IOException {
    return scanKeys(prefix).drain();
  }

  /**
   * The keys under {@code prefix}, one scan page at a time, so that no more than a page is
   * held. Keys removed behind the scan do not disturb it: the next page starts after the
   * last key returned.
   */
  EntryIterator<String> scanKeys(String prefix) {
    return new EntryIterator<>() {
      private List<String> page = List.of();
      private int next;
      private String cursor;
      private boolean started;

      @Override
      public boolean hasNext() throws IOException {
        while (next == page.size()) {
          if (started && cursor == null) {
            return false;
          }
          ScanPage p = calls.scan(prefix, cursor, options.scanPageSize());
          started = true;
          page = p.keys();
          next = 0;
          cursor = p.nextCursor();
        }
        return true;
      }

      @Override
      public String next() throws IOException {
        if (!hasNext()) {
          throw new NoSuchElementException();
        }
        return page.get(next++);
      }
    };
  }

  /** With markers kept, an emptied directory stays visible, as in HDFS. */
  void keepVisible(FsPath dir) throws IOException {
    if (options.keepDirectoryMarkers() && dir != null && !dir.isRoot()
        && !isDirectory(dir)) {
      putMarker(dir);
    }
  }

  private void putMarker(FsPath dir) throws IOException {
    calls.put(layout.dirPrefix(dir), FileRecord.directory(System.currentTimeMillis()).encode(),
        PutMode.OVERWRITE);
  }

  private static String newFileId() {
    UUID id = UUID.randomUUID();
    return String.format("%016x%016x", id.getMostSignificantBits(),
        id.getLeastSignificantBits());
  }
}
