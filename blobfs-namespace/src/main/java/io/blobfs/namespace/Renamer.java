package io.blobfs.namespace;

import io.blobfs.store.BlobAlreadyExistsException;
import io.blobfs.store.BlobMutation;
import io.blobfs.store.PutMode;
import io.blobfs.store.TransactionConflictException;
import java.io.FileNotFoundException;
import java.io.IOException;
import java.nio.file.FileAlreadyExistsException;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.Optional;

/**
 * Renames without moving data: a file's record is written under the new name and the old
 * one removed; a directory's records likewise, in one transaction where the store has
 * them and the directory fits in one ({@link DirectoryMove} splits a larger one). A record
 * is moved only if the source still holds it when the move applies. A source renamed away
 * or replaced after it was read makes the rename fail with an IOException ("conflicted
 * ... retry") and change nothing: without transactions, the copy already put at the
 * destination is taken back.
 */
final class Renamer {
  private final BlobNamespace ns;

  Renamer(BlobNamespace ns) {
    this.ns = ns;
  }

  /** {@link BlobNamespace#rename}. */
  boolean rename(FsPath src, FsPath dst) throws IOException {
    ns.layout().checkPath(src);
    ns.layout().checkPath(dst);
    if (src.isRoot()) {
      return false;
    }
    Optional<FileInfo> found = ns.probe(src);
    if (found.isEmpty()) {
      // Without transactions a directory rename that was cut off after its last move
      // leaves only its intent: this same rename, retried, finishes it.
      return !ns.calls().transactional() && DirectoryMove.finishExactly(ns, this, src)
          .filter(done -> done.sameAs(src, dst)).isPresent();
    }
    FileInfo srcInfo = found.get();
    if (src.equals(dst)) {
      return srcInfo.isFile();
    }
    if (dst.isAtOrUnder(src)) {
      return false;
    }
    if (srcInfo.isDirectory()) {
      // A rename or delete of this directory or of one below it that was cut off part-way
      // is finished first; if it was this very rename, retried, it is now done (so a retry
      // never nests the rest under the destination).
      boolean retried = false;
      List<RenameIntent> finished = DirectoryMove.finishAtOrUnder(ns, this, src,
          DirectoryMove.Live.REFUSE);
      for (RenameIntent done : finished) {
        retried |= done.sameAs(src, dst);
      }
      if (retried) {
        ns.keepVisible(src.parent());
        return true;
      }
      if (!finished.isEmpty()) {
        found = ns.probe(src);
        if (found.isEmpty()) {
          return false;
        }
        srcInfo = found.get();
      }
    }
    FsPath target = dst;
    Optional<FileInfo> dstInfo = ns.probe(dst);
    if (dstInfo.isPresent()) {
      if (dstInfo.get().isFile()) {
        if (srcInfo.isFile() && !ns.calls().transactional() && dstInfo.get().record().fileId()
            .equals(srcInfo.record().fileId())) {
          // Both names hold one file: this rename was cut off between its copy and the
          // source's removal (or is being: the lock waits for it). The file's lock settles
          // it; if the source is gone then, the rename asked for is done.
          ns.locks().release(ns.locks().takeForRename(srcInfo.record().fileId(), src, null));
          return ns.probe(src).isEmpty();
        }
        return false;
      }
      target = dst.child(src.name());
      ns.layout().checkPath(target);
      if (ns.probe(target).isPresent()) {
        return false;
      }
    } else if (!dst.parent().isRoot() && !dst.parent().equals(src.parent())) {
      Optional<FileInfo> parent = ns.probe(dst.parent());
      if (parent.isPresent() ? parent.get().isFile() : ns.options().keepDirectoryMarkers()) {
        return false;
      }
    }
    if (srcInfo.isFile()) {
      if (!renameFile(src, target)) {
        return false; // the destination was created after the probe above
      }
    } else {
      renameDirectory(src, target);
      ns.pending().rename(src, target);
    }
    ns.keepVisible(src.parent());
    return true;
  }

