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
import org.junit.jupiter.api.Test;

/** Review of rados-outcome: scenarios the branch's own tests do not cover. */
class RenameOutcomeReviewTest extends StalledMoveFixture {
  private static final FsPath A = FsPath.parse("/a/a");
  private static final FsPath B = FsPath.parse("/a/b");
  private static final FsPath F = FsPath.parse("/a/f");
  private static final FsPath G = FsPath.parse("/a/g");
  private static final FsPath S = FsPath.parse("/a/s");
  private static final FsPath T = FsPath.parse("/a/t");

  /**
   * MF: the rename over's commit times out unapplied; the mover reads /a/t back (the
   * replaced file), checks its lock (still its own), and then stalls right before its
   * rollback's own read of /a/t. Meanwhile its lease runs out, a settler fences and rolls
   * it back and a later rename over puts the same file at /a/t. The rollback then finds
   * the file at /a/t, returns "committed" with no second lock check, and the mover answers
   * "renamed" for the later holder's rename: what issue 14 finding 1(a) was to stop.
   */
  @Test
  void aRenameOverThatLosesItsLockAfterItsCheckDoesNotClaimALaterRename() throws Exception {
    byte[] sBytes = write(S, 3 * 4096 + 5);
    write(T, 2 * 4096 + 7);
    String sId = reader.probe(S).get().record().fileId();
    FaultInjectingBlobStore m = faults();
    Fault commit = m.on(Op.PUT).keys("n/a/t").nth(1).pause();
    m.on(Op.PUT).keys("n/a/t").nth(1).failBefore(); // not applied, answered with a timeout
    Future<Object> mover = renameOverInThread(m, S, T);
    commit.awaitReached();
    // the 1st read of /a/t after the commit is the read-back, the 2nd rollBack's own read
    Fault rollBackRead = m.on(Op.READ, Op.STAT).keys("n/a/t").nth(2).pause();
    commit.release();
    rollBackRead.awaitReached(); // past commit()'s stillHeld check, lock still its own
    awaitLeaseOver();
    reader.renameOver(S, reader.probe(T).get()); // settles (fence, roll back), renames
    rollBackRead.release();
    Object outcome = mover.get(30, TimeUnit.SECONDS);
    String state = "the rename over: " + outcome + "; /a/s's file at " + namesOf(sId, S, T);
    assertEquals(List.of(T), namesOf(sId, S, T), state);
    assertArrayEquals(sBytes, readAll(T), state);
    assertTrue(outcome instanceof RenameOutcomeUnknownException,
        "a later holder's rename must not be reported as this one's: " + state);
  }

  /**
   * Helper's open point 4: a rename over /a/a by /a/b (B's file F put over /a/a, /a/b not
   * yet removed) while another client renames /a/a over /a/b, having probed /a/b (F). That
   * client reads /a/a = F = its target's id, takes it for one file under two names, waits
   * for the lock (or settles it), and then throws TwoNamesOneFileException "both hold one
   * file ... deleting either removes the data of both" although /a/b is gone and F has
   * one name: the target changed (TargetChangedException would be true).
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
   * SF: finding 2's late-commit variant. The plain rename's commit (the source rewritten
   * MOVED) times out unapplied; the mover reads the source (still marked) and the
   * destination (its incoming record) back, its lock still its own; then the commit
   * applies late (a timed-out call may) and a reader finishes it (the destination plain,
   * the source removed) before the rollback's read of the source. The rollback finds no
   * source and nothing to undo and the rename says "failed and changed nothing" with the
   * file under its new name, the lock its own throughout.
   */
  @Test
  void aLateCommitFinishedByAReaderBeforeTheRollbackIsReportedAsDone() throws Exception {
    byte[] bytes = write(F, 2 * 4096 + 3);
    String id = reader.probe(F).get().record().fileId();
    FaultInjectingBlobStore m = faults();
    Fault commit = m.on(Op.PUT).keys("n/a/f").nth(2).pause();
    m.on(Op.PUT).keys("n/a/f").nth(2).failBefore(); // answered with a timeout, not yet applied
    Future<Object> mover = renameInThread(m, F, G);
    commit.awaitReached();
    // reads of /a/f after the commit: the read-back, then rollBack's
    Fault rollBackRead = m.on(Op.READ, Op.STAT).keys("n/a/f").nth(2).pause();
    commit.release();
    rollBackRead.awaitReached();
    // the commit whose answer was lost applies now, late, and a reader finishes it
    VersionedRecord marked = reader.readStored("n/a/f", true).orElseThrow();
    assertEquals(Mark.MOVING, marked.record().mark());
    memory.putIfVersion("n/a/f", marked.record().unmarked()
        .marked(Mark.MOVED, "n/a/g", marked.record().moveToken()).encode(), marked.version());
    assertFalse(reader.probe(F).isPresent(), "a reader meets the moved source");
    assertTrue(reader.probe(G).isPresent(), "and the new name");
    rollBackRead.release();
    Object outcome = mover.get(30, TimeUnit.SECONDS);
    String state = "the rename: " + outcome + "; the file at " + namesOf(id, F, G);
    assertEquals(List.of(G), namesOf(id, F, G), state);
    assertArrayEquals(bytes, readAll(G), state);
    assertEquals(Boolean.TRUE, outcome, state);
  }
}
