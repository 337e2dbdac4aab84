package io.blobfs.namespace;

import io.blobfs.namespace.FileRecord.Mark;
import io.blobfs.store.BlobAlreadyExistsException;
import io.blobfs.store.PutMode;
import io.blobfs.store.TransactionConflictException;
import java.io.IOException;
import java.nio.file.FileAlreadyExistsException;
import java.security.SecureRandom;
import java.util.Optional;

/**
 * A file rename without transactions that readers see happen at one instant, and each file
 * move of a directory rename ({@link Renamer#moveLocked}). It runs under the file's lock,
 * which records the move ({@link DataLocks.Move}):
 *
 * <ol>
 *   <li>the source is marked {@link Mark#MOVING} to the destination, conditionally on the
 *       version read: readers still see the source;
 *   <li>the destination is created {@link Mark#INCOMING} from the source: readers ignore
 *       it, as if absent, while the source is not {@link Mark#MOVED} to it;
 *   <li>the commit point: the source is rewritten {@link Mark#MOVED}, conditionally on the
 *       marked version. From then on readers see the destination, not the source;
 *   <li>the destination is rewritten plain, and the source deleted.
 * </ol>
 *
 * The commit is a conditional write that a settler can fence: a settler of a move that
 * has not committed ({@link MoveSettler}) takes the source's mark off first, which changes
 * its version, so a mover slower than its lease fails at its commit whatever it did
 * before; its late incoming record stays invisible, and it removes it, or the next settler
 * does. Before, the commit was the unconditional creation of the destination, which a
 * settler could not stop: a mover that created it after a settler had taken the mark back
 * left two names on one file, and deleting either destroyed the other's data.
 *
 * <p>Once the mark may be on the source, the lock is released only when the move is known
 * to be complete or undone ({@link #settled}): any failure in between leaves the lock, so
 * that the next taker of it settles the move before it acts on either name. Before, a
 * failure to read a mark back released the lock with the mark still on.
 *
 * <p>Every record this move writes carries its token (64 random bits), and it acts only on
 * records with that token: a fenced mover and the rename that settled it and ran again
 * write records that differ in nothing else. Before, a fenced mover took the second
 * rename's incoming record for its own and deleted it in its rollback, leaving the file
 * with no name.
 */
final class MarkedMove {
  private static final System.Logger LOG = System.getLogger(MarkedMove.class.getName());
  private static final SecureRandom TOKENS = new SecureRandom();
  private final BlobNamespace ns;
  private final String from;
  private final String to;
  /** The file as read under the lock, unmarked, with its inline bytes. */
  private final FileRecord file;
  private final long readVersion;
  private final FsPath src;
  private final FsPath dst;
  /** This move's token, in each record it writes (never 0). */
  private final long token;
  /** The file's lock, taken for this move. */
  private final DataLocks.Lock lock;
  /** Its reads after a store call whose outcome is unknown. */
  private final OutcomeReadBack back;
  /** False while the source may carry a mark of this move that nobody will settle. */
  private boolean settled = true;

  MarkedMove(BlobNamespace ns, String from, String to, VersionedRecord read, FsPath src,
      FsPath dst, DataLocks.Lock lock) {
    this.ns = ns;
    this.lock = lock;
    this.from = from;
    this.to = to;
    this.file = read.record().unmarked();
    this.readVersion = read.version();
    this.src = src;
    this.dst = dst;
    long t;
    do {
      t = TOKENS.nextLong();
    } while (t == 0);
    this.token = t;
    this.back = new OutcomeReadBack(ns, lock, what(), "one of the two names");
  }

  /** Whether the lock can be released: no mark of this move is left unsettled. */
  boolean settled() {
    return settled;
  }

  /**
   * Runs the move. Returns once it has committed (its cleanup may be left to the lock's
   * next taker: {@link #settled}); throws if it did not commit, having undone what it could.
   */
  void run() throws IOException {
    // Before any store call, while settled (the lock is released: nothing changed): a
    // mapped record whose marks would not fit (a key over MAX_MARK_KEY_BYTES) is refused
    // here, typed, rather than failing between the mark and the commit (review MF1).
    file.checkMarkable(from, to);
    settled = false;
    long marked = mark();
    long incoming = createIncoming(marked);
    commit(marked, incoming);
    // Committed: readers see the destination only. What follows is cleanup, which a
    // reader of either name or the lock's next taker finishes if it fails here.
    try {
      finish(incoming);
    } catch (IOException e) {
      LOG.log(System.Logger.Level.DEBUG, what() + " committed; its cleanup is left", e);
    }
  }

