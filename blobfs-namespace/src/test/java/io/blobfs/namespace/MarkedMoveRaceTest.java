package io.blobfs.namespace;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.blobfs.namespace.FileRecord.Mark;
import io.blobfs.store.FaultInjectingBlobStore;
import io.blobfs.store.FaultInjectingBlobStore.Fault;
import io.blobfs.store.FaultInjectingBlobStore.Op;
import io.blobfs.store.PutMode;
import io.blobfs.store.StoreLimits;
import io.blobfs.store.TransactionalBlobStore;
import io.blobfs.store.VersionedBytes;
import io.blobfs.store.memory.InMemoryBlobStore;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.FileAlreadyExistsException;
import java.time.Duration;
import java.util.Optional;
import java.util.Random;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Interleavings of a marked file rename ({@link MarkedMove}) with a second mover, a
 * settler ({@link MoveSettler}) and readers, each held at a chosen store call, found by
 * the reviews of the protocol. Every one ends with the file under exactly one name, with
 * its bytes.
 */
class MarkedMoveRaceTest {
  private static final Duration LEASE = Duration.ofMillis(40);
  private static final NamespaceOptions OPTIONS =
      new NamespaceOptions(4096, 1024, 4096, 256, false, 3).withWriterLease(LEASE);
  private static final FsPath F = FsPath.parse("/a/f");
  private static final FsPath G = FsPath.parse("/a/g");

  private InMemoryBlobStore memory;
  private BlobNamespace reader;
  private byte[] bytes;
  private ExecutorService threads;

  @BeforeEach
  void fileAtF() throws IOException {
    memory = new InMemoryBlobStore("race", new StoreLimits(1024, 1L << 30, Integer.MAX_VALUE));
    reader = namespace(faults());
    bytes = new byte[3 * 4096 + 5];
    new Random(1).nextBytes(bytes);
    try (FileWriter w = reader.create(F, true)) {
      w.write(bytes, 0, bytes.length);
    }
    threads = Executors.newFixedThreadPool(2);
  }

  @AfterEach
  void stopThreads() {
    threads.shutdownNow();
  }

  /**
   * Second review, must-fix 1: a fenced mover (R1, slower than its lease) took the
   * incoming record of a second rename of the same file to the same name (R2) for its own
   * and deleted it in its rollback; R2 then committed and the file had no name.
   */
  @Test
  void secondRenameToSameDestination() throws Exception {
    FaultInjectingBlobStore one = faults();
    FaultInjectingBlobStore two = faults();
    Fault r1Create = one.on(Op.PUT).keys("n/a/g").pause();
    Fault r2Commit = two.on(Op.PUT).keys("n/a/f").nth(3).pause();
    Future<Object> r1 = renameInThread(one, F, G);
    r1Create.awaitReached();
    Thread.sleep(LEASE.toMillis() + 10); // past R1's lease, which R2 then settles
    Future<Object> r2 = renameInThread(two, F, G);
    r2Commit.awaitReached();
    r1Create.release();
    Object fenced = r1.get(30, TimeUnit.SECONDS); // false (g taken) or a lost race
    assertFalse(Boolean.TRUE.equals(fenced), "the fenced rename answered true");
    r2Commit.release();
    assertEquals(Boolean.TRUE, r2.get(30, TimeUnit.SECONDS), "the second rename");
    assertOnlyAt(G);
  }

  /**
   * Second review, must-fix 2: a reader of the destination that started after the commit
   * read it incoming, then the source after the mover had finished: it saw neither name.
   */
  @Test
  void readerOfDestinationSeesNeither() throws Exception {
    FaultInjectingBlobStore m = faults();
    FaultInjectingBlobStore r = faults();
    Fault finish = m.on(Op.PUT).keys("n/a/g").nth(2).pause();
    Fault srcRead = r.on(Op.READ).keys("n/a/f").pause();
    Future<Object> mv = renameInThread(m, F, G);
    finish.awaitReached(); // committed: f moved, g incoming
    Future<Boolean> rd = threads.submit(() -> namespace(r).probe(G).isPresent());
    srcRead.awaitReached(); // the reader read g incoming
    finish.release();
    assertEquals(Boolean.TRUE, mv.get(30, TimeUnit.SECONDS));
    srcRead.release();
    assertEquals(Boolean.TRUE, rd.get(30, TimeUnit.SECONDS),
        "a reader that started after the commit saw neither name");
    assertOnlyAt(G);
  }