  /**
   * Moves a file's record; false, changing nothing, if the destination was created
   * between the caller's probe and the move: the answer {@code rename} gives for an
   * existing destination file (Hadoop's contract; before, a lost race, "retry", which
   * no retry would change).
   */
  private boolean renameFile(FsPath src, FsPath dst) throws IOException {
    String from = ns.layout().recordKey(src);
    String to = ns.layout().recordKey(dst);
    VersionedRecord read = ns.readRecord(from, true)
        .orElseThrow(() -> new FileNotFoundException("renamed away meanwhile: " + src));
    if (!ns.calls().transactional()) {
      try {
        if (!moveLocked(from, to, read, src, dst, false, null)) {
          throw new FileNotFoundException("renamed away meanwhile: " + src);
        }
      } catch (FileAlreadyExistsException created) {
        // the exclusive create of the new name failed: nothing was changed, unless that
        // create was this move's own, applied, then reported lost
        return movedAlready(from, to, read);
      }
      return true;
    }
    for (int attempt = 1; ; attempt++) {
      try {
        ns.calls().commit(moveMutations(from, to, read));
        return true;
      } catch (TransactionConflictException e) {
        if (ns.readRecord(to, false).isPresent()) {
          // the new name's exclusive create lost: to another file, nothing was applied; to
          // this move itself, applied by a commit that a retry below then saw conflict
          return movedAlready(from, to, read);
        }
        // Only a change of the data lock alone (a writer releasing it, a sweeper taking
        // it) is retried; a source changed since it was read is the caller's to judge.
        Optional<VersionedRecord> now = ns.readRecord(from, false);
        if (attempt == BlobNamespace.RACE_ATTEMPTS || now.isEmpty()
            || now.get().version() != read.version()) {
          throw BlobNamespace.lostRace("rename " + src + " to " + dst, e);
        }
      }
    }
  }

  /**
   * After the move's exclusive create of {@code to} lost: true if it lost to this very
   * move (its commit applied, and a retry of it saw the conflict): {@code to} holds the
   * file read at {@code from}, and {@code from} is gone. False when {@code to} holds
   * another file: the rename's answer for an existing destination, nothing changed.
   */
  private boolean movedAlready(String from, String to, VersionedRecord read)
      throws IOException {
    Optional<VersionedRecord> there = ns.readRecord(to, false);
    return there.isPresent()
        && Objects.equals(there.get().record().fileId(), read.record().fileId())
        && ns.readRecord(from, false).isEmpty();
  }

  /**
   * The mutations that move one record, as read, from {@code from} to {@code to} in a
   * transaction: the new name created exclusively, the old one deleted only if it still
   * holds what was read, and, for a file with data blobs, only while no orphan sweeper
   * holds them (the sweeper could otherwise miss the record on both names:
   * {@link DataLocks}); an expired sweeper's lock is removed with the move. Every
   * transactional move (a file, each file of a directory, in one transaction or in chunks)
   * is built here.
   */
  List<BlobMutation> moveMutations(String from, String to, VersionedRecord read)
      throws IOException {
    List<BlobMutation> moves = new ArrayList<>(3);
    moves.add(new BlobMutation.Put(to, read.record().encode(), PutMode.CREATE));
    moves.add(new BlobMutation.Delete(from, read.version()));
    if (read.record().stripeCount() > 0) {
      String id = read.record().fileId();
      Optional<DataLocks.Lock> lock = ns.locks().awaitNoSweeper(id, ns.layout().pathOf(from));
      String key = ns.locks().key(id);
      if (lock.isEmpty()) {
        moves.add(new BlobMutation.Check(key, BlobMutation.ABSENT));
      } else if (lock.get().owner() == DataLocks.Owner.SWEEPER) {
        moves.add(new BlobMutation.Delete(key, lock.get().version())); // expired: stand down
      } else {
        moves.add(new BlobMutation.Check(key, lock.get().version()));
      }
    }
    return moves;
  }

