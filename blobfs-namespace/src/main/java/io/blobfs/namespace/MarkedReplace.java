package io.blobfs.namespace;

import io.blobfs.namespace.FileRecord.Mark;
import io.blobfs.store.TransactionConflictException;
import java.io.FileNotFoundException;
import java.io.IOException;
import java.security.SecureRandom;
import java.util.Optional;

/**
 * A rename over an existing file without transactions ({@link Replacer}), as a marked move
 * like {@link MarkedMove}, under the locks of both files; the source's lock records the
 * move with the version of the destination's record it replaces ({@link DataLocks.Move}):
 *
 * <ol>
 *   <li>the source is marked {@link Mark#REPLACING} to the destination, conditionally on the
 *       version read: readers still see it;
 *   <li>the commit point: the source's file is put over the destination, conditionally on
 *       the replaced version. From then on the destination holds the new file; the source,
 *       still marked moving, holds it too until the next step (both names one file for a
 *       moment, as readers on other clients always could see);
 *   <li>the source deleted, conditionally on its marked version.
 * </ol>
 *
 * A settler of the lock ({@link MoveSettler}) reads how far it got: the destination
 * holding the source's file id means committed, and the source is removed (rolled
 * forward); otherwise it rewrites the replaced record unchanged if it is still at the
 * replaced version, then takes the mark off the source (rolled back). That rewrite fences
 * a stalled mover: its commit, conditional on the replaced version, conflicts whenever it
 * arrives, and its delete of the source conflicts with the unmarked version. A late step
 * of a fenced mover changes nothing. Before, the commit was an unconditional two-step
 * move that a settler could not stop, and a mover that lost its lock put the replaced
 * record back on any failure, even after a client had deleted its late copy (the review
 * of rados-move5, S-b: the replaced file came back under the deleted name).
 *
 * <p>Nothing is ever put back: before the commit the destination is untouched, after it
 * the move is final. A failure whose outcome cannot be read back leaves the lock unsettled
 * ({@link #settled}) for its next taker.
 */
final class MarkedReplace {
  private static final SecureRandom TOKENS = new SecureRandom();
  private final BlobNamespace ns;
  private final String from;
  private final String to;
  /** The source as read under the lock, unmarked, with its inline bytes. */
  private final FileRecord file;
  private final long readVersion;
  /** The version of the destination's record this rename replaces (the probed file's). */
  private final long replacedVersion;
  private final String replacedId;
  private final FsPath src;
  private final FsPath dst;
  private final long token;
  /** The source's lock, taken for this move. */
  private final DataLocks.Lock lock;
  /** Its reads after a store call whose outcome is unknown. */
  private final OutcomeReadBack back;
  /** False while the source may carry a mark of this move that nobody will settle. */
  private boolean settled = true;

  MarkedReplace(BlobNamespace ns, String from, String to, VersionedRecord read,
      VersionedRecord replaced, FsPath src, FsPath dst, DataLocks.Lock lock) {
    this.ns = ns;
    this.lock = lock;
    this.from = from;
    this.to = to;
    this.file = read.record().unmarked();
    this.readVersion = read.version();
    this.replacedVersion = replaced.version();
    this.replacedId = replaced.record().fileId();
    this.src = src;
    this.dst = dst;
    long t;
    do {
      t = TOKENS.nextLong();
    } while (t == 0);
    this.token = t;
    this.back = new OutcomeReadBack(ns, lock, what(), "the old or the new file at " + dst);
  }

  /** The move its lock records, replaced version included. */
  static DataLocks.Move move(String from, String to, VersionedRecord read,
      VersionedRecord replaced) {
    return new DataLocks.Move(from, to, read.version(), replaced.version());
  }

  boolean settled() {
    return settled;
  }

