package io.blobfs.namespace;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.blobfs.namespace.FileRecord.Mark;
import io.blobfs.store.FaultInjectingBlobStore;
import io.blobfs.store.FaultInjectingBlobStore.Fault;
import io.blobfs.store.FaultInjectingBlobStore.Op;
import java.io.IOException;
import java.util.List;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/**
 * What a rename without transactions answers when it is held part-way (mostly after a
 * commit whose answer was lost) while others act on the file: the commit applying late,
 * a reader finishing it, a settler, a later rename, the source name reused. Every answer
 * must be drawn from reads made before a check that found the lock still the mover's:
 * "renamed" only for its own commit, "failed and changed nothing" only when nothing
 * changed, else {@link RenameOutcomeUnknownException}. The reviews of rados-outcome (the
 * first, second and third; formerly RenameOutcomeReviewTest, RenameOutcomeReview2Test and
 * RenameOutcomeReview3Test), each case failing on the head it reviewed.
 */
class HeldRenameOutcomeTest extends StalledMoveFixture {
  private static final FsPath A = FsPath.parse("/a/a");
  private static final FsPath B = FsPath.parse("/a/b");
  private static final FsPath F = FsPath.parse("/a/f");
  private static final FsPath G = FsPath.parse("/a/g");
  private static final FsPath S = FsPath.parse("/a/s");
  private static final FsPath T = FsPath.parse("/a/t");
  private static final FsPath X = FsPath.parse("/a/x");

  /** Starts a mover on the fault-injecting view it is given. */
  private interface MoverStart {
    Future<Object> start(FaultInjectingBlobStore m) throws IOException;
  }

  /** A mover held at a store call after its commit's answer was lost. */
  private record Held(Future<Object> mover, Fault at) {}

  /**
   * Starts a mover whose commit, the {@code nth} put on {@code key}, is held, then
   * answered with a timeout, not applied; once the commit is reached, arms {@code next}
   * (the mover's later call to hold), lets the commit go, and returns once that call is
   * held.
   */
  private Held lostCommitThenHeld(String key, int nth, MoverStart start,
      Function<FaultInjectingBlobStore, Fault> next) throws Exception {
    FaultInjectingBlobStore m = faults();
    Fault commit = m.on(Op.PUT).keys(key).nth(nth).pause();
    m.on(Op.PUT).keys(key).nth(nth).failBefore(); // not applied, answered with a timeout
    Future<Object> mover = start.start(m);
    commit.awaitReached();
    Fault at = next.apply(m);
    commit.release();
    at.awaitReached();
    return new Held(mover, at);
  }

  /**
   * {@link #lostCommitThenHeld} for the plain rename of /a/f to /a/g: its commit is the
   * second put on /a/f (after the mark).
   */
  private Held renameFToGHeldAt(Function<FaultInjectingBlobStore, Fault> next)
      throws Exception {
    return lostCommitThenHeld("n/a/f", 2, m -> renameInThread(m, F, G), next);
  }

  /**
   * {@link #lostCommitThenHeld} for the rename of /a/s over /a/t: its commit is the first
   * put on /a/t.
   */
  private Held renameSOverTHeldAt(Function<FaultInjectingBlobStore, Fault> next)
      throws Exception {
    return lostCommitThenHeld("n/a/t", 1, m -> renameOverInThread(m, S, T), next);
  }

  /** The held plain rename's commit applies now, late, and a reader finishes it. */
  private void lateCommitFinishedByAReader() throws Exception {
    VersionedRecord marked = reader.readStored("n/a/f", true).orElseThrow();
    assertEquals(Mark.MOVING, marked.record().mark());
    memory.putIfVersion("n/a/f", marked.record().unmarked()
        .marked(Mark.MOVED, "n/a/g", marked.record().moveToken()).encode(), marked.version());
    assertFalse(reader.probe(F).isPresent(), "a reader meets the moved source");
    assertTrue(reader.probe(G).isPresent(), "and finishes it");
  }

  /** The plain rename's file is at /a/g only, with its bytes, and the answer is true. */
  private void renamedToG(String id, byte[] bytes, Object outcome) throws Exception {
    String state = "the rename: " + outcome + "; the file at " + namesOf(id, F, G);
    assertEquals(List.of(G), namesOf(id, F, G), state);
    assertArrayEquals(bytes, readAll(G), state);
    assertEquals(Boolean.TRUE, outcome, state);
  }

  /** As {@link #renamedToG}, but an unknown outcome is also true to the store. */
  private void renamedToGOrUnknown(String id, byte[] bytes, Object outcome) throws Exception {
    String state = "the rename: " + outcome + "; the file at " + namesOf(id, F, G);
    assertEquals(List.of(G), namesOf(id, F, G), state);
    assertArrayEquals(bytes, readAll(G), state);
    assertTrue(Boolean.TRUE.equals(outcome) || outcome instanceof RenameOutcomeUnknownException,
        "its commit moved the file: not 'changed nothing'; " + state);
  }