  /**
   * Without transactions, moves the record at {@code from} while holding its file's lock
   * ({@link DataLocks#takeForRename}), which records the move, read again under the lock,
   * as a {@link MarkedMove}: invisible at the destination until its conditional commit,
   * which a settler of the lock can fence. Returns false if the source is gone by then; if
   * it changed, a directory's move ({@code followChanges}) moves what is there now, a
   * file's rename reports the lost race. A directory's move that lost a race (fenced by a
   * settler after it stalled past its lease, or the source changed under its mark) is
   * rolled back by {@link MarkedMove} and tried again on the source as it is now, so one
   * stall does not fail the whole directory rename.
   *
   * <p>Before, a directory's moves were two steps (the copy put as a plain record, then
   * the source deleted): a mover fenced before its copy put it all the same, visible, and a
   * client could rename or delete it before the mover noticed; the file was then left with
   * two names, or a name without data (fifth review, MF1).
   *
   * <p>A directory operation's {@code running} intent is checked once the lock is taken
   * (which may have waited): an operation that outlived its lease stops before acting.
   */
  boolean moveLocked(String from, String to, VersionedRecord read, FsPath src,
      FsPath dst, boolean followChanges, DirectoryMove.Running running) throws IOException {
    if (read.record().kind() != FileRecord.Kind.FILE) {
      moveUnlocked(from, to, read, src, dst); // a directory marker: no data, no lock
      return true;
    }
    for (int attempt = 1; ; attempt++) {
      DataLocks.Lock lock = ns.locks().takeForRename(read.record().fileId(), src,
          new DataLocks.Move(from, to, read.version()));
      boolean keep = false;
      try {
        if (running != null) {
          running.keepAlive();
        }
        Optional<VersionedRecord> now = ns.readRecord(from, true);
        if (now.isEmpty()) {
          return false;
        }
        // Settling a rename of it that was cut off may have taken its mark back: the same
        // file (a rewrite gets a fresh id), still to be moved.
        boolean same = now.get().version() == read.version() || !followChanges
            && now.get().record().fileId().equals(read.record().fileId());
        if (same) {
          MarkedMove move = new MarkedMove(ns, from, to, now.get(), src, dst);
          try {
            move.run();
            return true;
          } catch (FileAlreadyExistsException taken) {
            throw taken;
          } catch (IOException e) {
            if (!followChanges || !move.settled() || attempt == BlobNamespace.RACE_ATTEMPTS
                || !(e.getCause() instanceof TransactionConflictException)) {
              throw e;
            }
            // Rolled back, nothing of it left: the source is read again under a new lock.
            Optional<VersionedRecord> again = ns.readRecord(from, true);
            if (again.isEmpty()) {
              return false;
            }
            read = again.get();
            continue;
          } finally {
            // A mark this move may have left is settled by the lock's next taker, once
            // the lease runs out; released now, nobody would know of it.
            keep = !move.settled();
          }
        }
        if (!followChanges || attempt == BlobNamespace.RACE_ATTEMPTS) {
          throw BlobNamespace.lostRace("rename " + src + " to " + dst,
              new TransactionConflictException(src + " changed after it was read"));
        }
        read = now.get(); // replaced meanwhile: move the new file, under its own lock
      } finally {
        if (!keep) {
          ns.locks().release(lock);
        }
      }
    }
  }

  /**
   * Moves a record that has no data and no lock (a directory's record): the destination
   * created first, then the source deleted if it still holds what was read; if it does
   * not, or a step fails, the copy is taken back before the failure is reported. An
   * outcome that cannot be read back is reported with both names.
   */
  private void moveUnlocked(String from, String to, VersionedRecord read, FsPath src,
      FsPath dst) throws IOException {
    try {
      ns.calls().put(to, read.record().encode(), PutMode.CREATE);
    } catch (BlobAlreadyExistsException e) {
      throw new FileAlreadyExistsException(dst.toString(), null, "created meanwhile");
    } catch (IOException e) {
      takeBack(to, read, src, dst, e); // the put may have applied before it failed
      throw new IOException("rename " + src + " to " + dst + " failed and changed nothing", e);
    }
    try {
      ns.calls().deleteIfVersion(from, read.version());
    } catch (TransactionConflictException lost) {
      takeBack(to, read, src, dst, lost);
      throw BlobNamespace.lostRace("rename " + src + " to " + dst, lost);
    } catch (IOException unknown) {
      Optional<VersionedRecord> now;
      try {
        now = ns.readRecord(from, false);
      } catch (IOException e) {
        unknown.addSuppressed(e);
        throw bothNamed(src, dst, unknown);
      }
      if (now.isEmpty()) {
        return; // the delete applied: the move is complete
      }
      if (now.get().version() == read.version()) {
        takeBack(to, read, src, dst, unknown); // the delete did not apply
        throw new IOException("rename " + src + " to " + dst + " failed and changed nothing",
            unknown);
      }
      throw bothNamed(src, dst, unknown); // changed by someone else: cannot tell whose
    }
  }

