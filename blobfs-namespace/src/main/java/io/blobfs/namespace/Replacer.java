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
 *   <li>Without transactions, a marked move ({@link MarkedReplace}) under the locks of
 *       both files (taken in file-id order, so that two renames over each other wait
 *       instead of deadlocking): the source marked, then its record put over the
 *       destination's conditionally on the probed version (the commit point), then the
 *       source removed. The source's lock records the move and the replaced version, so
 *       that a crash or a stall at any step is rolled forward or back exactly by the next
 *       client that takes it ({@link MoveSettler}), which fences a stalled mover. Readers
 *       on other clients see the old or the new file at the destination, never none; for
 *       a moment both names may hold the new one.
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
      // One file under both names: a rename of it cut off between its commit and the
      // source's removal. Its lock settles that; rolled forward from src to dst, the
      // rename asked for is done. Only settled, not renamed on: a plain rename would
      // decide again on the settled names and move src to a dst the settling removed,
      // which is not the target this caller was shown (leftover A of issue 14).
      Optional<Boolean> settled = ns.calls().transactional() ? Optional.of(false)
          : ns.renamer().settleBothNames(src, dst, targetId);
      if (settled.orElse(false)) {
        return;
      }
      // The settling may have rolled forward a rename of it over src whose commit was seen
      // (the file at src, dst still marked), which removed dst. The target is then gone,
      // not a second name of the file, so dst is probed again. Before, that was "two
      // names on one file; deleting either removes the data of both" with the file under
      // one name (review of rados-outcome, should 2).
      Optional<FileInfo> nowDst = ns.probe(dst);
      if (nowDst.isEmpty() || !nowDst.get().record().fileId().equals(targetId)) {
        throw changed(dst);
      }
      if (settled.isEmpty()) { // the target as shown, the source changed meanwhile
        throw BlobNamespace.lostRace("rename " + src + " over " + dst,
            new TransactionConflictException(src + " changed after it was read"));
      }
      // Nothing was cut off to settle: two names on one file, which no retry changes.
      throw new TwoNamesOneFileException(src + " and " + dst + " both hold one file ("
          + targetId + ") and no interrupted rename of it is recorded; nothing was changed."
          + " Run SweepOrphans -finish-renames, then check both names: deleting either"
          + " removes the data of both");
    }
    VersionedRecord old = readTarget(to, targetId, dst);
    DataLocks.Lock targetLock = null;
    if (ns.calls().transactional()) {
      commitReplace(from, to, read, old, src, dst);
    } else {
      for (int attempt = 1; ; attempt++) {
        Locked locked = replaceLocked(from, to, read, old, src, dst,
            attempt < BlobNamespace.RACE_ATTEMPTS);
        if (locked.rewritten() == null && locked.target() == null) {
          targetLock = locked.targetLock();
          break;
        }
        // under locks that record these versions, again
        read = locked.rewritten() == null ? read : locked.rewritten();
        old = locked.target() == null ? old : locked.target();
      }
    }
    try {
      ns.deleteDataUnder(old.record(), targetLock);
    } catch (IOException | RuntimeException e) {
      LOG.log(System.Logger.Level.WARNING, "renamed " + src + " over " + dst + ", but removing"
          + " the data of the file it replaced failed; the orphan sweeper will remove it", e);
    } finally {
      if (targetLock != null) {
        ns.locks().release(targetLock, to); // a taken-over adoption may have to stay (S1)
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

  static TargetChangedException changed(FsPath dst) {
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
    DataLocks.Move move = MarkedReplace.move(from, to, read, old);
    DataLocks.Lock srcLock = null;
    DataLocks.Lock targetLock = null;
    MarkedReplace replace = null;
    boolean targetFirst = old.record().fileId().compareTo(srcId) < 0;
    // The first of the two locks is taken holding nothing, so it may wait out a dead
    // holder's lease; the second is bounded, under the first one's lease (DataLocks.Patience).
    DataLocks.Patience second = DataLocks.Patience.BOUNDED;
    try {
      if (!targetFirst) {
        srcLock = takeSource(from, srcId, src, dst, move, DataLocks.Patience.OUTWAIT);
      }
      DataLocks.Held held = ns.locks().takeForReplace(to, old, dst,
          targetFirst ? DataLocks.Patience.OUTWAIT : second);
      if (held.changed()) {
        return retargeted(to, old, dst, mayRetry);
      }
      targetLock = held.lock();
      if (targetFirst) {
        // an inline target takes no lock: the source's is then the only one, taken holding nothing
        srcLock = takeSource(from, srcId, src, dst, move,
            targetLock == null ? DataLocks.Patience.OUTWAIT : second);
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
          return new Locked(null, source.get(), null);
        }
        throw BlobNamespace.lostRace("rename " + src + " over " + dst,
            new TransactionConflictException(src + " changed after it was read"));
      }
      // An inline target takes no lock: read again. The source's lock records the probed
      // version, which the commit is conditional on.
      if (readTarget(to, old.record().fileId(), dst).version() != old.version()) {
        return retargeted(to, old, dst, mayRetry);
      }
      replace = new MarkedReplace(ns, from, to, read, old, src, dst, srcLock);
      try {
        replace.run();
      } catch (MarkedReplace.TargetRewrittenException fenced) {
        return retargeted(to, old, dst, mayRetry); // changed nothing: the same file again
      }
      DataLocks.Lock done = targetLock;
      targetLock = null; // handed to the caller
      return new Locked(done, null, null);
    } finally {
      // A mark this move may have left is settled by the lock's next taker once the lease
      // runs out; released now, nobody would know of it.
      if (srcLock != null && (replace == null || replace.settled())) {
        ns.locks().release(srcLock, from); // a taken-over adoption may have to stay (S1)
      }
      if (targetLock != null) {
        ns.locks().release(targetLock, to);
      }
    }
  }

  /**
   * The source's lock for the marked move. A delete of the source that applied after the
   * caller read it, and whose will could not be carried out ({@link
   * DataLocks.DeletedUnderWill}: its data delete failed; the will stays in the settler's
   * lock for the sweeper), takes no lock: the source is read again and judged as under
   * the lock below (will-land, the will's second review, should-fix 1 for a rename over a
   * file). Gone: FileNotFoundException, as the locked path says. Another file there: a lost
   * race, as the locked path says of a source changed to another file. The same file still
   * there: the delete was not of this name, and the conflict stands. Before, the raw
   * TransactionConflictException reached the caller although nothing was wrong but its
   * source being gone. This call holds no lock and has put no mark yet, so nothing changed.
   */
  private DataLocks.Lock takeSource(String from, String srcId, FsPath src, FsPath dst,
      DataLocks.Move move, DataLocks.Patience patience) throws IOException {
    try {
      return ns.locks().takeForRename(srcId, src, move, patience);
    } catch (DataLocks.DeletedUnderWill deleted) {
      Optional<VersionedRecord> now = ns.readRecord(from, false);
      if (now.isEmpty()) {
        FileNotFoundException gone =
            new FileNotFoundException("renamed away or deleted meanwhile: " + src);
        gone.initCause(deleted);
        throw gone;
      }
      if (now.get().record().fileId().equals(srcId)) {
        throw deleted;
      }
      throw BlobNamespace.lostRace("rename " + src + " over " + dst, deleted);
    }
  }

  /**
   * The target's lock, still held; or, nothing held, the source or the target as rewritten
   * since read, to try again with.
   */
  private record Locked(DataLocks.Lock targetLock, VersionedRecord rewritten,
      VersionedRecord target) {}

  /**
   * The destination changed under the locks. Still the probed file (a settler of a rename
   * over it rewrote it unchanged to fence that rename's commit, {@link MarkedReplace}),
   * it is tried again at its new version; another file there is a changed target.
   */
  private Locked retargeted(String to, VersionedRecord old, FsPath dst, boolean mayRetry)
      throws IOException {
    VersionedRecord now = readTarget(to, old.record().fileId(), dst);
    if (!mayRetry) {
      throw BlobNamespace.lostRace("rename over " + dst, new TransactionConflictException(
          dst + " kept being rewritten while a rename over it was tried"));
    }
    return new Locked(null, null, now);
  }
}