  /**
   * Runs the move. Returns once it has committed (the source's removal may be left to the
   * lock's next taker); throws if it did not, having changed nothing.
   */
  void run() throws IOException {
    // Before any store call, while settled (the lock is released: nothing changed): a
    // mapped record whose marks would not fit (a key over MAX_MARK_KEY_BYTES) is refused
    // here, typed, rather than failing between the mark and the commit (review MF1).
    file.checkMarkable(from, to);
    settled = false;
    long marked = mark();
    commit(marked);
    try {
      ns.calls().deleteIfVersion(from, marked);
    } catch (TransactionConflictException | FileNotFoundException gone) {
      // a settler rolled the committed move forward meanwhile (this mover stalled)
    } catch (IOException e) {
      return; // committed: the lock's next taker removes the source (settled stays false)
    }
    settled = true;
  }

  private long mark() throws IOException {
    try {
      ns.calls().putIfVersion(from, file.marked(Mark.REPLACING, to, token).encode(), readVersion);
    } catch (TransactionConflictException lost) {
      settled = true; // fenced by a settler, or changed by a client that takes no lock
      throw BlobNamespace.lostRace(what(), lost);
    } catch (IOException unknown) {
      if (back.read(from, unknown).filter(this::ownMark).isEmpty()) {
        settled = true;
        throw changedNothing(unknown);
      }
      // Its own mark (the token's) is there, but the call was slow enough to time out: if
      // the lock was taken meanwhile (read after the mark), the move goes no further, so
      // that it never commits under a lock that is a later holder's. Nothing is committed;
      // the holder takes the mark off. Before, it went on to its commit regardless.
      if (!back.lockHeld(unknown)) {
        settled = true;
        throw BlobNamespace.lostRace(what(), new TransactionConflictException(what()
            + " stalled past its lease while marking " + src + "; nothing was committed and"
            + " the holder of its lock takes the mark off"));
      }
    }
    Optional<VersionedRecord> now = ns.readStored(from, false);
    if (now.isEmpty() || !ownMark(now.get())) {
      settled = true;
      throw BlobNamespace.lostRace(what(),
          new TransactionConflictException(src + " changed right after it was marked"));
    }
    return now.get().version();
  }

  private void commit(long marked) throws IOException {
    try {
      ns.calls().putIfVersion(to, file.encode(), replacedVersion);
      return;
    } catch (TransactionConflictException lost) {
      // The destination changed (another writer), or a settler fenced it. Undone, unless
      // the file is found there after all.
      if (!rollBack(marked, lost)) {
        committedAfterConflict(lost);
        return;
      }
      Optional<VersionedRecord> now = ns.readStored(to, false);
      if (now.isEmpty() || !now.get().record().fileId().equals(replacedId)) {
        throw Replacer.changed(dst);
      }
      throw new TargetRewrittenException(what() + ": " + dst + " was rewritten unchanged"
          + " before the commit; nothing was changed", lost);
    } catch (IOException unknown) {
      // The destination is read back, then the lock: still this move's after that read,
      // nobody else has renamed the file since it was taken, so the file at the
      // destination is this commit's and anything else there means it has not applied.
      // Lost, this move stalled past its lease: its settler may have rolled it forward or
      // back, and a later rename of the file (under the later holder) may have put it
      // anywhere since, so the names tell nothing about this commit, and they are the
      // holder's: no rollback write, and the caller learns that the outcome is unknown.
      // Before, it answered "renamed" on finding the file there whoever put it, or rolled
      // back on names that were no longer its own and answered "failed and changed
      // nothing" after its commit had applied (issue 14, finding 1).
      Optional<VersionedRecord> there = back.read(to, unknown);
      if (!back.lockHeld(unknown)) {
        settled = true; // the holder of the lock settles the source, not this move
        throw RenameOutcomeUnknownException.lockLost(what(), src, dst, unknown);
      }
      if (holdsFile(there)) {
        return;
      }
      if (rollBack(marked, unknown)) {
        throw changedNothing(unknown);
      }
      // rollBack found the file at the destination: the commit whose answer was lost
      // applied late, or, if this move stalled past its lease after the check above, a
      // later holder's rename of the file put it there. rollBack's reads come after that
      // check, so the lock is checked again after them: an answer is only ever drawn from
      // reads made before a check that found the lock still this move's. Before, this
      // answered "renamed" for a later holder's rename (review of rados-outcome, must 1).
      committedAfterConflict(unknown);
    }
  }

