package io.blobfs.namespace;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.blobfs.store.FaultInjectingBlobStore;
import io.blobfs.store.FaultInjectingBlobStore.Fault;
import io.blobfs.store.FaultInjectingBlobStore.Op;
import java.io.IOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/**
 * What a rename without transactions tells its caller when the answer of its commit is
 * lost (a timeout: the call may or may not have applied) and others act on the file before
 * the mover reads back (issue 14, "RADOS renames that report their true outcome"). The
 * commit is held by a pause, then applied or not and answered with a timeout; the
 * read-back is held by a second pause while a reader, a settler or a later rename acts.
 * The mover must say "renamed" only when its own move did it, "failed and changed nothing"
 * only when it did not, and {@link RenameOutcomeUnknownException} when its lock was taken
 * meanwhile and nothing on the names can tell; in that case it writes nothing.
 */
class RenameOutcomeTest extends StalledMoveFixture {
  private static final FsPath F = FsPath.parse("/a/f");
  private static final FsPath G = FsPath.parse("/a/g");
  private static final FsPath H = FsPath.parse("/a/h");
  private static final FsPath S = FsPath.parse("/a/s");
  private static final FsPath T = FsPath.parse("/a/t");

  /**
   * Holds the {@code nth} put on {@code key} of the store {@code m}; once it is reached,
   * lets it go on applied ({@code applied}) or not, answered with a timeout either way,
   * and holds the mover's next read of {@code readKey} (its read-back), which is returned
   * once reached.
   */
  private static Fault lostAnswerThenHeldReadBack(FaultInjectingBlobStore m, Fault held,
      String readKey) throws InterruptedException {
    held.awaitReached();
    Fault readBack = m.on(Op.READ, Op.STAT).keys(readKey).pause();
    held.release();
    readBack.awaitReached();
    return readBack;
  }

  private static Fault holdPut(FaultInjectingBlobStore m, String key, int nth,
      boolean applied) {
    Fault held = m.on(Op.PUT).keys(key).nth(nth).pause();
    Fault lost = m.on(Op.PUT).keys(key).nth(nth);
    if (applied) {
      lost.applyThenFail();
    } else {
      lost.failBefore();
    }
    return held;
  }

  private byte[] bytes;
  private String id;
  /** The mover's view of the store, to count what it writes once its lock is lost. */
  private FaultInjectingBlobStore moverStore;

  /**
   * From now on, counts the mover's writes to the names (puts and deletes of records):
   * with its lock lost, it must make none (its lock's own conditional release aside).
   */
  private Fault countNameWrites() {
    return moverStore.on(Op.PUT, Op.DELETE, Op.WRITE, Op.TRUNCATE).keys("n/.*").always()
        .delay(Duration.ZERO);
  }

  /**
   * Writes /a/f and starts its rename to /a/g whose commit (the second put on /a/f, after
   * the mark) applies and is answered with a timeout; returns its read-back, held, once a
   * reader has met the moved source and so finished the move (the mover in
   * {@code mover}).
   */
  private Fault renameFinishedByAReaderWhileHeldAtItsReadBack(List<Future<Object>> mover)
      throws Exception {
    bytes = write(F, 2 * 4096 + 3);
    id = reader.probe(F).get().record().fileId();
    FaultInjectingBlobStore m = faults();
    moverStore = m;
    Fault commit = holdPut(m, "n/a/f", 2, true);
    mover.add(renameInThread(m, F, G));
    Fault readBack = lostAnswerThenHeldReadBack(m, commit, "n/a/f");
    assertFalse(reader.probe(F).isPresent(), "a reader meets the moved source");
    return readBack;
  }

