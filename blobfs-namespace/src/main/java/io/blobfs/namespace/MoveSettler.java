package io.blobfs.namespace;

import io.blobfs.namespace.FileRecord.Mark;
import io.blobfs.store.TransactionConflictException;
import java.io.IOException;
import java.util.Optional;

/**
 * Settles a file rename without transactions that was cut off (its client died, or stalled
 * past its lock's lease) between the copy at the destination and the removal of the
 * source: the state in which two names share one file id, and deleting either would
 * destroy the other's data.
 *
 * <p>The rename's lock ({@link DataLocks.Move}) says what it was moving. While such a lock
 * is held or unsettled, nobody else changes a name of that file: renames, deletes and
 * overwrites all take the lock first ({@link DataLocks#takeForRename}), and each meets an
 * expired one with a move by settling it. So the names' state tells exactly how far the
 * rename got:
 *
 * <ul>
 *   <li>the destination holds the file and the source still holds it at the version moved:
 *       the copy was made, the removal not; the source is removed (rolled forward);
 *   <li>the destination does not hold it: the copy was never made, or was taken back; the
 *       source keeps it;
 *   <li>the source no longer holds it: the rename had removed it and died before releasing
 *       its lock; the destination keeps it.
 * </ul>
 *
 * A file rename, and each file move of a directory rename, is a {@link MarkedMove}: its
 * records carry marks, and its commit point is the conditional rewrite of the source as
 * moved. A source marked
 * moved means it committed: the destination is made plain and the source removed (rolled
 * forward). Otherwise it did not commit, and the mark is taken off the source before the
 * destination's incoming record is removed (rolled back): the mark's removal changes the
 * source's version, so a mover slower than its lease fails at its commit and can never
 * make that destination the file's name afterwards. Either way its mover, if it only
 * stalled, learns the outcome from its own conditional commit: no tombstone is needed.
 * Nothing marked and nothing to roll forward means the mover stalled before its mark: the
 * source is rewritten unchanged, conditionally on the version read, so that its mark
 * conflicts whenever it arrives ({@link #fenced}): no mover whose lock was taken can mark,
 * commit or finish afterwards.
 *
 * A rename over an existing file is marked too ({@link MarkedReplace}): its commit is the
 * put over the destination, conditional on the replaced version its lock records; the
 * destination holding the file means committed (rolled forward), else the replaced record
 * is rewritten unchanged, fencing that commit, before the mark comes off.
 *
 * The two-step move (the copy put as a plain record, then the source deleted) is what a
 * rename over an existing file and a directory rename of a client of stage 6 or older
 * (before the fifth review, for the directory rename) did.
 *
 * The settler first takes the lock over (same move, fresh lease), then reads the names,
 * then checks that the lock is still its own before each write ({@link #verifyHeld}): a
 * settler that outlived its own lease gives up instead of acting on what a later mover,
 * holding the lock after it, has marked or committed meanwhile (review of rados-replace,
 * MF1 and MF2). What it read before that check predates any later mover: a mover marks
 * only under the lock. Each write is conditional on a version read, so a later mover that
 * takes the lock between the check and the write conflicts with it, or it with the mover.
 *
 * <p>Having
 * rolled a two-step move forward it leaves the lock behind as a tombstone (same move,
 * already expired) instead of removing it: a rename that only stalled past its lease then
 * learns from it that its copy was adopted and its move completed, rather than taking the copy
 * back ({@link Renamer}); the next client or sweep that meets the tombstone settles it
 * again (nothing left to do) and removes it. Otherwise it releases the lock. A settler
 * that dies leaves the move in the lock for the next one; settling twice is harmless (the
 * source's removal is conditional).
 */
final class MoveSettler {
  private MoveSettler() {}

