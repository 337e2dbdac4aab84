package io.blobfs.namespace;

import io.blobfs.store.BlobMutation;
import io.blobfs.store.PutMode;
import io.blobfs.store.TransactionConflictException;
import java.io.FileNotFoundException;
import java.io.IOException;
import java.nio.file.NotDirectoryException;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

/**
 * A file rename that replaces an existing file at its destination, as POSIX rename(2)
 * and Hadoop's {@code rename(src, dst, OVERWRITE)} do, without a moment in which the
 * destination is missing and without ever removing a file other than the one the caller
 * probed there ({@link TargetChangedException} otherwise, and nothing changes).
 *
 * <ul>
 *   <li>With transactions, one commit: the source's record put over the destination's
 *       (conditional on the destination's version, the probed file), the source removed
 *       (conditional on its version), the source's data lock checked as a plain rename
 *       does. Readers see the old file or the new one, never none.
 *   <li>Without transactions, the rename's order that never loses data: under the locks
 *       of both files (taken in file-id order, so that two renames over each other wait
 *       instead of deadlocking), the source's record is put over the destination's
 *       conditional on the probed version, then the source removed. The source's lock
 *       records the move, so a crash between the two steps is rolled forward by the next
 *       client that takes it ({@link MoveSettler}): both names hold one file id, exactly
 *       the state a cut-off plain rename leaves. A step that loses a race puts the
 *       replaced record back. Readers on other clients see the old or the new file at the
 *       destination, never none; for a moment both names may hold the new one.
 * </ul>
 *
 * The replaced file's data is removed after the commit, as an overwrite removes the data
 * of the file it replaced; a failure there leaves orphans for the sweeper.
 */
final class Replacer {
  private static final System.Logger LOG = System.getLogger(Replacer.class.getName());
  private final BlobNamespace ns;

  Replacer(BlobNamespace ns) {
    this.ns = ns;
  }

  /** {@link BlobNamespace#renameOver}. */
  void renameOver(FsPath src, FileInfo target) throws IOException {
    FsPath dst = target.path();
    ns.layout().checkPath(src);
    ns.layout().checkPath(dst);
    if (!target.isFile()) {
      throw new IllegalArgumentException("not a file: " + dst);
    }
    if (src.equals(dst)) {
      return;
    }
    String from = ns.layout().recordKey(src);
    String to = ns.layout().recordKey(dst);
    Optional<VersionedRecord> found = ns.readRecord(from, true);
    if (found.isEmpty()) {
      if (ns.isDirectory(src)) {
        throw new NotDirectoryException(src + " is a directory and " + dst + " a file");
      }
      throw new FileNotFoundException("No such file: " + src);
    }
    VersionedRecord read = found.get();
    String targetId = target.record().fileId();
    if (read.record().fileId().equals(targetId)) {
      // One file under both names: a plain rename cut off between its copy and the
      // source's removal. A plain rename of it settles that (and is then done).
      if (!ns.renamer().rename(src, dst)) {
        // Nothing was cut off to settle: two names on one file, which no retry changes.
        throw new TwoNamesOneFileException(src + " and " + dst + " both hold one file ("
            + targetId + ") and no interrupted rename of it is recorded; nothing was changed."
            + " Run SweepOrphans -finish-renames, then check both names: deleting either"
            + " removes the data of both");
      }
      return;
    }
    VersionedRecord old = readTarget(to, targetId, dst);
    DataLocks.Lock targetLock = null;
    if (ns.calls().transactional()) {
      commitReplace(from, to, read, old, src, dst);
    } else {
      for (int attempt = 1; ; attempt++) {
        Locked locked = replaceLocked(from, to, read, old, src, dst,
            attempt < BlobNamespace.RACE_ATTEMPTS);
        if (locked.rewritten() == null) {
          targetLock = locked.targetLock();
          break;
        }
        read = locked.rewritten(); // under a lock that records this version, again
      }
    }
    try {
      ns.deleteDataUnder(old.record(), targetLock);
    } catch (IOException | RuntimeException e) {
      LOG.log(System.Logger.Level.WARNING, "renamed " + src + " over " + dst + ", but removing"
          + " the data of the file it replaced failed; the orphan sweeper will remove it", e);
    } finally {
      if (targetLock != null) {
        ns.locks().release(targetLock);
      }
    }
  }