  /**
   * Third review, must-fix 1: the mover T1 read the source under its lock and stalled
   * past its lease before marking it; a settler S took the lock over and read the source
   * (no mark yet); T1 marked it, created the destination incoming and reached its commit;
   * S read the destination incoming beside the unmarked source it had read, took the
   * record for left over and removed it; T1's commit applied, its rename returned true,
   * and neither name was there (the sweeper would then have deleted the data). Now the
   * settler reads the destination first: the mark it meets on the source afterwards is
   * taken off, which fences T1's commit, and the file stays at the source.
   */
  @Test
  void settlerDeletesIncomingOfAMoveThatThenCommits() throws Exception {
    FaultInjectingBlobStore one = faults();
    FaultInjectingBlobStore two = faults();
    String id = reader.probe(F).get().record().fileId();
    Fault t1Mark = one.on(Op.PUT).keys("n/a/f").nth(1).pause();
    Fault t1Commit = one.on(Op.PUT).keys("n/a/f").nth(2).pause();
    // Where the old settler was between its read of f and its read of g; the new one reads
    // g first, so it is held before it reads either.
    Fault settlerRead = two.on(Op.READ).keys("n/a/g").nth(1).pause();
    BlobNamespace settlerNs = namespace(two);
    Future<Object> t1 = renameInThread(one, F, G);
    t1Mark.awaitReached(); // T1 holds the lock and read f: about to mark it
    Thread.sleep(LEASE.toMillis() + 20); // past T1's lease
    Optional<DataLocks.Lock> lock = settlerNs.locks().read(id);
    assertTrue(lock.isPresent() && lock.get().interruptedMove(System.currentTimeMillis()));
    Future<Boolean> s = threads.submit(() -> MoveSettler.settle(settlerNs, lock.get()));
    settlerRead.awaitReached(); // S took the lock over, about to read g
    t1Mark.release();
    t1Commit.awaitReached(); // T1 marked f, created g incoming and read it back
    settlerRead.release();
    assertEquals(Boolean.TRUE, s.get(30, TimeUnit.SECONDS), "the settler settled");
    t1Commit.release();
    Object outcome = t1.get(30, TimeUnit.SECONDS);
    assertTrue(outcome instanceof IOException, "the fenced rename failed: " + outcome);
    assertOnlyAt(F);
  }

  /**
   * The same settler, held instead between its read of the destination (nothing there
   * yet) and its read of the source: T1 marks, creates its incoming record and reaches
   * its commit meanwhile. The settler, reading the mark, takes it off (T1's commit then
   * fails and T1 removes its own record); it must not leave T1's incoming record behind
   * as the name, nor remove the source.
   */
  @Test
  void settlerBetweenItsTwoReadsFencesAMarkMadeMeanwhile() throws Exception {
    FaultInjectingBlobStore one = faults();
    FaultInjectingBlobStore two = faults();
    String id = reader.probe(F).get().record().fileId();
    Fault t1Mark = one.on(Op.PUT).keys("n/a/f").nth(1).pause();
    Fault t1Commit = one.on(Op.PUT).keys("n/a/f").nth(2).pause();
    Fault settlerSource = two.on(Op.READ).keys("n/a/f").nth(1).pause();
    BlobNamespace settlerNs = namespace(two);
    Future<Object> t1 = renameInThread(one, F, G);
    t1Mark.awaitReached();
    Thread.sleep(LEASE.toMillis() + 20);
    Optional<DataLocks.Lock> lock = settlerNs.locks().read(id);
    assertTrue(lock.isPresent() && lock.get().interruptedMove(System.currentTimeMillis()));
    Future<Boolean> s = threads.submit(() -> MoveSettler.settle(settlerNs, lock.get()));
    settlerSource.awaitReached(); // S read g (absent): about to read f
    t1Mark.release();
    t1Commit.awaitReached();
    settlerSource.release();
    assertEquals(Boolean.TRUE, s.get(30, TimeUnit.SECONDS), "the settler settled");
    assertEquals(Mark.NONE, rawMark("n/a/f"), "the settler took the mark off");
    t1Commit.release();
    assertTrue(t1.get(30, TimeUnit.SECONDS) instanceof IOException, "T1 was fenced");
    assertOnlyAt(F);
  }

