package io.blobfs.namespace;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
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
 * Review of rados-replace (MarkedReplace): reproductions. Throw-away, on the reviewer's
 * branch rev-replace.
 */
class ReplaceReviewTest extends StalledMoveFixture {
  private static final FsPath S = FsPath.parse("/a/s");
  private static final FsPath T = FsPath.parse("/a/t");

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

  /**
   * MUST-FIX. A settler that stalls past its own lease, then resumes, takes the mark of a
   * later rename over (another token, another replaced version) off the source without
   * fencing that rename's commit: MarkedReplace's commit is conditional on the target's
   * version, not the source's, so taking the mark off does not stop it. The later rename
   * commits, its delete of the source conflicts, it takes that for "a settler rolled me
   * forward" and returns: /a/s and /a/t both name one file for good.
   *
   * <p>M1 marks /a/s and stalls at its commit; S1 takes M1's expired lock, reads /a/t
   * (at M1's replaced version) and /a/s (M1's mark), stalls before its fence past its
   * lease; S2 settles S1's lock (fence /a/t, mark off); M2 renames /a/s over /a/t again
   * (lock recording the new version of /a/t), marks /a/s, stalls at its commit; S1 resumes:
   * its fence conflicts, it reads again, finds M2's mark (isAnyMove: any token) and /a/t
   * not at ITS replaced version, so it takes the mark off with no fence; M2's commit lands.
   */
  @Test
  void aStaleSettlerUnmarksALaterRenameOverWhoseCommitThenLands() throws Exception {
    byte[] sBytes = write(S, 3 * 4096 + 5);
    write(T, 2 * 4096 + 7);
    String sId = reader.probe(S).get().record().fileId();

    FaultInjectingBlobStore m1 = faults();
    Fault commit1 = m1.on(Op.PUT).keys("n/a/t").nth(1).pause();
    Future<Object> mover1 = renameOverInThread(m1);
    commit1.awaitReached(); // M1 marked /a/s, about to put over /a/t

    awaitLeaseOver();
    DataLocks.Lock l1 = reader.locks().read(sId).orElseThrow();
    assertTrue(l1.interruptedMove(System.currentTimeMillis()), l1.toString());
    FaultInjectingBlobStore m2 = faults();
    Fault fence1 = m2.on(Op.PUT).keys("n/a/t").nth(1).pause();
    Future<Object> settler1 = threads.submit(() -> MoveSettler.settle(namespace(m2), l1));
    fence1.awaitReached(); // S1 read both names, about to fence /a/t

    awaitLeaseOver(); // S1's lease on the taken-over lock runs out
    DataLocks.Lock ls1 = reader.locks().read(sId).orElseThrow();
    assertTrue(ls1.interruptedMove(System.currentTimeMillis()), ls1.toString());
    assertTrue(MoveSettler.settle(reader, ls1), "S2 settles: /a/t fenced, mark off");

    FaultInjectingBlobStore m3 = faults();
    Fault commit2 = m3.on(Op.PUT).keys("n/a/t").nth(1).pause();
    Future<Object> mover2 = renameOverInThread(m3);
    commit2.awaitReached(); // M2 marked /a/s, about to put over /a/t

    fence1.release();
    Object s1 = settler1.get(30, TimeUnit.SECONDS);
    commit2.release();
    Object out2 = mover2.get(30, TimeUnit.SECONDS);
    commit1.release();
    Object out1 = mover1.get(30, TimeUnit.SECONDS);

    String state = "S1: " + s1 + "; M2: " + out2 + "; M1: " + out1 + "; names of /a/s's file "
        + namesOf(sId, S, T);
    assertEquals("renamed", out2, state);
    assertEquals(List.of(T), namesOf(sId, S, T), state);
    assertArrayEquals(sBytes, readAll(T), state);
  }
}
