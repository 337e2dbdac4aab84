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

  /**
   * {@link BlobNamespace#rename}. Without transactions, settling a rename of the same file
   * that was cut off (both names holding it, below) may change the names this call
   * decided on: the rename is then decided again on the names as settled, as it is after
   * finishing a directory operation cut off, so that false means that nothing changed
   * after the settling (Hadoop's contract: false only when nothing changed).
   */
  boolean rename(FsPath src, FsPath dst) throws IOException {
    ns.layout().checkPath(src);
    ns.layout().checkPath(dst);
    if (src.isRoot()) {
      return false;
    }
    for (int attempt = 1; ; attempt++) {
      Optional<Boolean> answer = renameOnce(src, dst);
      if (answer.isPresent()) {
        return answer.get();
      }
      if (attempt == BlobNamespace.RACE_ATTEMPTS) {
        throw BlobNamespace.lostRace("rename " + src + " to " + dst,
            new TransactionConflictException("the names kept changing while renames of "
                + src + " cut off earlier were settled"));
      }
    }
  }

  /**
   * One decision of {@link #rename} on the names as probed: its answer, or empty if
   * settling a rename cut off earlier changed the names (decided again, nothing done).
   */
  private Optional<Boolean> renameOnce(FsPath src, FsPath dst) throws IOException {
    Optional<FileInfo> found = ns.probe(src);
    if (found.isEmpty()) {
      // Without transactions a directory rename that was cut off after its last move
      // leaves only its intent: this same rename, retried, finishes it.
      return Optional.of(!ns.calls().transactional()
          && DirectoryMove.finishExactly(ns, this, src)
          .filter(done -> done.sameAs(src, dst)).isPresent());
    }
    FileInfo srcInfo = found.get();
    if (src.equals(dst)) {
      return Optional.of(srcInfo.isFile());
    }
    if (dst.isAtOrUnder(src)) {
      return Optional.of(false);
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
        return Optional.of(true);
      }
      if (!finished.isEmpty()) {
        found = ns.probe(src);
        if (found.isEmpty()) {
          return Optional.of(false);
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
          return settleBothNames(src, dst, srcInfo.record().fileId());
        }
        return Optional.of(false);
      }
      target = dst.child(src.name());
      ns.layout().checkPath(target);
      if (ns.probe(target).isPresent()) {
        return Optional.of(false);
      }
    } else if (!dst.parent().isRoot() && !dst.parent().equals(src.parent())) {
      Optional<FileInfo> parent = ns.probe(dst.parent());
      if (parent.isPresent() ? parent.get().isFile() : ns.options().keepDirectoryMarkers()) {
        return Optional.of(false);
      }
    }
    if (srcInfo.isFile()) {
      if (!renameFile(src, target)) {
        return Optional.of(false); // the destination was created after the probe above
      }
    } else {
      renameDirectory(src, target);
      ns.pending().rename(src, target);
    }
    ns.keepVisible(src.parent());
    return Optional.of(true);
  }

  /**
   * Both names hold the file {@code id} (without transactions): a rename of it was cut off
   * between its commit and the removal of its source, or is under way (the lock waits for
   * it). The file's lock settles it, then both names are probed again:
   *
   * <ul>
   *   <li>the source gone and the destination holding the file: it was a rename of the
   *       source to the destination (this one, retried, or another client's), rolled
   *       forward: the rename asked for is done;
   *   <li>both still holding it: nothing was recorded to settle (two names on one file,
   *       which no retry changes): false, nothing changed;
   *   <li>the destination no longer holding it: it was a rename the other way (the
   *       destination renamed over the source), rolled forward, which removed the
   *       destination; or the names changed otherwise meanwhile. The rename is decided
   *       again on the names as they are now (empty). Before, it answered false, "nothing
   *       changed", although the settling had removed the destination, and a caller that
   *       trusted the answer (Hadoop's contract) went on as if the destination still held
   *       the file;
   *   <li>the source gone and the destination not holding the file: renamed or deleted
   *       away meanwhile, as {@link #renameFile} says when it finds its source gone.
   * </ul>
   *
   * A rename over a file ({@link Replacer}) that finds its target's file at its source
   * settles it here too, and does not decide again.
   */
  Optional<Boolean> settleBothNames(FsPath src, FsPath dst, String id)
      throws IOException {
    // Changes no name: an adoption it took over is put back (S1, DataLocks.release).
    try {
      ns.locks().release(ns.locks().takeForRename(id, src, null), ns.layout().recordKey(src));
    } catch (DataLocks.DeletedUnderWill deleted) {
      // A delete of the file applied but its will could not be carried out (second review
      // of the will, should-fix 1): no lock is taken, the will stays for the sweeper. The
      // file's names change only under its lock, which the will's settler keeps, so the
      // names read now are final for this call: decided below as after the lock; if the
      // source still holds the file the delete was not of it, and the conflict stands.
      if (holds(ns.probe(src), id)) {
        throw deleted;
      }
    }
    Optional<FileInfo> srcNow = ns.probe(src);
    boolean dstHolds = holds(ns.probe(dst), id);
    if (srcNow.isEmpty()) {
      if (dstHolds) {
        return Optional.of(true);
      }
      throw new FileNotFoundException("renamed or deleted meanwhile: " + src);
    }
    return dstHolds && holds(srcNow, id) ? Optional.of(false) : Optional.empty();
  }

  private static boolean holds(Optional<FileInfo> info, String id) {
    return info.isPresent() && info.get().isFile() && info.get().record().fileId().equals(id);
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
      DataLocks.Lock lock;
      try {
        // a file's own rename holds nothing; a directory's holds its intent (Patience)
        lock = ns.locks().takeForRename(read.record().fileId(), src,
            new DataLocks.Move(from, to, read.version()), running == null
                ? DataLocks.Patience.OUTWAIT : DataLocks.Patience.BOUNDED);
      } catch (DataLocks.DeletedUnderWill deleted) {
        // Second review of the will, should-fix 1: the file read was deleted meanwhile and
        // its will could not be carried out (its data delete failed; the will stays in the
        // settler's lock for the sweeper). The source is read again and judged as under the
        // lock below: gone, false ("renamed or deleted meanwhile"; a directory move goes
        // on); another file there, followed or a lost race. Before, the conflict failed the
        // whole directory move, half-moved until another client finished its intent.
        Optional<VersionedRecord> now = ns.readRecord(from, true);
        if (now.isEmpty()) {
          return false;
        }
        if (now.get().record().fileId().equals(read.record().fileId())) {
          throw deleted; // the name still holds it: not this file's delete
        }
        if (!followChanges || attempt == BlobNamespace.RACE_ATTEMPTS) {
          throw BlobNamespace.lostRace("rename " + src + " to " + dst, deleted);
        }
        read = now.get();
        continue;
      }
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
          MarkedMove move = new MarkedMove(ns, from, to, now.get(), src, dst, lock);
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
          // The source's key: where an adopter's late commit lands (see release).
          ns.locks().release(lock, from);
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