  private long mark() throws IOException {
    try {
      ns.calls().putIfVersion(from, file.marked(Mark.MOVING, to, token).encode(), readVersion);
    } catch (TransactionConflictException lost) {
      settled = true;
      throw BlobNamespace.lostRace(what(), lost);
    } catch (IOException unknown) {
      // only this move's mark: another mover's (this one fenced meanwhile) is not ours
      if (!back.read(from, unknown)
          .filter(r -> r.record().is(Mark.MOVING, to, file.fileId(), token)).isPresent()) {
        settled = true; // a mark that did not apply changed nothing
        throw changedNothing(unknown);
      }
    }
    Optional<VersionedRecord> now = stored(from);
    if (now.isEmpty() || !now.get().record().is(Mark.MOVING, to, file.fileId(), token)) {
      settled = true; // changed right after, by a client that takes no lock: not ours
      throw BlobNamespace.lostRace(what(),
          new TransactionConflictException(src + " changed right after it was marked"));
    }
    return now.get().version();
  }

  private long createIncoming(long marked) throws IOException {
    for (int attempt = 1; ; attempt++) {
      try {
        ns.calls().put(to, file.marked(Mark.INCOMING, from, token).encode(), PutMode.CREATE);
        break;
      } catch (BlobAlreadyExistsException e) {
        if (incomingVersion().isPresent()) {
          break; // this very create, applied and then reported lost
        }
        if (attempt < BlobNamespace.RACE_ATTEMPTS && ns.removedDeadIncoming(to)) {
          continue; // another move's record that can never commit (its own may, so not it)
        }
        rollBack(marked, null);
        throw new FileAlreadyExistsException(dst.toString(), null, "created meanwhile");
      } catch (IOException unknown) {
        back.read(to, unknown);
        if (incomingVersion().isEmpty()) {
          rollBack(marked, null);
          throw changedNothing(unknown);
        }
        break;
      }
    }
    Optional<Long> incoming = incomingVersion();
    if (incoming.isEmpty()) { // removed by a settler: this move outlived its lease
      rollBack(marked, null);
      throw BlobNamespace.lostRace(what(), new TransactionConflictException(
          dst + " was settled while this rename stalled"));
    }
    return incoming.get();
  }

  private void commit(long marked, long incoming) throws IOException {
    try {
      ns.calls().putIfVersion(from, file.marked(Mark.MOVED, to, token).encode(), marked);
    } catch (TransactionConflictException lost) {
      // A settler took the mark back (this rename outlived its lease), or a client that
      // takes no lock changed the source: the move did not commit, and cannot any more.
      // rollBack's answer is not needed: it is false only when the source is moved by this
      // very move, and a commit answered with a conflict did not apply and never will (no
      // layer under the namespace sends a conditional put again once it was answered; one
      // that did could apply this commit late, and this answer would then be wrong).
      rollBack(marked, null);
      throw BlobNamespace.lostRace(what(), lost);
    } catch (IOException unknown) {
      if (committed(back.read(from, unknown))) {
        return; // this move's own commit (its token), whoever holds the lock now
      }
      // The source is not this move's committed record: the commit did not apply, or it
      // did and a reader or settler has finished the move since (the destination made
      // plain, the source removed; CommittedMove). The destination is read, then the lock:
      // if the lock is still this move's after that read, nobody else has moved the file
      // since it was taken, so the file plain at the destination is this move's doing.
      // Before, that case was rolled back with nothing to undo and reported "failed and
      // changed nothing" with the file under its new name (issue 14, finding 2).
      Optional<VersionedRecord> there = back.read(to, unknown);
      if (!back.lockHeld(unknown)) {
        // Stalled past its lease: a later holder may have settled this move and renamed
        // the file again, so the names no longer tell what this commit did, and the names
        // are the holder's: no rollback write, and the caller is told so.
        settled = true; // the holder of the lock settles the source, not this move
        throw RenameOutcomeUnknownException.lockLost(what(), src, dst, unknown);
      }
      if (finishedByOther(there)) {
        return;
      }
      if (rollBack(marked, unknown)) {
        throw changedNothing(unknown);
      }
      // the commit whose answer was lost applied after its read-back (rollBack found it,
      // checking the lock after its own reads): committed
    }
  }

  /**
   * Whether the destination holds this move's file plain: its commit applied and a reader
   * or settler finished it. Only the file id can tell (the plain record carries no token);
   * the caller checks that the lock is still this move's, so no other move of the file can
   * have put it there.
   */
  private boolean finishedByOther(Optional<VersionedRecord> there) {
    return there.isPresent() && there.get().record().mark() == Mark.NONE
        && there.get().record().fileId().equals(file.fileId());
  }