  /**
   * Finding 2: the plain rename's commit (the source rewritten MOVED, the second put on
   * /a/f after the mark) applies and its answer is lost; before the mover reads back, a
   * reader meets the moved source and finishes the move (/a/g made plain, /a/f removed).
   * The mover's lock is still its own: the file plain at /a/g with its id can only be
   * this move's. Before the fix the read-back found no source, the rollback found nothing
   * to undo, and the rename reported "failed and changed nothing" with the file at /a/g.
   */
  @Test
  void aCommitWhoseAnswerIsLostAndThatAReaderFinishedIsReportedAsDone() throws Exception {
    List<Future<Object>> movers = new ArrayList<>();
    Fault readBack = renameFinishedByAReaderWhileHeldAtItsReadBack(movers);
    Future<Object> mover = movers.get(0);
    assertEquals(FileRecord.Mark.NONE,
        reader.readStored("n/a/g", false).orElseThrow().record().mark(),
        "and finishes the move: /a/g plain");
    assertFalse(reader.readStored("n/a/f", false).isPresent(), "/a/f removed");
    readBack.release();
    Object outcome = mover.get(30, TimeUnit.SECONDS);
    String state = "the rename: " + outcome + "; the file at " + namesOf(id, F, G);
    assertEquals(Boolean.TRUE, outcome, state);
    assertEquals(List.of(G), namesOf(id, F, G), state);
    assertArrayEquals(bytes, readAll(G), state);
    assertTrue(reader.locks().read(id).isEmpty(), "the mover released its lock");
  }

  /**
   * Finding 2, the lock lost: as above, then the mover stalls past its lease and a later
   * rename of the same file (/a/g to /a/h) takes its lock. Nothing on the names tells
   * whose rename put the file where it is: the mover says so, typed, and writes nothing.
   * Before, it said "failed and changed nothing".
   */
  @Test
  void aCommitWhoseAnswerIsLostAndWhoseLockWasTakenIsReportedUnknown() throws Exception {
    List<Future<Object>> movers = new ArrayList<>();
    Fault readBack = renameFinishedByAReaderWhileHeldAtItsReadBack(movers);
    Future<Object> mover = movers.get(0);
    awaitLeaseOver();
    assertTrue(reader.rename(G, H), "a later rename of the file, under a new lock");
    Fault writes = countNameWrites();
    readBack.release();
    Object outcome = mover.get(30, TimeUnit.SECONDS);
    String state = "the rename: " + outcome + "; the file at " + namesOf(id, F, G, H);
    assertTrue(outcome instanceof RenameOutcomeUnknownException, state);
    assertEquals(0, writes.fired(), "writes nothing after its lock is lost; " + state);
    assertEquals(List.of(H), namesOf(id, F, G, H), state);
    assertArrayEquals(bytes, readAll(H), state);
  }

  private byte[] sBytes;
  private String sId;
  private String tId;

  /**
   * Writes /a/s and /a/t and starts a rename of /a/s over /a/t whose commit (the put over
   * /a/t) is answered with a timeout, {@code applied} or not; returns its read-back of
   * /a/t, held, with the mover's lease run out.
   */
  private Fault renameOverHeldAtItsReadBack(boolean applied, List<Future<Object>> mover)
      throws Exception {
    sBytes = write(S, 3 * 4096 + 5);
    write(T, 2 * 4096 + 7);
    sId = reader.probe(S).get().record().fileId();
    tId = reader.probe(T).get().record().fileId();
    FaultInjectingBlobStore m = faults();
    moverStore = m;
    Fault commit = holdPut(m, "n/a/t", 1, applied);
    mover.add(renameOverInThread(m, S, T));
    Fault readBack = lostAnswerThenHeldReadBack(m, commit, "n/a/t");
    awaitLeaseOver();
    return readBack;
  }

  /** Lets the held read-back go; the mover must answer the unknown outcome. */
  private void assertUnknownWithTheFileAt(FsPath at, Fault readBack, Future<Object> mover)
      throws Exception {
    Fault writes = countNameWrites();
    readBack.release();
    Object outcome = mover.get(30, TimeUnit.SECONDS);
    String state = "the rename over: " + outcome + "; /a/s's file at " + namesOf(sId, S, T);
    assertTrue(outcome instanceof RenameOutcomeUnknownException, state);
    assertEquals(0, writes.fired(), "writes nothing after its lock is lost; " + state);
    assertEquals(List.of(at), namesOf(sId, S, T), state);
    assertArrayEquals(sBytes, readAll(at), state);
    assertEquals(List.of(), namesOf(tId, S, T), state);
  }