  /** The destination's record if it still holds the probed file, else the typed refusal. */
  private VersionedRecord readTarget(String to, String targetId, FsPath dst)
      throws IOException {
    // Whole (an inline file's bytes too): a failed step puts this record back.
    Optional<VersionedRecord> now = ns.readRecord(to, true);
    if (now.isEmpty() || !now.get().record().fileId().equals(targetId)) {
      throw changed(dst);
    }
    return now.get();
  }

  private static TargetChangedException changed(FsPath dst) {
    return new TargetChangedException(dst + " no longer holds the file the rename was to"
        + " replace (written, replaced or removed meanwhile); nothing was changed");
  }

  private void commitReplace(String from, String to, VersionedRecord read, VersionedRecord old,
      FsPath src, FsPath dst) throws IOException {
    for (int attempt = 1; ; attempt++) {
      List<BlobMutation> moves = new ArrayList<>(ns.renamer().moveMutations(from, to, read));
      moves.set(0, new BlobMutation.Put(to, read.record().encode(), PutMode.OVERWRITE));
      moves.add(1, new BlobMutation.Check(to, old.version()));
      try {
        ns.calls().commit(moves);
        return;
      } catch (TransactionConflictException e) {
        Optional<VersionedRecord> now = ns.readRecord(to, false);
        if (now.isEmpty() || now.get().version() != old.version()) {
          throw changed(dst);
        }
        Optional<VersionedRecord> source = ns.readRecord(from, false);
        if (attempt == BlobNamespace.RACE_ATTEMPTS || source.isEmpty()
            || source.get().version() != read.version()) {
          // Only a change of the data lock alone is retried, as a plain rename does.
          throw BlobNamespace.lostRace("rename " + src + " over " + dst, e);
        }
      }
    }
  }

  /**
   * Without transactions: returns the target's lock, still held (null for a file kept in
   * its record, which has no shared data and takes none), for the caller to remove its
   * data under and release.
   */
  private Locked replaceLocked(String from, String to, VersionedRecord read,
      VersionedRecord old, FsPath src, FsPath dst, boolean mayRetry) throws IOException {
    String srcId = read.record().fileId();
    DataLocks.Move move = new DataLocks.Move(from, to, read.version());
    DataLocks.Lock srcLock = null;
    DataLocks.Lock targetLock = null;
    boolean targetFirst = old.record().fileId().compareTo(srcId) < 0;
    try {
      if (!targetFirst) {
        srcLock = ns.locks().takeForRename(srcId, src, move);
      }
      DataLocks.Held held = ns.locks().takeForReplace(to, old, dst);
      if (held.changed()) {
        throw changed(dst);
      }
      targetLock = held.lock();
      if (targetFirst) {
        srcLock = ns.locks().takeForRename(srcId, src, move);
      }
      // Both taken (which may have waited): the names as they are now are final.
      Optional<VersionedRecord> source = ns.readRecord(from, true);
      if (source.isEmpty()) {
        throw new FileNotFoundException("renamed away meanwhile: " + src);
      }
      if (source.get().version() != read.version()) {
        // Settling a rename of it that was cut off may have rewritten it unchanged (a
        // settler fences a mover that had not marked it, MoveSettler): the same file (a
        // rewrite gets a fresh id) is tried again under a lock recording its new version,
        // which a settler of this rename checks before rolling it forward.
        if (mayRetry && source.get().record().fileId().equals(srcId)
            && source.get().record().mark() == FileRecord.Mark.NONE) {
          return new Locked(null, source.get());
        }
        throw BlobNamespace.lostRace("rename " + src + " over " + dst,
            new TransactionConflictException(src + " changed after it was read"));
      }
      readTarget(to, old.record().fileId(), dst); // an inline target takes no lock
      putOver(from, to, read, old, src, dst, srcLock, targetLock);
      DataLocks.Lock done = targetLock;
      targetLock = null; // handed to the caller
      return new Locked(done, null);
    } finally {
      if (srcLock != null) {
        ns.locks().release(srcLock);
      }
      if (targetLock != null) {
        ns.locks().release(targetLock);
      }
    }
  }

  /** The target's lock, still held; or, nothing held, the source as rewritten since read. */
  private record Locked(DataLocks.Lock targetLock, VersionedRecord rewritten) {}