  /**
   * A two-step move (a rename over a file, {@link Replacer}; a directory's moves are marked
   * since the fifth review) stalled past its lock's lease after its copy was put, and the
   * lock was taken over. Returns if the move is complete, throws if it changed nothing.
   *
   * <p>The copy cannot simply be taken back: a settler that saw both names rolled the move
   * forward, and the copy is then the file's only name. Its tombstone says so, but only
   * until the next client that takes the lock removes it. Nor can the copy simply stay: if
   * the settler came before the copy landed, the file may have been renamed on or deleted
   * since, and the copy would be a second name on its data, or a name without data. So the
   * rename takes the lock again (settling whatever is pending first), and decides under it,
   * where no other rename, delete or overwrite changes a name of the file: the source still
   * holding the file means nobody else moved it, and the move is finished; otherwise the
   * copy stays only if no other name holds the file and its data is all there. That check
   * scans every name, as the sweeper does: a cost paid only by a rename that outlived its
   * lease.
   */
  void afterLostLock(String from, String to, VersionedRecord read, FsPath src,
      FsPath dst, DataLocks.Lock lost) throws IOException {
    if (ns.locks().settledByOther(lost)) {
      return; // a settler's tombstone: it completed this very move
    }
    String id = read.record().fileId();
    DataLocks.Lock again;
    try {
      again = ns.locks().takeForRename(id, src, new DataLocks.Move(from, to, read.version()));
    } catch (IOException e) {
      throw bothNamed(src, dst, e); // the copy is still there, undecided
    }
    try {
      Optional<VersionedRecord> copy = ns.readRecord(to, false);
      Optional<VersionedRecord> source = ns.readStored(from, false);
      boolean sourceHolds = source.isPresent() && id.equals(source.get().record().fileId());
      if (copy.isEmpty() || !copy.get().record().fileId().equals(id)) {
        if (!sourceHolds) {
          // A settler adopted the copy (its tombstone gone since), then a client renamed
          // or deleted it: the move is complete, and the file's fate followed the copy.
          return;
        }
        if (renamedOnFromFencedSource(from, source.get(), read, src, dst, lost, again)) {
          return;
        }
        throw new IOException("rename " + src + " to " + dst + " outlived its lock ("
            + lost.key() + ") and was fenced by a settler; its copy is gone: it changed"
            + " nothing; retry");
      }
      if (source.isPresent() && source.get().version() == read.version()) {
        ns.calls().deleteIfVersion(from, read.version()); // nobody else moved it: finish
        return;
      }
      if (sourceHolds) {
        // Fenced (the source rewritten unchanged by a settler) before the copy landed:
        // the source is the file's name. Before, the scan below found the source itself
        // and the message said it was "renamed to" itself (fifth review, S4).
        ns.calls().deleteIfVersion(to, copy.get().version());
        throw new IOException("rename " + src + " to " + dst + " outlived its lock ("
            + lost.key() + ") and was fenced: it stalled past its lease; its late copy at "
            + dst + " was taken back; retry");
      }
      String other = otherNameOf(id, to);
      boolean dataGone = other == null && !dataWhole(read.record());
      if (!ns.locks().stillHeld(again)) {
        // The scan outlasted the lease (a large pool): what it found may be stale.
        throw bothNamed(src, dst, new IOException("its lock (" + again.key() + ") was taken"
            + " over again while it looked for the file's other names"));
      }
      if (other == null && !dataGone) {
        return; // a settler completed the move; its tombstone is gone since
      }
      ns.calls().deleteIfVersion(to, copy.get().version());
      throw new IOException("rename " + src + " to " + dst + " outlived its lock ("
          + lost.key() + ") and changed nothing: meanwhile " + src + " was "
          + (other != null ? "renamed to " + ns.layout().pathOf(other) : "deleted")
          + "; its late copy at " + dst + " was taken back");
    } catch (TransactionConflictException e) {
      // a file kept in its record is deleted or overwritten without its lock
      throw bothNamed(src, dst, e);
    } finally {
      ns.locks().release(again);
    }
  }