  /**
   * A settler whose removal of a dead mover's mark conflicts because another client took
   * the mark off first (a second settler, which then died before removing the incoming
   * record): it settles again from what is there now, and removes the incoming record,
   * which names nothing. Before, finding no mark any more, it released the lock with the
   * record left: invisible, but blocking the name for every other file.
   */
  @Test
  void aSettlerWhoseMarkRemovalConflictsStillRemovesTheIncomingRecord() throws Exception {
    String id = reader.probe(F).get().record().fileId();
    // A mover that died right before its commit: its lock (with the move), f marked
    // moving, g incoming.
    VersionedBytes plain = memory.readWithVersion("n/a/f", 1 << 16);
    FileRecord file = FileRecord.decode("n/a/f", plain.bytes(), plain.bytes().length, true);
    reader.locks().takeForRename(id, F, new DataLocks.Move("n/a/f", "n/a/g", plain.version()));
    memory.putIfVersion("n/a/f", file.marked(Mark.MOVING, "n/a/g", 7).encode(),
        plain.version());
    memory.put("n/a/g", file.marked(Mark.INCOMING, "n/a/f", 7).encode(), PutMode.CREATE);
    Thread.sleep(LEASE.toMillis() + 20); // past the dead mover's lease
    FaultInjectingBlobStore settling = faults();
    Fault unmark = settling.on(Op.PUT).keys("n/a/f").pause();
    BlobNamespace settlerNs = namespace(settling);
    Optional<DataLocks.Lock> lock = settlerNs.locks().read(id);
    assertTrue(lock.isPresent() && lock.get().interruptedMove(System.currentTimeMillis()));
    Future<Boolean> s = threads.submit(() -> MoveSettler.settle(settlerNs, lock.get()));
    unmark.awaitReached(); // S read g incoming and f marked: about to take the mark off
    VersionedBytes raw = memory.readWithVersion("n/a/f", 1 << 16);
    FileRecord marked = FileRecord.decode("n/a/f", raw.bytes(), raw.bytes().length, true);
    memory.putIfVersion("n/a/f", marked.unmarked().encode(), raw.version()); // the other one
    unmark.release();
    assertEquals(Boolean.TRUE, s.get(30, TimeUnit.SECONDS), "the settler settled");
    assertFalse(memory.stat("n/a/g").exists(), "the dead move's incoming record is left");
    assertOnlyAt(F);
  }

  /**
   * A commit whose answer is lost (a timeout), that the read-back finds not applied, and
   * that applies after it all the same, while the mover takes its mark back: a store
   * call that timed out may still be applied by the server later. The mover's removal of
   * its mark then conflicts. Before, its rollback removed the incoming record all the
   * same and threw "changed nothing": the source read moved, the destination was gone,
   * and the file had no name. Now the rollback finds the source moved by its own commit
   * and the rename finishes.
   */
  @Test
  void aCommitThatAppliesAfterItsReadBackIsFinished() throws Exception {
    FaultInjectingBlobStore m = faults();
    // Armed first: the failing commit below would hide that call from it otherwise.
    Fault unmark = m.on(Op.PUT).keys("n/a/f").nth(3).pause();
    Fault commit = m.on(Op.PUT).keys("n/a/f").nth(2).failBefore();
    Future<Object> mv = renameInThread(m, F, G);
    unmark.awaitReached(); // the rollback read its mark, about to take it off
    assertEquals(1, commit.fired());
    // The late commit, as the server would apply it: the mover's own record, moved.
    VersionedBytes raw = memory.readWithVersion("n/a/f", 1 << 16);
    FileRecord marked = FileRecord.decode("n/a/f", raw.bytes(), raw.bytes().length, true);
    assertEquals(Mark.MOVING, marked.mark());
    memory.putIfVersion("n/a/f",
        marked.marked(Mark.MOVED, marked.moveKey(), marked.moveToken()).encode(), raw.version());
    unmark.release();
    assertEquals(Boolean.TRUE, mv.get(30, TimeUnit.SECONDS), "the rename committed");
    assertOnlyAt(G);
  }

  /**
   * A committed move's source whose destination no longer holds the file (here: never
   * created; in practice deleted, overwritten or renamed on after the commit, through the
   * name readers saw): a reader meeting the moved source deletes it, and the name is free
   * again. Before (fourth review, must-fix 2), it was kept for good with a warning, and
   * the name could never be made again; the new destination's fate is the file's.
   */
  @Test
  void aMovedSourceWhoseDestinationIsGoneIsRemovedAndItsNameFreed() throws Exception {
    VersionedBytes raw = memory.readWithVersion("n/a/f", 1 << 16);
    FileRecord plain = FileRecord.decode("n/a/f", raw.bytes(), raw.bytes().length, true);
    memory.putIfVersion("n/a/f", plain.marked(Mark.MOVED, "n/a/g", 42).encode(),
        raw.version());
    assertFalse(reader.probe(F).isPresent(), "a moved source reads as gone");
    assertFalse(reader.probe(G).isPresent());
    assertFalse(memory.stat("n/a/f").exists(), "the reader removed the moved source");
    try (FileWriter w = reader.create(F, false)) {
      w.write(new byte[] {1, 2, 3}, 0, 3);
    }
    assertEquals(3, reader.probe(F).get().record().length());
  }