  /**
   * Settles {@code expired}, a lock read with {@link DataLocks.Lock#interruptedMove}.
   * Returns false if the lock changed meanwhile (someone else settled or took it) or the
   * move could not be settled (then this call keeps the lock, with a fresh lease, for the
   * next taker), true if this call settled it.
   */
  static boolean settle(BlobNamespace ns, DataLocks.Lock expired) throws IOException {
    Optional<DataLocks.Lock> taken = ns.locks().takeOver(expired);
    if (taken.isEmpty()) {
      return false;
    }
    DataLocks.Lock mine = taken.get();
    boolean adopted = false;
    // Until the move is known settled, the taken-over lock (same move, fresh lease) is
    // kept: released with a mark still on, nobody would know of the move any more, and a
    // later rename could act on names it had left half-changed. Its next taker settles
    // it again once the lease runs out.
    boolean keep = true;
    try {
      DataLocks.Move move = expired.move();
      String id = expired.fileId();
      for (int attempt = 1; ; attempt++) {
        if (attempt > BlobNamespace.RACE_ATTEMPTS) {
          return false; // the source keeps changing: the lock stays for the next taker
        }
        // The source changed between its read and the mark's removal (or the fence): a
        // stalled mover's mark or commit landed, or another client took the mark off.
        // Settled again from what is there now: an incoming record left by a move no
        // longer marked is removed. Before, a source found unmarked ended it there, the
        // incoming record left behind.
        Optional<Boolean> marked = settleMarked(ns, move, id, mine);
        if (marked.isPresent()) {
          if (!marked.get()) {
            continue;
          }
          // A marked move needs no tombstone: its mover learns the outcome from its own
          // conditional commit, which either applied or conflicts.
          break;
        }
        adopted = settleTwoStep(ns, move, id, mine);
        if (adopted || fenced(ns, move, id, mine)) {
          break;
        }
      }
      keep = false;
      return true;
    } catch (LockLost lost) {
      return false; // the lock and the names are a later holder's: nothing of it to keep
    } finally {
      if (!keep && (!adopted || !ns.locks().markSettled(mine))) {
        ns.locks().release(mine);
      }
    }
  }

  /**
   * Settles a file rename's marked move ({@link MarkedMove}). Empty if the names carry no
   * mark of it; else true if it was rolled forward (committed: {@link CommittedMove}) or
   * back (not committed: the mark is taken off the source first, fencing a stalled
   * commit, then the incoming record removed); false if the source's mark changed before
   * it could be taken off.
   *
   * <p>The destination is read before the source. A mover creates its incoming record
   * only after reading its mark back, so an incoming record read first had its mark
   * applied before; a source read after it that carries neither that move's mark nor its
   * commit has left the marked version for good (a store's versions never repeat), and
   * the commit, conditional on that version, can never apply: the record names nothing
   * and is removed. Before, the source was read first: a mover that marked it and created
   * its incoming record between the two reads went unseen, the settler removed the
   * record as left over, the mover's commit then applied and its rename returned true,
   * and the file had no name (third review, {@code MarkedMoveRaceTest}).
   */
  private static Optional<Boolean> settleMarked(BlobNamespace ns, DataLocks.Move move,
      String id, DataLocks.Lock mine) throws IOException, LockLost {
    Optional<VersionedRecord> dst = ns.readStored(move.toKey(), true);
    Optional<VersionedRecord> src = ns.readStored(move.fromKey(), true);
    // Any move's marks of this file between these names: the lock's holder is the only
    // mover that can still commit, and the settler holds it now: checked below, after
    // both reads, so that no mark read can be a later mover's.
    boolean moving = src.isPresent()
        && src.get().record().isAnyMove(sourceMark(move), move.toKey(), id);
    boolean moved = src.isPresent()
        && src.get().record().isAnyMove(Mark.MOVED, move.toKey(), id);
    boolean incoming = dst.isPresent()
        && dst.get().record().isAnyMove(Mark.INCOMING, move.fromKey(), id);
    if (!moving && !moved && !incoming) {
      return Optional.empty();
    }
    verifyHeld(ns, mine);
    if (moving && move.replacing() && holdsPlain(dst, id)) {
      // A rename over a file that committed ({@link MarkedReplace}: its file put over the
      // destination) and stopped before it removed its source: rolled forward. Taking the
      // mark off instead would leave two names on one file. Only a rename over a file
      // commits so: for a plain rename, the destination holding the file plain is what an
      // earlier rename left, and the source's mark a later one's, not committed (review
      // of rados-replace, MF2: applied to every move, it deleted that source, and the
      // file had no name).
      ignoringConflict(() -> deleteIfThere(ns, move.fromKey(), src.get().version()));
      return Optional.of(true);
    }
    if (moving && move.replacing() && dst.isPresent()
        && dst.get().version() == move.replacedVersion()) {
      // A rename over a file that has not committed: the replaced record is rewritten
      // unchanged first, so that the stalled mover's commit, conditional on that version,
      // can never apply once the mark is off. A conflict means that commit (or another
      // writer) got there first: looked at again by the caller.
      boolean[] fenced = {false};
      ignoringConflict(() -> {
        ns.calls().putIfVersion(move.toKey(), dst.get().record().encode(),
            move.replacedVersion());
        fenced[0] = true;
      });
      if (!fenced[0]) {
        return Optional.of(false);
      }
    }
    if (moved) {
      // Only the committed move's own record becomes the name (its token). Read before
      // the commit, the destination may not show it yet: then it is read again.
      long token = src.get().record().moveToken();
      CommittedMove.finish(ns, move.fromKey(), src.get(), dst.filter(d ->
          d.record().is(Mark.INCOMING, move.fromKey(), id, token)));
      return Optional.of(true);
    }
    if (moving) {
      boolean[] off = {false};
      ignoringConflict(() -> {
        ns.calls().putIfVersion(move.fromKey(), src.get().record().unmarked().encode(),
            src.get().version());
        off[0] = true;
      });
      if (!off[0]) {
        return Optional.of(false); // changed meanwhile: looked at again by the caller
      }
    }
    // Not committed, and now never will be (the mark taken off, or gone before the
    // source was read): the incoming record names nothing.
    if (incoming) {
      ignoringConflict(() -> ns.calls().deleteIfVersion(move.toKey(), dst.get().version()));
    }
    // An incoming record with no mark of this move on the source is an earlier, dead
    // mover's: the lock's holder may not have marked yet, so it is fenced like one that
    // left nothing (the review of rados-move5, M1: released unfenced, a stalled mover
    // marked, committed and finished with the lock in another client's hands).
    return moving ? Optional.of(true) : Optional.empty();
  }