  /**
   * Finding 1(a): the rename over's commit (the put over /a/t) times out unapplied; the
   * mover stalls past its lease before it reads /a/t back; a settler fences and rolls it
   * back, and a later rename over puts the same file at /a/t. Before the fix the mover
   * found its file at /a/t and said "renamed": a later rename's doing, under a lock that
   * was no longer its own. Now it says the outcome is unknown, and writes nothing.
   */
  @Test
  void aRenameOverThatLostItsLockDoesNotClaimALaterRenamesCommit() throws Exception {
    List<Future<Object>> mover = new ArrayList<>();
    Fault readBack = renameOverHeldAtItsReadBack(false, mover);
    reader.renameOver(S, reader.probe(T).get()); // settles the lock first, then renames
    assertUnknownWithTheFileAt(T, readBack, mover.get(0));
  }

  /**
   * Finding 1(b): the commit applies and its answer is lost; the mover stalls past its
   * lease; a settler rolls the rename forward and a later rename takes the file back to
   * /a/s. The mover reads /a/t (not its file any more) and, before the fix, rolled back
   * and said "failed and changed nothing", although its rename had happened. Now: unknown,
   * and no write.
   */
  @Test
  void aRenameOverThatLostItsLockDoesNotSayItChangedNothing() throws Exception {
    List<Future<Object>> mover = new ArrayList<>();
    Fault readBack = renameOverHeldAtItsReadBack(true, mover);
    DataLocks.Lock lock = reader.locks().read(sId).orElseThrow();
    assertTrue(MoveSettler.settle(reader, lock), "a settler rolls the rename forward");
    assertFalse(reader.probe(S).isPresent(), "rolled forward: /a/s removed");
    assertTrue(reader.rename(T, S), "another client renames the file back");
    assertUnknownWithTheFileAt(S, readBack, mover.get(0));
    assertFalse(reader.probe(T).isPresent());
  }

  /**
   * Writes /a/s, /a/t and /a/h and starts a rename of /a/s over /a/t whose commit (the put
   * over /a/t) conflicts: /a/h's record is put at /a/t just before it, by a client that
   * takes no lock. Returns the rollback's read of /a/t, held, with the mover's lease run
   * out (the mover in {@code mover}).
   */
  private Fault renameOverConflictedByAThirdFileHeldAtItsRollBack(List<Future<Object>> mover)
      throws Exception {
    sBytes = write(S, 3 * 4096 + 5);
    write(T, 2 * 4096 + 7);
    write(H, 4096 + 1);
    sId = reader.probe(S).get().record().fileId();
    FaultInjectingBlobStore m = faults();
    moverStore = m;
    Fault commit = m.on(Op.PUT).keys("n/a/t").pause();
    mover.add(renameOverInThread(m, S, T));
    commit.awaitReached();
    VersionedRecord t = reader.readStored("n/a/t", true).orElseThrow();
    memory.putIfVersion("n/a/t", reader.readStored("n/a/h", true).orElseThrow().record()
        .encode(), t.version());
    Fault rollBackRead = m.on(Op.READ, Op.STAT).keys("n/a/t").pause();
    commit.release();
    rollBackRead.awaitReached(); // the commit conflicted; the rollback's read is held
    awaitLeaseOver();
    return rollBackRead;
  }

  /**
   * Should 4 of the review of rados-outcome: the rename over's commit conflicts (a client
   * that takes no lock put a third file at /a/t meanwhile); the mover stalls past its
   * lease before its rollback reads /a/t, and a settler rolls it back. A conflict does not
   * prove the commit never applied (a resent call may have landed first, then been
   * overwritten), so the mover cannot say "nothing was changed": before, it threw
   * TargetChangedException, which BlobFileSystem retries. Now: unknown, and no write.
   */
  @Test
  void aRenameOverWhoseCommitConflictedAndThatLostItsLockIsReportedUnknown() throws Exception {
    List<Future<Object>> movers = new ArrayList<>();
    Fault rollBackRead = renameOverConflictedByAThirdFileHeldAtItsRollBack(movers);
    Future<Object> mover = movers.get(0);
    MoveSettler.settle(reader, reader.locks().read(sId).orElseThrow()); // rolls it back
    Fault writes = countNameWrites();
    rollBackRead.release();
    Object outcome = mover.get(30, TimeUnit.SECONDS);
    String state = "the rename over: " + outcome + "; /a/s's file at " + namesOf(sId, S, T);
    assertTrue(outcome instanceof RenameOutcomeUnknownException, state);
    assertEquals(List.of(S), namesOf(sId, S, T), state);
    assertArrayEquals(sBytes, readAll(S), state);
    assertEquals(0, writes.fired(), "writes nothing after its lock is lost; " + state);
  }