  /**
   * The two steps, as {@link Renamer}'s move but with the destination's record replaced
   * instead of created, and on failure the replaced record put back instead of the copy
   * removed. An outcome that cannot be read back is reported with both names.
   */
  private void putOver(String from, String to, VersionedRecord read, VersionedRecord old,
      FsPath src, FsPath dst, DataLocks.Lock srcLock, DataLocks.Lock targetLock)
      throws IOException {
    try {
      ns.calls().putIfVersion(to, read.record().encode(), old.version());
    } catch (TransactionConflictException e) {
      throw changed(dst);
    } catch (IOException e) {
      putBack(to, read, old, src, dst, e); // it may have applied before it failed
      throw new IOException("rename " + src + " over " + dst + " failed and changed nothing", e);
    }
    if (!ns.locks().stillHeld(srcLock)) {
      settleLostLock(from, to, read, old, src, dst, srcLock, targetLock);
      return;
    }
    try {
      ns.calls().deleteIfVersion(from, read.version());
    } catch (TransactionConflictException lost) {
      if (!ns.locks().stillHeld(srcLock)) {
        settleLostLock(from, to, read, old, src, dst, srcLock, targetLock);
        return;
      }
      putBack(to, read, old, src, dst, lost);
      throw BlobNamespace.lostRace("rename " + src + " over " + dst, lost);
    } catch (IOException unknown) {
      Optional<VersionedRecord> now;
      try {
        now = ns.readRecord(from, false);
      } catch (IOException e) {
        unknown.addSuppressed(e);
        throw Renamer.bothNamed(src, dst, unknown);
      }
      if (now.isEmpty()) {
        return; // the delete applied
      }
      if (now.get().version() == read.version()) {
        putBack(to, read, old, src, dst, unknown);
        throw new IOException("rename " + src + " over " + dst + " failed and changed nothing",
            unknown);
      }
      throw Renamer.bothNamed(src, dst, unknown);
    }
  }

  /**
   * The source's lock was taken over after the put (this rename stalled past its lease):
   * the plain rename's rules decide under the lock taken again. If they take the copy
   * back, no name holds the replaced file until it is put back, and the target's lock,
   * with the same lease, may have lapsed too: a sweeper could then have taken it and
   * removed the data. So the replaced record goes back only while this rename still holds
   * the target's lock (none for a file kept in its record) and every data blob is there;
   * otherwise, or if the put-back is refused, the loss is reported as such.
   */
  private void settleLostLock(String from, String to, VersionedRecord read, VersionedRecord old,
      FsPath src, FsPath dst, DataLocks.Lock lost, DataLocks.Lock targetLock)
      throws IOException {
    try {
      ns.renamer().afterLostLock(from, to, read, src, dst, lost);
    } catch (IOException e) {
      String why;
      try {
        why = whyNotToPutBack(old, targetLock);
        if (why == null) {
          ns.calls().put(to, old.record().encode(), PutMode.CREATE);
        }
      } catch (IOException | RuntimeException again) {
        e.addSuppressed(again);
        why = "checking or putting it back failed (" + again + ")";
      }
      if (why == null) {
        throw e; // put back: neither name changed
      }
      throw new ReplacedFileLostException("rename " + src + " over " + dst + " outlived its"
          + " locks and failed (see the cause), and the file " + dst + " held ("
          + old.record().fileId() + ") was not put back: " + why + ". " + dst + " no longer"
          + " names it; what is left of its data goes to the orphan sweeper", e);
    }
  }

  /** Why the replaced file must not be put back, or null if it may. */
  private String whyNotToPutBack(VersionedRecord old, DataLocks.Lock targetLock)
      throws IOException {
    if (targetLock != null && !ns.locks().stillHeld(targetLock)) {
      return "its lock (" + targetLock.key() + ") was taken over meanwhile, so its data may"
          + " have been removed";
    }
    if (!ns.renamer().dataWhole(old.record())) {
      return "its data is no longer whole";
    }
    return null;
  }

  /** Puts the replaced record back over this rename's copy if the copy is there. */
  private void putBack(String to, VersionedRecord read, VersionedRecord old, FsPath src,
      FsPath dst, IOException cause) throws IOException {
    try {
      Optional<VersionedRecord> copy = ns.readRecord(to, false);
      if (copy.isPresent() && copy.get().record().fileId().equals(read.record().fileId())) {
        ns.calls().putIfVersion(to, old.record().encode(), copy.get().version());
      }
    } catch (TransactionConflictException replaced) {
      cause.addSuppressed(replaced); // a newer file is there now: not ours to replace
    } catch (IOException e) {
      cause.addSuppressed(e);
      throw Renamer.bothNamed(src, dst, cause);
    }
  }
}
