package io.blobfs.namespace;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.blobfs.namespace.FileRecord.Mark;
import io.blobfs.store.FaultInjectingBlobStore;
import io.blobfs.store.FaultInjectingBlobStore.Fault;
import io.blobfs.store.FaultInjectingBlobStore.Op;
import java.util.List;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/** Second review of rados-outcome: rollback answers drawn from reads after the last check. */
class RenameOutcomeReview2Test extends StalledMoveFixture {
  private static final FsPath F = FsPath.parse("/a/f");
  private static final FsPath G = FsPath.parse("/a/g");
  private static final FsPath S = FsPath.parse("/a/s");
  private static final FsPath T = FsPath.parse("/a/t");
  private static final FsPath X = FsPath.parse("/a/x");

  /**
   * MarkedMove, lock held throughout: the commit times out unapplied; read-backs find the
   * mark and the incoming record; rollBack reads the source (still marked) and is held
   * before its unmark put. The commit applies late and a reader finishes it. The unmark
   * put conflicts, the re-read finds no source, and the rename says "failed and changed
   * nothing" with the file at /a/g (should 3's fix covers only a source absent at
   * rollBack's first read).
   */
  @Test
  void aLateCommitFinishedByAReaderDuringTheUnmarkIsReportedAsDone() throws Exception {
    byte[] bytes = write(F, 2 * 4096 + 3);
    String id = reader.probe(F).get().record().fileId();
    FaultInjectingBlobStore m = faults();
    Fault commit = m.on(Op.PUT).keys("n/a/f").nth(2).pause();
    m.on(Op.PUT).keys("n/a/f").nth(2).failBefore();
    Future<Object> mover = renameInThread(m, F, G);
    commit.awaitReached();
    Fault unmark = m.on(Op.PUT).keys("n/a/f").pause(); // the next put: rollBack's unmark
    commit.release();
    unmark.awaitReached();
    VersionedRecord marked = reader.readStored("n/a/f", true).orElseThrow();
    assertEquals(Mark.MOVING, marked.record().mark());
    memory.putIfVersion("n/a/f", marked.record().unmarked()
        .marked(Mark.MOVED, "n/a/g", marked.record().moveToken()).encode(), marked.version());
    assertFalse(reader.probe(F).isPresent(), "a reader meets the moved source");
    assertTrue(reader.probe(G).isPresent(), "and finishes it");
    unmark.release();
    Object outcome = mover.get(30, TimeUnit.SECONDS);
    String state = "the rename: " + outcome + "; the file at " + namesOf(id, F, G);
    assertEquals(List.of(G), namesOf(id, F, G), state);
    assertArrayEquals(bytes, readAll(G), state);
    assertEquals(Boolean.TRUE, outcome, state);
  }

  /**
   * MarkedReplace: the commit times out unapplied; read-back and lock check pass; rollBack
   * reads /a/t (the replaced version), checks the lock (held), then stalls before its
   * fence put. The commit applies late; the lease runs out; a settler rolls the move
   * forward (source removed); a later rename moves the file to /a/x. The fence put
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
    FaultInjectingBlobStore m = faults();
    Fault commit = m.on(Op.PUT).keys("n/a/t").nth(1).pause();
    m.on(Op.PUT).keys("n/a/t").nth(1).failBefore();
    Future<Object> mover = renameOverInThread(m, S, T);
    commit.awaitReached();
    Fault fence = m.on(Op.PUT).keys("n/a/t").pause(); // the next put: rollBack's fence
    commit.release();
    fence.awaitReached(); // past rollBack's lock check, lock still its own
    memory.putIfVersion("n/a/t", plain.encode(), replacedVersion); // the late commit
    awaitLeaseOver();
    MoveSettler.settle(reader, reader.locks().read(sId).orElseThrow()); // rolls forward
    assertTrue(reader.rename(T, X), "a later rename of the file, under a new lock");
    fence.release();
    Object outcome = mover.get(30, TimeUnit.SECONDS);
    String state = "the rename over: " + outcome + "; /a/s's file at " + namesOf(sId, S, T, X);
    assertEquals(List.of(X), namesOf(sId, S, T, X), state);
    assertArrayEquals(sBytes, readAll(X), state);
    assertTrue(outcome instanceof RenameOutcomeUnknownException || "renamed".equals(outcome),
        "its commit moved the file: not 'changed nothing'; " + state);
  }
}