  /** The mark its mover puts on the source: a rename over a file has its own. */
  private static Mark sourceMark(DataLocks.Move move) {
    return move.replacing() ? Mark.REPLACING : Mark.MOVING;
  }

  /** Whether {@code dst} holds the file {@code id} unmarked: a rename over it committed. */
  private static boolean holdsPlain(Optional<VersionedRecord> dst, String id) {
    return dst.isPresent() && dst.get().record().mark() == Mark.NONE
        && dst.get().record().fileId().equals(id);
  }

  private static void deleteIfThere(BlobNamespace ns, String key, long version)
      throws IOException {
    try {
      ns.calls().deleteIfVersion(key, version);
    } catch (java.io.FileNotFoundException gone) {
      // removed by the mover or another settler meanwhile
    }
  }

  /**
   * Settles a two-step move of one file (an older client's rename over a file or
   * directory rename): both names holding the file means the copy was made and the removal not, so
   * the source is removed. Returns whether it was (rolled forward).
   */
  private static boolean settleTwoStep(BlobNamespace ns, DataLocks.Move move, String id,
      DataLocks.Lock mine) throws IOException, LockLost {
    Optional<VersionedRecord> src = ns.readStored(move.fromKey(), false);
    Optional<VersionedRecord> dst = ns.readStored(move.toKey(), false);
    boolean srcHolds = src.isPresent() && src.get().version() == move.version()
        && src.get().record().fileId().equals(id);
    boolean dstHolds = dst.isPresent() && dst.get().record().fileId().equals(id);
    if (!srcHolds || !dstHolds) {
      return false;
    }
    verifyHeld(ns, mine);
    try {
      ns.calls().deleteIfVersion(move.fromKey(), move.version());
      return true;
    } catch (TransactionConflictException changed) {
      return false; // changed by a client that ignores the lock (an older version)
    }
  }