  private void finish(long incoming) throws IOException {
    Optional<VersionedRecord> moved = stored(from)
        .filter(r -> r.record().is(Mark.MOVED, to, file.fileId(), token));
    // Gone: a reader or a settler finished the move (the destination made plain first).
    if (moved.isPresent()) {
      CommittedMove.finish(ns, from, moved.get(), Optional.of(
          new VersionedRecord(file.marked(Mark.INCOMING, from, token), incoming)));
    }
    settled = true;
  }

  /**
   * Undoes a move that did not commit: the mark is taken off the source if it is still
   * this move's, then the destination's incoming record removed if it is this move's (by
   * its token: another move's record is not ours to judge). In that order: a stalled
   * commit of this move fails once the mark is off, so the incoming record can never
   * become the file's name after it is removed. Returns false, undoing nothing, if the
   * source turns out moved by this very move: a commit whose answer was lost and that
   * applied after it was read back (a store call that timed out may still apply). Before,
   * a rollback that found the mark changed removed the incoming record all the same, and
   * a late commit then left the file with no name.
   *
   * <p>{@code unknownCommit} is the commit's lost answer when the commit may have applied
   * (null: not sent yet, or answered with a conflict, so it never applies). Then a source
   * found absent or no longer at the marked version may be that late commit finished by a
   * reader or settler since the read-back (the destination made plain, the source removed,
   * its name perhaps reused by a new file): the destination is read,
   * then the lock; still this move's after that read, nobody else moved the file, so the
   * file plain there is this commit's doing and the answer is false. Lost, the names are
   * a later holder's: {@link RenameOutcomeUnknownException}, nothing written. Before, it
   * found nothing to undo and the rename said "failed and changed nothing" with the file
   * under its new name (review of rados-outcome, should 3).
   */
  private boolean rollBack(long marked, IOException unknownCommit) throws IOException {
    Optional<VersionedRecord> whole = ns.readStored(from, true);
    if (committed(whole)) {
      return false;
    }
    // The source no longer at the marked version (gone, or its name reused by a new file
    // once a reader finished a late commit): the destination tells (third review of
    // rados-outcome: a reused name was taken for "nothing to undo").
    boolean atMark = whole.isPresent() && whole.get().version() == marked;
    if (!atMark && finishedLate(unknownCommit)) {
      return false;
    }
    if (whole.isPresent() && whole.get().version() == marked) {
      try {
        ns.calls().putIfVersion(from, whole.get().record().unmarked().encode(), marked);
      } catch (TransactionConflictException e) {
        // changed meanwhile: a settler took the mark back, or this move's late commit
        // applied; the marked version never comes back, so one more read tells which.
        // The late commit may already be finished by a reader (the source removed, its
        // name perhaps reused since): then the destination tells (second and third
        // reviews of rados-outcome: it answered "changed nothing" with the file moved).
        Optional<VersionedRecord> now = stored(from);
        if (committed(now) || finishedLate(unknownCommit)) {
          return false;
        }
      }
    }
    Optional<Long> incoming = incomingVersion();
    if (incoming.isPresent()) {
      try {
        ns.calls().deleteIfVersion(to, incoming.get());
      } catch (TransactionConflictException e) {
        // removed by a settler meanwhile: not ours
      }
    }
    settled = true;
    return true;
  }

  /**
   * With the source found absent or not at the marked version, and the commit's answer
   * lost ({@code unknownCommit}, null if it never applies): whether that late commit
   * applied and was finished by a reader or settler (the file plain at the destination). The destination is read, then the lock:
   * still this move's after that read, nobody else moved the file. Lost: the names are a
   * later holder's, {@link RenameOutcomeUnknownException}, nothing written.
   */
  private boolean finishedLate(IOException unknownCommit) throws IOException {
    if (unknownCommit == null) {
      return false;
    }
    Optional<VersionedRecord> there = back.read(to, unknownCommit);
    if (!back.lockHeld(unknownCommit)) {
      settled = true; // the holder of the lock settles the move, not this mover
      throw RenameOutcomeUnknownException.lockLost(what(), src, dst, unknownCommit);
    }
    return finishedByOther(there);
  }

  /** Whether {@code source} is this move's committed source. */
  private boolean committed(Optional<VersionedRecord> source) {
    return source.isPresent() && source.get().record().is(Mark.MOVED, to, file.fileId(), token);
  }

  /** The version of this move's incoming record at the destination, if it is there. */
  private Optional<Long> incomingVersion() throws IOException {
    return stored(to).filter(r -> r.record().is(Mark.INCOMING, from, file.fileId(), token))
        .map(VersionedRecord::version);
  }

  private Optional<VersionedRecord> stored(String key) throws IOException {
    return ns.readStored(key, false);
  }

  private String what() {
    return "rename " + src + " to " + dst;
  }

  private IOException changedNothing(IOException cause) {
    return new IOException(what() + " failed and changed nothing", cause);
  }
}