  /**
   * The copy is gone and the source, fenced by a settler, still holds the file: the copy
   * landed after the settler released the lock (a rename over a file puts it conditionally
   * on the target's version, which a fence of the source does not change), and a client
   * renamed or deleted it before this rename took the lock again. Then the file's fate
   * followed the copy: the source is removed, and this returns true if another name holds
   * the file (the rename is complete, and was renamed on); throws if the copy was deleted
   * with the data (the source would name none). False otherwise, changing nothing, for
   * the caller to report "changed nothing". Before (fifth review, MF1), the source was kept in both
   * cases: two names on the file, or a name without data.
   */
  private boolean renamedOnFromFencedSource(String from, VersionedRecord source,
      VersionedRecord read, FsPath src, FsPath dst, DataLocks.Lock lost,
      DataLocks.Lock again) throws IOException {
    String id = read.record().fileId();
    String other = otherNameOf(id, from);
    boolean dataGone = other == null && !dataWhole(read.record());
    if (other == null && !dataGone) {
      return false;
    }
    if (!ns.locks().stillHeld(again)) {
      throw bothNamed(src, dst, new IOException("its lock (" + again.key() + ") was taken"
          + " over again while it looked for the file's other names"));
    }
    ns.calls().deleteIfVersion(from, source.version());
    if (!dataGone) {
      return true;
    }
    throw new IOException("rename " + src + " to " + dst + " outlived its lock ("
        + lost.key() + "), and its copy at " + dst + " was deleted meanwhile, with the"
        + " file's data: " + src + " was removed too (it named no data)");
  }

  /** The key of a name other than {@code except} that holds the file {@code id}, or null. */
  private String otherNameOf(String id, String except) throws IOException {
    for (String key : ns.scanAll(KeyLayout.NAMES + "/")) {
      if (!key.equals(except) && !KeyLayout.isMarker(key)) {
        Optional<VersionedRecord> r = ns.readRecord(key, false);
        if (r.isPresent() && id.equals(r.get().record().fileId())) {
          return key;
        }
      }
    }
    return null;
  }

  /** Whether every data blob of {@code record} exists (a delete of the file removes them). */
  boolean dataWhole(FileRecord record) throws IOException {
    for (long s = 0; s < record.stripeCount(); s++) {
      if (!ns.calls().stat(ns.layout().dataKey(record.fileId(), s)).exists()) {
        return false;
      }
    }
    return true;
  }

  /** Removes the destination's copy of {@code read} if it is there; {@code cause} gets why not. */
  private void takeBack(String to, VersionedRecord read, FsPath src, FsPath dst,
      IOException cause) throws IOException {
    try {
      Optional<VersionedRecord> copy = ns.readRecord(to, false);
      if (copy.isPresent() && copy.get().record().fileId().equals(read.record().fileId())) {
        ns.calls().deleteIfVersion(to, copy.get().version());
      }
    } catch (TransactionConflictException replaced) {
      cause.addSuppressed(replaced); // a newer file is there now: not ours to remove
    } catch (IOException e) {
      cause.addSuppressed(e);
      throw bothNamed(src, dst, cause);
    }
  }

  static IOException bothNamed(FsPath src, FsPath dst, IOException cause) {
    return new IOException("rename " + src + " to " + dst + " failed part-way and its outcome"
        + " could not be read back: both names may refer to the same file; check both before"
        + " deleting either", cause);
  }

  private void renameDirectory(FsPath src, FsPath dst) throws IOException {
    DirectoryMove.rename(ns, this, src, dst);
  }

  void commitOrExplain(List<BlobMutation> mutations, FsPath src, FsPath dst)
      throws IOException {
    try {
      ns.calls().commit(mutations);
    } catch (TransactionConflictException e) {
      throw BlobNamespace.lostRace("rename " + src + " to " + dst, e);
    }
  }
}