  /**
   * First review, MF: the rename over's commit times out unapplied; the mover reads /a/t
   * back (the replaced file), checks its lock (still its own), and then stalls right
   * before its rollback's own read of /a/t. Meanwhile its lease runs out, a settler fences
   * and rolls it back and a later rename over puts the same file at /a/t. The rollback
   * then finds the file at /a/t, returns "committed" with no second lock check, and the
   * mover answers "renamed" for the later holder's rename: what issue 14 finding 1(a) was
   * to stop.
   */
  @Test
  void aRenameOverThatLosesItsLockAfterItsCheckDoesNotClaimALaterRename() throws Exception {
    byte[] sBytes = write(S, 3 * 4096 + 5);
    write(T, 2 * 4096 + 7);
    String sId = reader.probe(S).get().record().fileId();
    // the 1st read of /a/t after the commit is the read-back, the 2nd rollBack's own read
    Held h = renameSOverTHeldAt(m -> m.on(Op.READ, Op.STAT).keys("n/a/t").nth(2).pause());
    // past commit()'s stillHeld check, lock still its own
    awaitLeaseOver();
    reader.renameOver(S, reader.probe(T).get()); // settles (fence, roll back), renames
    h.at().release();
    Object outcome = h.mover().get(30, TimeUnit.SECONDS);
    String state = "the rename over: " + outcome + "; /a/s's file at " + namesOf(sId, S, T);
    assertEquals(List.of(T), namesOf(sId, S, T), state);
    assertArrayEquals(sBytes, readAll(T), state);
    assertTrue(outcome instanceof RenameOutcomeUnknownException,
        "a later holder's rename must not be reported as this one's: " + state);
  }

  /**
   * First review, the helper's open point 4: a rename over /a/a by /a/b (B's file F put
   * over /a/a, /a/b not yet removed) while another client renames /a/a over /a/b, having
   * probed /a/b (F). That client reads /a/a = F = its target's id, takes it for one file
   * under two names, waits for the lock (or settles it), and then throws
   * TwoNamesOneFileException "both hold one file ... deleting either removes the data of
   * both" although /a/b is gone and F has one name: the target changed
   * (TargetChangedException would be true). No lost commit: the rename over is held at
   * the removal of its source.
   */
  @Test
  void aRenameOverWhoseTargetWasRenamedOntoItsSourceIsNotTwoNamesOneFile() throws Exception {
    byte[] fBytes = write(B, 2 * 4096 + 9);
    write(A, 4096 + 3);
    String fId = reader.probe(B).get().record().fileId();
    FileInfo probedB = reader.probe(B).get(); // the other client's probe of its target
    FaultInjectingBlobStore m = faults();
    Fault removeSource = m.on(Op.DELETE).keys("n/a/b").pause();
    Future<Object> first = renameOverInThread(m, B, A); // /a/b over /a/a
    removeSource.awaitReached(); // committed: F at /a/a, /a/b still marked, F
    Object second;
    try {
      reader.renameOver(A, probedB);
      second = "renamed";
    } catch (IOException e) {
      second = e;
    }
    removeSource.release();
    Object firstOutcome = first.get(30, TimeUnit.SECONDS);
    String state = "first: " + firstOutcome + "; second: " + second + "; F at "
        + namesOf(fId, A, B);
    assertEquals(List.of(A), namesOf(fId, A, B), state);
    assertArrayEquals(fBytes, readAll(A), state);
    assertFalse(second instanceof TwoNamesOneFileException,
        "F has one name: no two names on one file; " + state);
  }

  /**
   * First review, SF: finding 2's late-commit variant. The plain rename's commit (the
   * source rewritten MOVED) times out unapplied; the mover reads the source (still marked)
   * and the destination (its incoming record) back, its lock still its own; then the
   * commit applies late (a timed-out call may) and a reader finishes it (the destination
   * plain, the source removed) before the rollback's read of the source. The rollback
   * finds no source and nothing to undo and the rename says "failed and changed nothing"
   * with the file under its new name, the lock its own throughout.
   */
  @Test
  void aLateCommitFinishedByAReaderBeforeTheRollbackIsReportedAsDone() throws Exception {
    byte[] bytes = write(F, 2 * 4096 + 3);
    String id = reader.probe(F).get().record().fileId();
    // reads of /a/f after the commit: the read-back, then rollBack's
    Held h = renameFToGHeldAt(m -> m.on(Op.READ, Op.STAT).keys("n/a/f").nth(2).pause());
    lateCommitFinishedByAReader();
    h.at().release();
    renamedToG(id, bytes, h.mover().get(30, TimeUnit.SECONDS));
  }

