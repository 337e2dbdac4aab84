package io.blobfs.namespace;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.blobfs.store.FaultInjectingBlobStore;
import io.blobfs.store.FaultInjectingBlobStore.Fault;
import io.blobfs.store.FaultInjectingBlobStore.Op;
import java.io.IOException;
import java.util.List;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * A rename over an existing file without transactions ({@link MarkedReplace}) that stalls
 * past its lease at each of its steps while a settler takes its lock: the settler rolls
 * it forward or back, and the stalled mover's late steps change nothing. Every test ends
 * with each file under at most one name, the source's data kept, and the replaced file
 * never back once it was replaced. (Crashes at every store call, then each way of
 * recovering, are {@code InterruptedMoveTest.aRenameOverAFileCutOffAtAnyCallIsSettled}.)
 */
class StalledReplaceTest extends StalledMoveFixture {
  private static final FsPath S = FsPath.parse("/a/s");
  private static final FsPath T = FsPath.parse("/a/t");

  private byte[] sBytes;
  private byte[] tBytes;
  private String sId;
  private String tId;

  private void writeBoth() throws IOException {
    sBytes = write(S, 3 * 4096 + 5);
    tBytes = write(T, 2 * 4096 + 7);
    sId = reader.probe(S).get().record().fileId();
    tId = reader.probe(T).get().record().fileId();
  }

  private Future<Object> renameOverInThread(FaultInjectingBlobStore m) throws IOException {
    FileInfo target = reader.probe(T).get();
    return threads.submit(() -> {
      try {
        namespace(m).renameOver(S, target);
        return "renamed";
      } catch (IOException e) {
        return e;
      }
    });
  }

  private void settleStalledLock() throws Exception {
    awaitLeaseOver();
    DataLocks.Lock lock = reader.locks().read(sId).orElseThrow();
    assertTrue(lock.interruptedMove(System.currentTimeMillis()), lock.toString());
    assertTrue(MoveSettler.settle(reader, lock), "the settler settles the stalled move");
  }

  /**
   * From the review of rados-move5 (S-b, {@code Move5ReviewTest} on its branch): the
   * rename over a file stalls at its put over /a/t, a settler takes its lock, the late put
   * lands, and a client deletes /a/t before the mover looks again. Before, the mover
   * (settleLostLock) took the failure of the plain rename's rules for "changed nothing"
   * and put the replaced record back: the client's delete of /a/t answered true, yet /a/t
   * was back with the old target's bytes. Now the settler fences the put: it never lands,
   * the client deletes the old /a/t, and nothing brings it back.
   */
  @Test
  void aFencedRenameOverWhoseCopyIsDeletedDoesNotBringTheTargetBack() throws Exception {
    writeBoth();
    FaultInjectingBlobStore m = faults();
    Fault put = m.on(Op.PUT).keys("n/a/t").nth(1).pause();
    Future<Object> mover = renameOverInThread(m);
    put.awaitReached();
    settleStalledLock();
    Fault next = m.on(Op.READ, Op.STAT).nth(1).pause();
    put.release();
    next.awaitReached();
    boolean deleted = reader.delete(T, false);
    next.release();
    Object outcome = mover.get(30, TimeUnit.SECONDS);
    String state = "C's delete of /a/t: " + deleted + "; the rename over: " + outcome
        + "; /a/s " + namesOf(sId, S, T) + ", old target at " + namesOf(tId, S, T);
    assertTrue(deleted, state);
    assertEquals(List.of(), namesOf(tId, S, T), state);
    assertEquals(List.of(S), namesOf(sId, S, T), state);
    assertArrayEquals(sBytes, readAll(S), state);
    assertTrue(outcome instanceof IOException, state);
  }

  /**
   * The mover stalls after its commit (the put over /a/t applied), before it removes its
   * source: the settler rolls it forward (removes /a/s, which still carries the move's
   * mark), and a client makes a new /a/s meanwhile. The mover's late removal of the source,
   * conditional on the marked version, leaves the new /a/s alone, and the rename returns.
   * Before this move was marked, a settler had nothing telling it the copy was committed
   * rather than half-made, and the roll-back path could put the replaced file back.
   */
  @Test
  void aRenameOverStalledAfterItsCommitIsRolledForwardAndItsLateDeleteChangesNothing()
      throws Exception {
    writeBoth();
    FaultInjectingBlobStore m = faults();
    Fault delete = m.on(Op.DELETE).keys("n/a/s").nth(1).pause();
    Future<Object> mover = renameOverInThread(m);
    delete.awaitReached();
    assertArrayEquals(sBytes, readAll(T), "committed: /a/t holds the new file");
    settleStalledLock();
    assertFalse(reader.probe(S).isPresent(), "rolled forward: the source is gone");
    byte[] again = write(S, 4096 + 1);
    delete.release();
    Object outcome = mover.get(30, TimeUnit.SECONDS);
    assertEquals("renamed", outcome);
    assertEquals(List.of(T), namesOf(sId, S, T));
    assertArrayEquals(sBytes, readAll(T));
    assertArrayEquals(again, readAll(S), "the late delete left the new /a/s alone");
    assertEquals(List.of(), namesOf(tId, S, T));
  }

  /**
   * The mover stalls before its mark: the settler finds nothing marked and rewrites /a/s
   * unchanged, so the late mark conflicts; the rename over fails having changed nothing,
   * and a rename over tried again then succeeds.
   */
  @Test
  void aRenameOverStalledBeforeItsMarkIsFencedAndCanBeTriedAgain() throws Exception {
    writeBoth();
    FaultInjectingBlobStore m = faults();
    Fault mark = m.on(Op.PUT).keys("n/a/s").nth(1).pause();
    Future<Object> mover = renameOverInThread(m);
    mark.awaitReached();
    settleStalledLock();
    mark.release();
    Object outcome = mover.get(30, TimeUnit.SECONDS);
    assertTrue(outcome instanceof IOException, String.valueOf(outcome));
    assertArrayEquals(sBytes, readAll(S));
    assertArrayEquals(tBytes, readAll(T));
    assertEquals(FileRecord.Mark.NONE,
        reader.readStored("n/a/s", false).orElseThrow().record().mark(), "no mark left");

    reader.renameOver(S, reader.probe(T).get());
    assertEquals(List.of(T), namesOf(sId, S, T));
    assertArrayEquals(sBytes, readAll(T));
    assertEquals(List.of(), namesOf(tId, S, T));
  }

  /**
   * The mover stalls at its commit and the settler rolls it back (the replaced record
   * rewritten, the mark taken off); a second rename over, by another client, then
   * replaces /a/t. The first mover's late put, conditional on the version it probed, must
   * not undo the second rename: /a/t keeps the source's file, once.
   */
  @Test
  void aLateCommitOfAFencedRenameOverDoesNotUndoTheNextOne() throws Exception {
    writeBoth();
    FaultInjectingBlobStore m = faults();
    Fault put = m.on(Op.PUT).keys("n/a/t").nth(1).pause();
    Future<Object> mover = renameOverInThread(m);
    put.awaitReached();
    settleStalledLock();
    assertArrayEquals(tBytes, readAll(T), "rolled back: /a/t is the old file");
    reader.renameOver(S, reader.probe(T).get());
    put.release();
    Object outcome = mover.get(30, TimeUnit.SECONDS);
    assertTrue(outcome instanceof IOException, String.valueOf(outcome));
    assertEquals(List.of(T), namesOf(sId, S, T));
    assertArrayEquals(sBytes, readAll(T));
    assertEquals(List.of(), namesOf(tId, S, T));
  }
}