  /**
   * The destination holds this move's file although its commit conflicted, or although
   * its commit's answer was lost and a read after the lock check found it not applied
   * (rollBack then found it: read after that check, so checked again here). With the
   * source's lock still this move's, no other rename of the file can have put it there:
   * the commit applied (a call resent by the store's client whose first try landed
   * unseen), and the source is removed as after any commit. Before, a
   * TargetChangedException was thrown with the file under both names and the lock left
   * unsettled (review of rados-replace, should 2). With the lock lost (this move stalled
   * past its lease), a later rename of the same file over the same name may have done it:
   * which one did is unknown: {@link RenameOutcomeUnknownException}, the source left to
   * the lock's holder. Before, that was a lost race, "not applied; retry", which may be
   * untrue (issue 14, finding 1).
   */
  private void committedAfterConflict(IOException lost) throws IOException {
    if (!back.lockHeld(lost)) {
      settled = true; // the lock's holder settles the source, not this move
      throw RenameOutcomeUnknownException.lockLost(what(), src, dst, lost);
    }
  }

  /**
   * Undoes a move that did not commit. The replaced record is rewritten unchanged first if
   * it is still at the replaced version, so that this move's commit, if it is still in
   * flight (a timed-out call may apply late), can never apply; then the mark is taken off
   * the source. Returns false, undoing nothing, if the commit turns out to have applied.
   *
   * <p>Its writes are made only under this move's lock: checked after the destination is
   * read, so that a lock still held means nothing else renamed the file meanwhile. With
   * the lock lost (reachable from a commit that conflicted: a settler's fence of this
   * stalled move), the names are the later holder's and nothing is written; what the
   * caller is told is {@link #afterLockLost}. Before, a stalled mover wrote on them (issue
   * 14, finding 1).
   */
  private boolean rollBack(long marked, IOException cause) throws IOException {
    Optional<VersionedRecord> there = ns.readStored(to, true);
    if (holdsFile(there)) {
      return false;
    }
    // The source is read after the destination and before the lock check: with the lock
    // lost, it may still prove that nothing changed (afterLockLost); with the lock held,
    // it is what the mark is taken off below.
    Optional<VersionedRecord> source = ns.readStored(from, true);
    if (!back.lockHeld(cause)) {
      settled = true; // the holder of the lock settles the source, not this move
      throw afterLockLost(there, source, marked, cause);
    }
    if (there.isPresent() && there.get().version() == replacedVersion) {
      try {
        ns.calls().putIfVersion(to, there.get().record().encode(), replacedVersion);
      } catch (TransactionConflictException e) {
        Optional<VersionedRecord> now = ns.readStored(to, false);
        if (holdsFile(now)) {
          return false; // the late commit won; the replaced version is gone for good
        }
        // Changed by someone else: with the lock still this move's after that read, the
        // commit can no longer apply (the replaced version is gone) and nobody else moved
        // the file. Lost since the check above (a stall before the fence), a settler may
        // have rolled a late commit forward and a later rename moved the file on: the
        // outcome is unknown (second review of rados-outcome, must 2: it answered
        // "changed nothing" with its commit's file renamed on).
        if (!back.lockHeld(cause)) {
          settled = true;
          // no source read after `now`: nothing can be proved unchanged (afterLockLost)
          throw afterLockLost(now, Optional.empty(), marked, cause);
        }
      }
    }
    // The source as read before the lock check: the unmark is conditional on the marked
    // version, so a source changed since (a settler took the mark off) conflicts.
    if (source.isPresent() && source.get().version() == marked) {
      try {
        ns.calls().putIfVersion(from, source.get().record().unmarked().encode(), marked);
      } catch (TransactionConflictException e) {
        // a settler took the mark off meanwhile
      }
    }
    settled = true;
    return true;
  }