  /**
   * Second review: MarkedMove, lock held throughout: the commit times out unapplied;
   * read-backs find the mark and the incoming record; rollBack reads the source (still
   * marked) and is held before its unmark put. The commit applies late and a reader
   * finishes it. The unmark put conflicts, the re-read finds no source, and the rename
   * says "failed and changed nothing" with the file at /a/g (should 3's fix covers only a
   * source absent at rollBack's first read).
   */
  @Test
  void aLateCommitFinishedByAReaderDuringTheUnmarkIsReportedAsDone() throws Exception {
    byte[] bytes = write(F, 2 * 4096 + 3);
    String id = reader.probe(F).get().record().fileId();
    // the next put on /a/f: rollBack's unmark
    Held h = renameFToGHeldAt(m -> m.on(Op.PUT).keys("n/a/f").pause());
    lateCommitFinishedByAReader();
    h.at().release();
    renamedToG(id, bytes, h.mover().get(30, TimeUnit.SECONDS));
  }

  /**
   * Second review: MarkedReplace: the commit times out unapplied; read-back and lock check
   * pass; rollBack reads /a/t (the replaced version), checks the lock (held), then stalls
   * before its fence put. The commit applies late; the lease runs out; a settler rolls the
   * move forward (source removed); a later rename moves the file to /a/x. The fence put
   * conflicts, the re-reads find neither name, and the mover says "failed and changed
   * nothing" although its commit moved the file (an answer from reads after its last lock
   * check: must 1's rule, one step later).
   */
  @Test
  void aRenameOverThatLosesItsLockBeforeItsFencePutDoesNotSayChangedNothing()
      throws Exception {
    byte[] sBytes = write(S, 3 * 4096 + 5);
    write(T, 2 * 4096 + 7);
    String sId = reader.probe(S).get().record().fileId();
    FileRecord plain = reader.readStored("n/a/s", true).orElseThrow().record();
    long replacedVersion = reader.readStored("n/a/t", true).orElseThrow().version();
    // the next put on /a/t: rollBack's fence, past its lock check, lock still its own
    Held h = renameSOverTHeldAt(m -> m.on(Op.PUT).keys("n/a/t").pause());
    memory.putIfVersion("n/a/t", plain.encode(), replacedVersion); // the late commit
    awaitLeaseOver();
    MoveSettler.settle(reader, reader.locks().read(sId).orElseThrow()); // rolls forward
    assertTrue(reader.rename(T, X), "a later rename of the file, under a new lock");
    h.at().release();
    Object outcome = h.mover().get(30, TimeUnit.SECONDS);
    String state = "the rename over: " + outcome + "; /a/s's file at " + namesOf(sId, S, T, X);
    assertEquals(List.of(X), namesOf(sId, S, T, X), state);
    assertArrayEquals(sBytes, readAll(X), state);
    assertTrue(outcome instanceof RenameOutcomeUnknownException || "renamed".equals(outcome),
        "its commit moved the file: not 'changed nothing'; " + state);
  }

  /**
   * Third review: MarkedMove.rollBack, lock held throughout, answered "failed and changed
   * nothing" for a late commit a reader finished when the source name had been reused
   * since (a new file created at /a/f, as log rotation does): the fix of the second read
   * the destination only when the source was absent. Late commit, reader finishes it,
   * /a/f re-created; all before the unmark put.
   */
  @Test
  void aLateCommitFinishedThenTheSourceNameReusedDuringTheUnmarkIsReportedAsDone()
      throws Exception {
    byte[] bytes = write(F, 2 * 4096 + 3);
    String id = reader.probe(F).get().record().fileId();
    // the next put on /a/f: rollBack's unmark
    Held h = renameFToGHeldAt(m -> m.on(Op.PUT).keys("n/a/f").pause());
    lateCommitFinishedByAReader();
    write(F, 100); // a new file under the old name (log rotation)
    h.at().release();
    renamedToGOrUnknown(id, bytes, h.mover().get(30, TimeUnit.SECONDS));
  }

  /**
   * Third review: as above, all after commit()'s lock check and before rollBack's first
   * read of the source.
   */
  @Test
  void aLateCommitFinishedThenTheSourceNameReusedBeforeTheRollBackIsReportedAsDone()
      throws Exception {
    byte[] bytes = write(F, 2 * 4096 + 3);
    String id = reader.probe(F).get().record().fileId();
    // the next read of the lock: commit()'s check after the read-backs (held before it runs)
    Held h = renameFToGHeldAt(m -> m.on(Op.READ, Op.STAT)
        .keys(Pattern.quote(reader.locks().key(id))).pause());
    lateCommitFinishedByAReader();
    write(F, 100); // a new file under the old name (log rotation)
    h.at().release();
    renamedToGOrUnknown(id, bytes, h.mover().get(30, TimeUnit.SECONDS));
  }
}