  /**
   * Third review, should-fix 2: an incoming record whose move can never commit (its mover
   * was fenced and died before its own rollback) no longer takes its name from other
   * files: a create there and a rename of another file there remove it and go on. Before,
   * both failed for good (the name existed for the store, not for readers).
   */
  @Test
  void aDeadMovesIncomingRecordNoLongerBlocksItsName() throws Exception {
    leaveIncomingAtG(false);
    byte[] other = new byte[100];
    new Random(2).nextBytes(other);
    try (FileWriter w = reader.create(G, false)) {
      w.write(other, 0, other.length);
    }
    assertArrayEquals(other, readAll(G), "a create where a dead move's record was");
    FsPath h = FsPath.parse("/a/h");
    reader.rename(G, h);
    leaveIncomingAtG(false);
    assertTrue(reader.rename(h, G), "a rename where a dead move's record was");
    assertArrayEquals(other, readAll(G));
    assertArrayEquals(bytes, readAll(F), "the file the dead move was renaming");
  }

  /** An incoming record whose move is still marked on its source keeps its name. */
  @Test
  void aLiveMovesIncomingRecordKeepsItsName() throws Exception {
    leaveIncomingAtG(true);
    assertThrows(FileAlreadyExistsException.class, () -> reader.create(G, false).close());
    assertEquals(Mark.INCOMING, rawMark("n/a/g"), "a live move's record was removed");
    assertEquals(Mark.MOVING, rawMark("n/a/f"));
  }

  /**
   * The records a mover of f to g (token 7) leaves once its incoming record is created:
   * with {@code marked}, f still marked moving (the move may commit); without, f plain
   * (the mark taken back by a settler: the move is dead).
   */
  private void leaveIncomingAtG(boolean marked) throws IOException {
    VersionedBytes raw = memory.readWithVersion("n/a/f", 1 << 16);
    FileRecord file = FileRecord.decode("n/a/f", raw.bytes(), raw.bytes().length, true);
    if (marked) {
      memory.putIfVersion("n/a/f", file.marked(Mark.MOVING, "n/a/g", 7).encode(),
          raw.version());
    }
    memory.put("n/a/g", file.marked(Mark.INCOMING, "n/a/f", 7).encode(), PutMode.CREATE);
    assertFalse(reader.probe(G).isPresent(), "an incoming record is seen");
  }

  private byte[] readAll(FsPath path) throws Exception {
    FileReader in = reader.open(path);
    ByteBuffer got = ByteBuffer.allocate((int) in.length());
    while (got.hasRemaining() && in.read(got.position(), got).get() > 0) {
      // reads until full
    }
    return got.array();
  }

  private FaultInjectingBlobStore faults() {
    return FaultInjectingBlobStore.over(memory, TransactionalBlobStore.class);
  }

  private static BlobNamespace namespace(FaultInjectingBlobStore store) {
    return new BlobNamespace(store.store(), OPTIONS, StoreCallCounters.NONE);
  }

  /** {@code rename(from, to)} on its own client and thread: its answer or its failure. */
  private Future<Object> renameInThread(FaultInjectingBlobStore store, FsPath from, FsPath to) {
    Callable<Object> rename = () -> {
      try {
        return namespace(store).rename(from, to);
      } catch (IOException e) {
        return e;
      }
    };
    return threads.submit(rename);
  }

  /** The file is at {@code at} only, with its bytes, and the other name's object is gone. */
  private void assertOnlyAt(FsPath at) throws Exception {
    FsPath other = at.equals(F) ? G : F;
    assertFalse(reader.probe(other).isPresent(), other + " is still a name");
    assertTrue(reader.probe(at).isPresent(), "the file has no name");
    assertArrayEquals(bytes, readAll(at), "the file's bytes at " + at);
    assertFalse(memory.stat(reader.layout().recordKey(other)).exists(),
        "a record is left at " + other);
  }

  private Mark rawMark(String key) throws IOException {
    byte[] raw = memory.readFully(key, 0, (int) memory.stat(key).size());
    return FileRecord.decode(key, raw, raw.length, true).mark();
  }
}