  /**
   * The commit conflicted with the replaced file rewritten unchanged (still the same file,
   * at a new version), and nothing was changed. That is a settler's fence: of this move,
   * if it stalled past its lease, or of an earlier rename over the same file whose lock ran
   * out, settled only now. Which one cannot be told from the names, and either way the
   * target is still the file the caller meant to replace: {@link Replacer} tries again
   * under fresh locks recording its new version, as it does when it sees that rewrite
   * before the move runs. Before, this was always reported as "this move was fenced",
   * untrue in the second case (review of rados-replace, should 3).
   */
  static final class TargetRewrittenException extends TransactionConflictException {
    private static final long serialVersionUID = 1L;

    TargetRewrittenException(String message, Throwable cause) {
      super(message);
      initCause(cause);
    }
  }

  /**
   * What a move that lost its lock, its commit answered with a conflict or of unknown
   * outcome, can still tell from the names without writing; {@code there} is the
   * destination as read after the commit's answer, {@code source} the source as read
   * after {@code there} (empty: not read).
   *
   * <ul>
   *   <li>The destination the replaced file at another version (a settler's fence), after
   *       a conflict: the commit never applied and never will (once replaced, that file's
   *       record is gone for good), and {@link Replacer} tries again under fresh locks.
   *   <li>The source still this move's mark, at the marked version, and the destination
   *       not this move's file and no longer at the replaced version: nothing changed.
   *       Had the commit applied, the destination would have held this file; to change it
   *       since, any client goes through this file's lock, whose taker settles the move
   *       first (rolled forward: the source removed), so the source would have left the
   *       marked version before the destination changed, and a store's versions never
   *       repeat; read after the destination, it has not. Nor can the commit apply later:
   *       it is conditional on the replaced version, which the destination has left. This
   *       needs no lock: a later holder's writes would show on the source first. The
   *       mark stays for the lock's holder to take off (this move writes nothing without
   *       its lock); readers see the source as if unmarked. A third file there is then
   *       {@link TargetChangedException} ("nothing was changed", which BlobFileSystem's
   *       rename with OVERWRITE retries on the new target); the fenced
   *       replaced file, the retry above. Before, both were unknown (leftover B of
   *       issue 14).
   *   <li>Anything else may be this move's doing or a later holder's: unknown. That
   *       includes a third file at the destination with this move's file at the source
   *       unmarked (or at another version): a conflict does not prove that the commit
   *       never applied (a call resent by the store's client may have landed first, which
   *       {@link #committedAfterConflict} assumes), and then a settler rolling it forward,
   *       a later rename of the file back to the source and a third file written over the
   *       destination leave the same names as a settler's rollback after a true conflict.
   *       Before, that was a TargetChangedException, "nothing was changed", which
   *       BlobFileSystem retries (review of rados-outcome, should 4).
   * </ul>
   */
  private IOException afterLockLost(Optional<VersionedRecord> there,
      Optional<VersionedRecord> source, long marked, IOException cause) {
    boolean fenced = there.isPresent() && there.get().record().fileId().equals(replacedId)
        && there.get().version() != replacedVersion;
    boolean untouched = source.isPresent() && source.get().version() == marked
        && ownMark(source.get()) && !holdsFile(there)
        && (there.isEmpty() || there.get().version() != replacedVersion);
    if (fenced && (untouched || cause instanceof TransactionConflictException)) {
      return new TargetRewrittenException(what() + ": " + dst + " was rewritten unchanged"
          + " by the settler of its lock (it stalled past its lease); nothing was changed",
          cause);
    }
    if (untouched) {
      TargetChangedException changed = Replacer.changed(dst);
      changed.initCause(cause);
      return changed;
    }
    return RenameOutcomeUnknownException.lockLost(what(), src, dst, cause);
  }

  private boolean ownMark(VersionedRecord r) {
    return r.record().is(Mark.REPLACING, to, file.fileId(), token);
  }

  /** Whether the destination holds this move's file, plain: the commit applied. */
  private boolean holdsFile(Optional<VersionedRecord> there) {
    return there.isPresent() && there.get().record().mark() == Mark.NONE
        && there.get().record().fileId().equals(file.fileId());
  }

  private String what() {
    return "rename " + src + " over " + dst;
  }

  private IOException changedNothing(IOException cause) {
    return new IOException(what() + " failed and changed nothing", cause);
  }
}
