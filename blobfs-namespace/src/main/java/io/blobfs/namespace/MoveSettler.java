package io.blobfs.namespace;

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
 * A file rename (not a directory's moves) first marks its source as moving to the
 * destination ({@link Renamer}); the destination's creation is its commit point. A marked
 * source whose destination holds the file is removed as above (rolled forward, without a
 * tombstone: such a rename that only stalled finds out under the lock, see
 * {@link Renamer#afterLostLock}); otherwise the move never committed and the mark is taken
 * off (rolled back). A rename that stalled past its lease between its mark and its commit
 * may still create the destination after that: both names show until it finds its lock
 * taken, right after, and takes its copy back.
 *
 * The settler first takes the lock over (same move, fresh lease), then acts. Having
 * rolled a move forward it leaves the lock behind as a tombstone (same move, already
 * expired) instead of removing it: a rename that only stalled past its lease then learns
 * from it that its copy was adopted and its move completed, rather than taking the copy
 * back ({@link Renamer}); the next client or sweep that meets the tombstone settles it
 * again (nothing left to do) and removes it. Otherwise it releases the lock. A settler
 * that dies leaves the move in the lock for the next one; settling twice is harmless (the
 * source's removal is conditional).
 */
final class MoveSettler {
  private MoveSettler() {}

  /**
   * Settles {@code expired}, a lock read with {@link DataLocks.Lock#interruptedMove}.
   * Returns false if the lock changed meanwhile (someone else settled or took it), true if
   * this call settled it.
   */
  static boolean settle(BlobNamespace ns, DataLocks.Lock expired) throws IOException {
    Optional<DataLocks.Lock> mine = ns.locks().takeOver(expired);
    if (mine.isEmpty()) {
      return false;
    }
    boolean adopted = false;
    try {
      DataLocks.Move move = expired.move();
      String id = expired.fileId();
      Optional<VersionedRecord> src = ns.readStored(move.fromKey(), true);
      Optional<VersionedRecord> dst = ns.readStored(move.toKey(), false);
      boolean marked = src.isPresent() && move.toKey().equals(src.get().record().movingTo())
          && src.get().record().fileId().equals(id);
      boolean srcHolds = marked || src.isPresent() && src.get().version() == move.version()
          && src.get().record().fileId().equals(id);
      boolean dstHolds = dst.isPresent() && dst.get().record().fileId().equals(id);
      if (marked && !dstHolds) {
        ns.renamer().unmark(move.fromKey(), src.get());
      }
      if (srcHolds && dstHolds) {
        try {
          ns.calls().deleteIfVersion(move.fromKey(), src.get().version());
          adopted = !marked;
        } catch (TransactionConflictException changed) {
          // changed by a client that ignores the lock (an older version): leave it be
        }
      }
      return true;
    } finally {
      if (!adopted || !ns.locks().markSettled(mine.get())) {
        ns.locks().release(mine.get());
      }
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
