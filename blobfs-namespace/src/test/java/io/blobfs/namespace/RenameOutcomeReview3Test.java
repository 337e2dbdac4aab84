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
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/**
 * Third review of rados-outcome: MarkedMove.rollBack, lock held throughout, answers
 * "failed and changed nothing" for a late commit a reader finished when the source name
 * has been reused since (a new file created at /a/f, as log rotation does): the fix reads
 * the destination only when the source is absent.
 */
class RenameOutcomeReview3Test extends StalledMoveFixture {
  private static final FsPath F = FsPath.parse("/a/f");
  private static final FsPath G = FsPath.parse("/a/g");

  /** Late commit, reader finishes it, /a/f re-created; all before the unmark put. */
  @Test
  void aLateCommitFinishedThenTheSourceNameReusedDuringTheUnmarkIsReportedAsDone()
      throws Exception {
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
    lateCommitFinishedAndNameReused();
    unmark.release();
    check(id, bytes, mover.get(30, TimeUnit.SECONDS));
  }

  /**
   * Late commit, reader finishes it, /a/f re-created; all after commit()'s lock check and
   * before rollBack's first read of the source.
   */
  @Test
  void aLateCommitFinishedThenTheSourceNameReusedBeforeTheRollBackIsReportedAsDone()
      throws Exception {
    byte[] bytes = write(F, 2 * 4096 + 3);
    String id = reader.probe(F).get().record().fileId();
    FaultInjectingBlobStore m = faults();
    Fault commit = m.on(Op.PUT).keys("n/a/f").nth(2).pause();
    m.on(Op.PUT).keys("n/a/f").nth(2).failBefore();
    Future<Object> mover = renameInThread(m, F, G);
    commit.awaitReached();
    // the next read of the lock: commit()'s check after the read-backs (held before it runs)
    Fault check = m.on(Op.READ, Op.STAT).keys(Pattern.quote(reader.locks().key(id))).pause();
    commit.release();
    check.awaitReached();
    lateCommitFinishedAndNameReused();
    check.release();
    check(id, bytes, mover.get(30, TimeUnit.SECONDS));
  }

  private void lateCommitFinishedAndNameReused() throws Exception {
    VersionedRecord marked = reader.readStored("n/a/f", true).orElseThrow();
    assertEquals(Mark.MOVING, marked.record().mark());
    memory.putIfVersion("n/a/f", marked.record().unmarked()
        .marked(Mark.MOVED, "n/a/g", marked.record().moveToken()).encode(), marked.version());
    assertFalse(reader.probe(F).isPresent(), "a reader meets the moved source");
    assertTrue(reader.probe(G).isPresent(), "and finishes it");
    write(F, 100); // a new file under the old name (log rotation)
  }

  private void check(String id, byte[] bytes, Object outcome) throws Exception {
    String state = "the rename: " + outcome + "; the file at " + namesOf(id, F, G);
    assertEquals(List.of(G), namesOf(id, F, G), state);
    assertArrayEquals(bytes, readAll(G), state);
    assertTrue(Boolean.TRUE.equals(outcome) || outcome instanceof RenameOutcomeUnknownException,
        "its commit moved the file: not 'changed nothing'; " + state);
  }
}
