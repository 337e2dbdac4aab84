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

  /**
   * MUST-FIX (a regression of the plain file rename). MoveSettler's new roll-forward
   * ({@code moving && holdsPlain(dst, id)}: "a rename over a file that committed") applies
   * to every move, and the settler reads the destination BEFORE the source. A settler
   * that read /a/g holding the file plain (a finished rename f -> g), then stalled past
   * its lease, reads /a/f marked MOVING by a LATER plain rename f -> g (the file went g ->
   * f and is moving again) and takes it for a committed rename over: it deletes /a/f. The
   * later rename's commit (the source rewritten MOVED, conditional on its mark) then
   * conflicts and it takes its incoming /a/g back: the file has no name at all. Before the
   * branch the same settler took the mark off /a/f (a fence): the file stayed at /a/f.
   * This is what MarkedMoveStressTest's "one name, not neither" failures are (2 of 6 runs
   * of it on rados-replace here, 0 of 6 on stage6).
   */
  @Test
  void aStaleSettlerDeletesTheSourceOfALaterPlainRename() throws Exception {
    FsPath f = FsPath.parse("/a/f");
    FsPath g = FsPath.parse("/a/g");
    byte[] bytes = write(f, 2 * 4096 + 9);
    String id = reader.probe(f).get().record().fileId();

    FaultInjectingBlobStore m1 = faults();
    Fault release1 = m1.on(Op.DELETE).keys("d/" + id + "/lock").nth(1).pause();
    Future<Object> mover1 = renameInThread(m1, f, g);
    release1.awaitReached(); // M1 finished f -> g (g plain, f gone), its lock still there

    awaitLeaseOver();
    DataLocks.Lock l1 = reader.locks().read(id).orElseThrow();
    assertTrue(l1.interruptedMove(System.currentTimeMillis()), l1.toString());
    FaultInjectingBlobStore m2 = faults();
    Fault readSource = m2.on(Op.READ).keys("n/a/f").nth(1).pause();
    Future<Object> settler1 = threads.submit(() -> MoveSettler.settle(namespace(m2), l1));
    readSource.awaitReached(); // S1 read /a/g (the file, plain); about to read /a/f

    awaitLeaseOver(); // S1's lease runs out
    assertTrue(reader.rename(g, f), "M2 (settling S1's lock first) renames g back to f");
    FaultInjectingBlobStore m3 = faults();
    Fault incoming3 = m3.on(Op.PUT).keys("n/a/g").nth(1).pause();
    Future<Object> mover3 = renameInThread(m3, f, g);
    incoming3.awaitReached(); // M3 marked /a/f MOVING to /a/g

    readSource.release();
    Object s1 = settler1.get(30, TimeUnit.SECONDS);
    incoming3.release();
    Object out3 = mover3.get(30, TimeUnit.SECONDS);
    release1.release();
    Object out1 = mover1.get(30, TimeUnit.SECONDS);
    awaitLeaseOver();
    reader.finishInterruptedRenames();

    List<FsPath> names = namesOf(id, f, g);
    String state = "S1: " + s1 + "; M3: " + out3 + "; M1: " + out1 + "; names " + names;
    assertEquals(1, names.size(), state);
    assertArrayEquals(bytes, readAll(names.get(0)), state);
  }

  /**
   * FINE (passes): the settler's fence of the target against a third client's overwrite of
   * it. M stalls at its commit; S reads both names and pauses before its fence; a client
   * overwrites /a/t (taking over M's lapsed lock on the old /a/t). S's fence, conditional
   * on exactly the version M's lock records, conflicts: it reads again and only takes the
   * mark off; nothing older is put back, and M's late commit changes nothing.
   */
  @Test
  void theFenceNeverPutsBackATargetOverwrittenMeanwhile() throws Exception {
    byte[] sBytes = write(S, 3 * 4096 + 5);
    write(T, 2 * 4096 + 7);
    String sId = reader.probe(S).get().record().fileId();
    String tId = reader.probe(T).get().record().fileId();
    FaultInjectingBlobStore m1 = faults();
    Fault commit1 = m1.on(Op.PUT).keys("n/a/t").nth(1).pause();
    Future<Object> mover1 = renameOverInThread(m1);
    commit1.awaitReached();
    awaitLeaseOver();
    DataLocks.Lock l1 = reader.locks().read(sId).orElseThrow();
    FaultInjectingBlobStore m2 = faults();
    Fault fence = m2.on(Op.PUT).keys("n/a/t").nth(1).pause();
    Future<Object> settler = threads.submit(() -> MoveSettler.settle(namespace(m2), l1));
    fence.awaitReached();
    byte[] zBytes = new byte[4096 + 3];
    new java.util.Random(9).nextBytes(zBytes);
    try (FileWriter w = reader.create(T, true)) {
      w.write(zBytes, 0, zBytes.length);
    }
    fence.release();
    Object settled = settler.get(30, TimeUnit.SECONDS);
    commit1.release();
    Object out1 = mover1.get(30, TimeUnit.SECONDS);
    String state = "S: " + settled + "; M: " + out1;
    assertEquals(List.of(S), namesOf(sId, S, T), state);
    assertArrayEquals(sBytes, readAll(S), state);
    assertArrayEquals(zBytes, readAll(T), state);
    assertEquals(List.of(), namesOf(tId, S, T), state);
    assertEquals(FileRecord.Mark.NONE,
        reader.readStored("n/a/s", false).orElseThrow().record().mark(), state);
    assertTrue(out1 instanceof TargetChangedException, state);
  }
}
