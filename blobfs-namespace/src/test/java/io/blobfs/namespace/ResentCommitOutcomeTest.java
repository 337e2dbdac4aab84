package io.blobfs.namespace;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.blobfs.store.FaultInjectingBlobStore;
import io.blobfs.store.FaultInjectingBlobStore.Fault;
import io.blobfs.store.FaultInjectingBlobStore.Op;
import java.util.List;
import java.util.Random;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * Leftover B of issue 14 (pinned by the review of rados-final): the proof "source
 * untouched => nothing changed" holds only if the source is read after the destination.
 * This pins that order: the commit's first try lands (a resent call then conflicts), the
 * mover stalls before its rollback's
 * read of /a/t, a settler rolls the rename forward (/a/s removed), and another client
 * overwrites /a/t. The rename happened: the mover must not say "nothing was changed".
 */
class ResentCommitOutcomeTest extends StalledMoveFixture {
  private static final FsPath S = FsPath.parse("/a/s");
  private static final FsPath T = FsPath.parse("/a/t");

  @Test
  void aRenameOverWhoseResentCommitConflictedAfterLandingIsNotNothingChanged()
      throws Exception {
    write(S, 3 * 4096 + 5);
    write(T, 2 * 4096 + 7);
    String sId = reader.probe(S).get().record().fileId();
    FaultInjectingBlobStore m = faults();
    Fault commit = m.on(Op.PUT).keys("n/a/t").pause();
    Future<Object> mover = renameOverInThread(m, S, T);
    commit.awaitReached();
    // the commit's first try lands unseen: the mover's call (its resend) then conflicts
    VersionedRecord t = reader.readStored("n/a/t", true).orElseThrow();
    VersionedRecord marked = reader.readStored("n/a/s", true).orElseThrow();
    memory.putIfVersion("n/a/t", marked.record().unmarked().encode(), t.version());
    assertEquals(List.of(S, T), namesOf(sId, S, T), "committed: both names hold the file");
    Fault rollBackRead = m.on(Op.READ, Op.STAT).keys("n/a/t").pause();
    commit.release();
    rollBackRead.awaitReached(); // the commit conflicted; the rollback's read of /a/t held
    awaitLeaseOver();
    assertTrue(MoveSettler.settle(reader, reader.locks().read(sId).orElseThrow()),
        "a settler rolls the committed rename forward");
    assertFalse(reader.probe(S).isPresent(), "rolled forward: /a/s removed");
    byte[] g = new byte[777];
    new Random(7).nextBytes(g);
    try (FileWriter w = reader.create(T, true)) { // another client overwrites /a/t
      w.write(g, 0, g.length);
    }
    rollBackRead.release();
    Object outcome = mover.get(30, TimeUnit.SECONDS);
    String state = "the rename over: " + outcome + "; /a/s's file at " + namesOf(sId, S, T);
    assertArrayEquals(g, readAll(T), state);
    assertFalse(outcome instanceof TargetChangedException,
        "its commit applied: not 'nothing was changed'; " + state);
    assertFalse(outcome instanceof MarkedReplace.TargetRewrittenException, state);
    assertTrue(outcome instanceof RenameOutcomeUnknownException || "renamed".equals(outcome),
        state);
  }
}