  /**
   * Fences a mover that took its lock and read the source but has not marked it yet (no
   * mark of the move is anywhere): the source is rewritten unchanged, conditionally on the
   * version read, so that the mover's mark, conditional on the version it read, can never
   * apply. Returns false if the source changed between its read and the rewrite (a late
   * mark may have landed: the caller settles again), true if it was fenced or holds
   * another file, or nothing (then no mark conditional on a version of it can apply).
   *
   * <p>Before, a settler that found no mark released the lock and left the mover free:
   * once it resumed it marked, committed and finished without a valid lock, while the
   * orphan sweeper, which had taken the free lock, scanned for names (fourth review: the
   * sweeper deleted the data of the file the new name held), or a delete of the new name
   * took the lock between the commit and the mover's finish (the old name then blocked).
   * An older client's two-step move that stalled before its copy is fenced too: its delete
   * of the source conflicts and it takes its copy back.
   */
  private static boolean fenced(BlobNamespace ns, DataLocks.Move move, String id,
      DataLocks.Lock mine) throws IOException, LockLost {
    Optional<VersionedRecord> src = ns.readStored(move.fromKey(), true);
    if (src.isEmpty() || !src.get().record().fileId().equals(id)) {
      return true;
    }
    verifyHeld(ns, mine);
    FileRecord r = src.get().record();
    switch (r.mark()) {
      case MOVED:
        return true; // reads as gone: no mover read this version as its source
      case INCOMING:
        return finishedOrInvisible(ns, move.fromKey(), src.get());
      case MOVING, REPLACING:
        if (r.isAnyMove(sourceMark(move), move.toKey(), id)) {
          return false; // this move's mark, made after settleMarked read it: settled again
        }
        break; // a stray mark of an earlier move that gave up: rewritten as it is
      default:
        break;
    }
    try {
      ns.calls().putIfVersion(move.fromKey(), r.encode(), src.get().version());
      return true;
    } catch (TransactionConflictException changed) {
      return false;
    }
  }

  /**
   * The source is itself another move's incoming record: not rewritten (that move's
   * finisher makes it plain conditionally on its version). A mover read it as there only
   * if that move had committed; then it is finished here, which makes it plain, a new
   * version the stalled mover's mark conflicts with. Uncommitted, it reads as absent: no
   * mover read this version as its source.
   */
  private static boolean finishedOrInvisible(BlobNamespace ns, String key,
      VersionedRecord incoming) throws IOException {
    FileRecord r = incoming.record();
    Optional<VersionedRecord> origin = ns.readStored(r.moveKey(), false);
    if (origin.isPresent()
        && origin.get().record().is(Mark.MOVED, key, r.fileId(), r.moveToken())) {
      CommittedMove.finish(ns, r.moveKey(), origin.get(), Optional.of(incoming));
    }
    return true;
  }

  /** The settler's lock was taken over by a later holder while it read the names. */
  private static final class LockLost extends Exception {
    LockLost() {
      super(null, null, false, false); // a signal within this class, never shown
    }
  }

  /**
   * Throws {@link LockLost} unless {@code mine} is still the lock as this settler took it:
   * called after the names are read and before acting on them.
   */
  private static void verifyHeld(BlobNamespace ns, DataLocks.Lock mine)
      throws IOException, LockLost {
    if (!ns.locks().stillHeld(mine)) {
      throw new LockLost();
    }
  }

  private interface StoreStep {
    void run() throws IOException;
  }

  /** Runs a conditional step; a conflict means someone else changed the name first. */
  private static void ignoringConflict(StoreStep step) throws IOException {
    try {
      step.run();
    } catch (TransactionConflictException changed) {
      // not this move's any more
    }
  }

  /**
   * Settles every interrupted file move in the store whose lock has expired (with
   * {@code evenLive}, every one: no client runs): a scan of every lock blob, for the
   * recovery command. Returns how many it settled.
   */
  static int settleAll(BlobNamespace ns, boolean evenLive) throws IOException {
    int settled = 0;
    EntryIterator<String> keys = ns.scanKeys(KeyLayout.DATA);
    while (keys.hasNext()) {
      String key = keys.next();
      String id = KeyLayout.fileIdOf(key);
      if (id == null || !KeyLayout.isLock(key)) {
        continue;
      }
      Optional<DataLocks.Lock> lock = ns.locks().read(id);
      long now = evenLive ? Long.MAX_VALUE : System.currentTimeMillis();
      if (lock.isPresent() && lock.get().interruptedMove(now) && settle(ns, lock.get())) {
        settled++;
      }
    }
    return settled;
  }
}