  /**
   * Leftover B of issue 14: as above, but the lock is taken over by a settler that has not
   * acted yet when the mover reads (it stalled right after taking the lock). The mover's
   * rollback reads /a/t (the third file), then /a/s: still its own mark at the marked
   * version. Had the commit applied, /a/t could have changed since only through the
   * file's lock, whose taker removes the source first; so nothing changed, and the commit
   * can no longer apply (/a/t left the replaced version). The mover says so
   * (TargetChangedException, which BlobFileSystem retries on the new target) and writes
   * nothing; the holder of the lock takes the mark off. Before: unknown.
   */
  @Test
  void aRenameOverWhoseCommitConflictedAndWhoseMarkIsUntouchedChangedNothing()
      throws Exception {
    List<Future<Object>> movers = new ArrayList<>();
    Fault rollBackRead = renameOverConflictedByAThirdFileHeldAtItsRollBack(movers);
    Future<Object> mover = movers.get(0);
    byte[] hBytes = readAll(H);
    String hId = reader.probe(H).get().record().fileId();
    DataLocks.Lock expired = reader.locks().read(sId).orElseThrow();
    assertTrue(reader.locks().takeOver(expired).isPresent(), "a settler takes the lock");
    Fault writes = countNameWrites();
    rollBackRead.release();
    Object outcome = mover.get(30, TimeUnit.SECONDS);
    String state = "the rename over: " + outcome + "; /a/s's file at " + namesOf(sId, S, T);
    assertTrue(outcome instanceof TargetChangedException, state);
    assertEquals(0, writes.fired(), "writes nothing after its lock is lost; " + state);
    assertEquals(List.of(S), namesOf(sId, S, T), state);
    assertArrayEquals(sBytes, readAll(S), state);
    assertEquals(List.of(T), namesOf(hId, T), state);
    assertArrayEquals(hBytes, readAll(T), state);
    // the holder of the lock, once its own lease is over, settles: the mark comes off
    awaitLeaseOver();
    assertTrue(MoveSettler.settle(reader, reader.locks().read(sId).orElseThrow()), state);
    assertEquals(FileRecord.Mark.NONE,
        reader.readStored("n/a/s", false).orElseThrow().record().mark(), state);
    assertArrayEquals(sBytes, readAll(S), state);
  }

  /**
   * Should 6 of the review of rados-outcome: the plain rename's commit times out
   * unapplied, and the read of its lock that follows the read-backs fails too. The caller
   * is told the outcome could not be read back, and the lock is kept for its next taker.
   * Before, the raw store error of the lock's read reached the caller.
   */
  @Test
  void aFailedReadOfTheLockAfterALostCommitIsAnOutcomeNotReadBack() throws Exception {
    write(F, 2 * 4096 + 3);
    id = reader.probe(F).get().record().fileId();
    FaultInjectingBlobStore m = faults();
    Fault commit = holdPut(m, "n/a/f", 2, false);
    Future<Object> mover = renameInThread(m, F, G);
    commit.awaitReached();
    m.on(Op.READ, Op.STAT).keys(Pattern.quote(reader.locks().key(id))).failBefore();
    commit.release();
    Object outcome = mover.get(30, TimeUnit.SECONDS);
    assertTrue(outcome instanceof IOException e
        && e.getMessage().contains("outcome could not be read back"), "the rename: " + outcome);
    assertTrue(reader.locks().read(id).isPresent(), "the lock is kept for its next taker");
  }
}
