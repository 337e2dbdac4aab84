package io.blobfs.namespace;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.blobfs.store.BeforeTimeout;
import io.blobfs.store.BlobStore;
import io.blobfs.store.FaultInjectingBlobStore;
import io.blobfs.store.FaultInjectingBlobStore.Fault;
import io.blobfs.store.FaultInjectingBlobStore.Op;
import io.blobfs.store.ScanPage;
import io.blobfs.store.StoreLimits;
import io.blobfs.store.TransactionalBlobStore;
import io.blobfs.store.memory.InMemoryBlobStore;
import java.io.IOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.TreeMap;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * Without transactions (RADOS' path): a client dies at every store call of a file rename,
 * a directory rename and a recursive delete in turn (from that call on, none of its calls
 * applies, as when a process is killed), and then recovery runs: the operations a user
 * would run next, the recovery command and the sweeper. Each time, every name reads back
 * the bytes it was given, no two names share a file id, no name lacks data, a directory is
 * whole under one name, and a sweep leaves no orphan and no lock.
 *
 * <p>Before the rename's lock recorded its move, a rename cut off between its copy and the
 * source's removal left two names on one file, and deleting or overwriting either
 * destroyed the other's data.
 */
class InterruptedMoveTest {
  private static final int STRIPE = 4096;
  /** The lease of the dead client's locks: recovery waits past it. */
  private static final Duration LEASE = Duration.ofMillis(40);
  private static final NamespaceOptions OPTIONS =
      new NamespaceOptions(STRIPE, 1024, 4096, 256, false, 3).withWriterLease(LEASE);
  private static final Op[] EVERY_CALL = Op.values();

  private InMemoryBlobStore memory;
  private FaultInjectingBlobStore dying;
  private BlobNamespace recovery;
  private final Map<FsPath, byte[]> given = new TreeMap<>();

  private void freshStore() {
    memory = new InMemoryBlobStore("crash", new StoreLimits(1024, 1L << 30, Integer.MAX_VALUE));
    dying = FaultInjectingBlobStore.over(memory, TransactionalBlobStore.class);
    recovery = new BlobNamespace(
        FaultInjectingBlobStore.over(memory, TransactionalBlobStore.class).store(), OPTIONS,
        StoreCallCounters.NONE);
    given.clear();
  }

  /** What runs after the crash, before the checks. */
  enum Recovery { COMMAND, DELETE_SOURCE, DELETE_TARGET, OVERWRITE_SOURCE, RENAME_AGAIN, SWEEP }

  @ParameterizedTest
  @EnumSource(Recovery.class)
  void aFileRenameCutOffAtAnyCallIsSettled(Recovery how) throws Exception {
    for (int length : new int[] {2 * STRIPE + 7, 100}) { // with data blobs, and inline
      cutOffEverywhere(how, length);
    }
  }

  private void cutOffEverywhere(Recovery how, int length) throws Exception {
    FsPath f = FsPath.parse("/a/f");
    FsPath g = FsPath.parse("/a/g");
    int crashes = 0;
    for (int k = 1; ; k++) {
      freshStore();
      write(f, length, k);
      write(FsPath.parse("/a/small"), 100, -k); // inline: no data blobs
      if (!dieAt(k, () -> dyingNamespace().rename(f, g))) {
        break; // the rename needs fewer calls: every point has been cut
      }
      crashes++;
      // Atomic to readers even cut off: exactly one of the two names, with the bytes.
      boolean atSource = recovery.probe(f).isPresent();
      assertTrue(atSource != recovery.probe(g).isPresent(), "rename of " + length
          + " B cut off at call " + k + ": one name, not " + (atSource ? "both" : "neither"));
      assertArrayEquals(given.get(f), NamespaceSoak.readWhole(recovery,
          recovery.getFileInfo(atSource ? f : g)), "cut off at call " + k);
      Thread.sleep(LEASE.toMillis() + 5);
      byte[] old = given.get(f);
      boolean deleted = false;
      switch (how) {
        case COMMAND -> recovery.finishInterruptedRenames();
        case DELETE_SOURCE -> deleted = recovery.delete(f, false);
        case DELETE_TARGET -> deleted = recovery.delete(g, false);
        case OVERWRITE_SOURCE -> write(f, STRIPE + 3, 1000 + k);
        case RENAME_AGAIN -> recovery.rename(f, g);
        case SWEEP -> { }
      }
      // The file is under one of its names, whichever the recovery left, or deleted.
      if (deleted) {
        given.remove(f);
      }
      if (recovery.probe(g).isPresent()) {
        given.put(g, old);
        if (how != Recovery.OVERWRITE_SOURCE) {
          given.remove(f);
        }
      }
      checkEverything("rename of " + length + " B cut off at call " + k + ", then " + how,
          how == Recovery.SWEEP);
    }
    assertTrue(crashes >= 8, "a rename makes at least 8 calls: " + crashes);
  }

  /**
   * A rename over an existing file ({@link BlobNamespace#renameOver}) cut off at every call:
   * the destination holds the old file or the renamed one, never none and never a name
   * without data; the renamed file is under exactly one name; the replaced file's data is
   * gone (after a sweep) once it is replaced.
   */
  @ParameterizedTest
  @EnumSource(Recovery.class)
  void aRenameOverAFileCutOffAtAnyCallIsSettled(Recovery how) throws Exception {
    for (int[] lengths : new int[][] {{2 * STRIPE + 7, STRIPE + 3}, {100, 90}}) {
      FsPath f = FsPath.parse("/a/f");
      FsPath g = FsPath.parse("/a/g");
      int crashes = 0;
      for (int k = 1; ; k++) {
        freshStore();
        write(f, lengths[0], k);
        write(g, lengths[1], -k);
        byte[] oldF = given.get(f);
        byte[] oldG = given.get(g);
        FileInfo target = recovery.getFileInfo(g);
        if (!dieAt(k, () -> dyingNamespace().renameOver(f, target))) {
          break;
        }
        crashes++;
        Thread.sleep(LEASE.toMillis() + 5);
        switch (how) {
          case COMMAND -> recovery.finishInterruptedRenames();
          case DELETE_SOURCE -> recovery.delete(f, false);
          case DELETE_TARGET -> recovery.delete(g, false);
          case OVERWRITE_SOURCE -> write(f, STRIPE + 3, 1000 + k);
          case RENAME_AGAIN -> {
            try {
              recovery.renameOver(f, recovery.getFileInfo(g));
            } catch (java.io.FileNotFoundException settledForward) {
              // the recovery's lock settled the move first: f is already g
            }
          }
          case SWEEP -> { }
        }
        String when = "rename over of " + lengths[0] + " B cut off at call " + k + ", then " + how;
        byte[] nowF = recovery.probe(f).isPresent()
            ? NamespaceSoak.readWhole(recovery, recovery.getFileInfo(f)) : null;
        byte[] nowG = recovery.probe(g).isPresent()
            ? NamespaceSoak.readWhole(recovery, recovery.getFileInfo(g)) : null;
        boolean replaced = java.util.Arrays.equals(nowG, oldF);
        if (how != Recovery.DELETE_TARGET) {
          assertTrue(replaced || java.util.Arrays.equals(nowG, oldG), when + ": g is old or new");
        }
        if (how != Recovery.DELETE_SOURCE && how != Recovery.OVERWRITE_SOURCE) {
          assertTrue(replaced || nowG == null || java.util.Arrays.equals(nowF, oldF),
              when + ": the source is kept until it replaces g");
        }
        given.clear();
        if (how == Recovery.SWEEP && replaced && java.util.Arrays.equals(nowF, oldF)) {
          nowF = null; // both names on one file: the sweep, first, rolls the move forward
        }
        if (nowF != null) {
          given.put(f, nowF);
        }
        if (nowG != null) {
          given.put(g, nowG);
        }
        checkEverything(when, how == Recovery.SWEEP);
      }
      assertTrue(crashes >= 8, "a rename over a file makes at least 8 calls: " + crashes);
    }
  }

  @Test
  void aDirectoryRenameCutOffAtAnyCallIsFinishedAndARetryDoesNotNest() throws Exception {
    for (boolean retry : new boolean[] {false, true}) {
      int crashes = 0;
      for (int k = 1; ; k++) {
        freshStore();
        fillDirectory(k);
        FsPath src = FsPath.parse("/a");
        FsPath dst = FsPath.parse("/b");
        if (!dieAt(k, () -> dyingNamespace().rename(src, dst))) {
          break;
        }
        crashes++;
        Thread.sleep(LEASE.toMillis() + 5);
        if (retry) {
          assertTrue(recovery.rename(src, dst), "the same rename, retried after call " + k);
        } else {
          recovery.finishInterruptedRenames();
        }
        if (recovery.probe(dst).isPresent()) {
          moveExpected(src, dst); // finished forward
        }
        assertFalse(recovery.probe(FsPath.parse("/b/a")).isPresent(), "nested at call " + k);
        assertTrue(recovery.probe(src).isEmpty() || recovery.probe(dst).isEmpty(),
            "split between /a and /b after call " + k);
        checkEverything("directory rename cut off at call " + k + (retry ? ", retried" : ""),
            false);
      }
      assertTrue(crashes > 20, "crash points: " + crashes);
    }
  }

  @Test
  void aRecursiveDeleteCutOffAtAnyCallIsFinished() throws Exception {
    int crashes = 0;
    for (int k = 1; ; k++) {
      freshStore();
      fillDirectory(k);
      FsPath dir = FsPath.parse("/a");
      if (!dieAt(k, () -> dyingNamespace().delete(dir, true))) {
        break;
      }
      crashes++;
      Thread.sleep(LEASE.toMillis() + 5);
      recovery.finishInterruptedRenames();
      if (recovery.probe(dir).isEmpty()) {
        given.keySet().removeIf(p -> p.isAtOrUnder(dir));
      } // else it was cut off before it began: the directory must be whole
      checkEverything("recursive delete cut off at call " + k, false);
    }
    assertTrue(crashes > 20, "crash points: " + crashes);
  }

  @Test
  void finishingADeleteKeepsAFileCreatedAfterIt() throws Exception {
    // The checks before the second sleep hold only while the dead delete's lease runs: 40
    // ms ran out before them once under load ('expected [] but was [delete /a]'), and 2 s
    // can on two cores at a load of 30, so a try that overran its lease runs again with a
    // longer one.
    BeforeTimeout.check(Duration.ofSeconds(2), 3, this::deleteFinishedAfterANewFile);
  }

  private void deleteFinishedAfterANewFile(Duration lease, BeforeTimeout.Window window)
      throws Exception {
    freshStore();
    fillDirectory(1);
    FsPath dir = FsPath.parse("/a");
    // Cut off after its intent is written: no name or intent can be removed.
    dying.on(Op.DELETE).keys("[nr]/.*").always().failBefore();
    window.began();
    try {
      new BlobNamespace(dying.store(), OPTIONS.withWriterLease(lease), StoreCallCounters.NONE)
          .delete(dir, true);
    } catch (IOException expected) {
      // the dying client's answer does not matter
    }
    dying.clear();
    given.keySet().removeIf(p -> p.isAtOrUnder(dir));
    Thread.sleep(5);
    write(FsPath.parse("/a/later"), 3 * STRIPE, 77);
    // While the dead delete's lease runs, its intent is left alone, and the next delete or
    // rename of the directory is told to retry.
    assertEquals(List.of(), recovery.finishInterruptedRenames());
    assertThrows(IOException.class, () -> recovery.rename(dir, FsPath.parse("/b")));
    window.done();
    Thread.sleep(lease.toMillis() + 5);
    assertEquals(List.of("delete /a"), recovery.finishInterruptedRenames());
    assertEquals(List.of(FsPath.parse("/a/later")), names(dir));
    checkEverything("delete finished after a new file", false);
  }

  /**
   * A rename that stalls past its lease between its copy and the source's removal: a
   * settler completes its move, and the rename, waking, reports success instead of taking
   * back the copy that is now the file's only name.
   */
  @Test
  void aRenameStalledAfterItsCopyIsCompletedByTheSettlerAndSaysSo() throws Exception {
    freshStore();
    FsPath f = FsPath.parse("/a/f");
    FsPath g = FsPath.parse("/a/g");
    write(f, 2 * STRIPE + 3, 11);
    Fault stall = dying.on(Op.DELETE).keys("n/a/f").pause();
    java.util.concurrent.ExecutorService renamer =
        java.util.concurrent.Executors.newSingleThreadExecutor();
    try {
      java.util.concurrent.Future<Boolean> rename =
          renamer.submit(() -> dyingNamespace().rename(f, g));
      stall.awaitReached();
      Thread.sleep(LEASE.toMillis() + 5);
      assertEquals(List.of("settled 1 interrupted file rename(s)"),
          recovery.finishInterruptedRenames());
      stall.release();
      assertTrue(rename.get(30, java.util.concurrent.TimeUnit.SECONDS));
    } finally {
      renamer.shutdownNow();
    }
    given.put(g, given.remove(f));
    checkEverything("a rename stalled after its copy", false);
  }

  /**
   * A rename that stalls past its lease before its copy, while another rename moves the
   * file away: waking, it puts a stale copy, finds no sign that its own move was adopted,
   * and takes the copy back, so that one name is left.
   */
  @Test
  void aRenameStalledBeforeItsCopyTakesAStaleCopyBack() throws Exception {
    freshStore();
    FsPath f = FsPath.parse("/a/f");
    FsPath g = FsPath.parse("/a/g");
    FsPath h = FsPath.parse("/a/h");
    write(f, 2 * STRIPE + 3, 12);
    Fault stall = dying.on(Op.PUT).keys("n/a/g").pause();
    Object outcome = stalledRename(stall, f, g, () -> assertTrue(recovery.rename(f, h)));
    assertTrue(outcome instanceof IOException, "the stalled rename failed: " + outcome);
    given.put(h, given.remove(f));
    checkEverything("a rename stalled before its copy", false);
  }

  /** What another client does to the source while a rename of it is stalled. */
  enum Meanwhile { DELETE_SOURCE, RENAME_SOURCE }

  /**
   * A rename that stalls past its lease right after its commit, before it makes the
   * destination plain: the other client's operation settles the move (committed: rolled
   * forward) and finds the source gone. The rename, waking, must keep the destination, the
   * file's only name, and say it renamed.
   */
  @ParameterizedTest
  @EnumSource(Meanwhile.class)
  void aRenameStalledAfterItsCommitKeepsTheDestination(Meanwhile what) throws Exception {
    freshStore();
    FsPath f = FsPath.parse("/a/f");
    FsPath g = FsPath.parse("/a/g");
    write(f, 2 * STRIPE + 3, 13);
    // The second put of the destination: its incoming record made plain, after the commit.
    Fault stall = dying.on(Op.PUT).keys("n/a/g").nth(2).pause();
    assertEquals(Boolean.TRUE, stalledRename(stall, f, g, () -> {
      if (what == Meanwhile.DELETE_SOURCE) {
        assertFalse(recovery.delete(f, false), "the source was gone once committed");
      } else {
        assertFalse(recovery.rename(f, FsPath.parse("/a/h")));
      }
    }));
    given.put(g, given.remove(f));
    checkEverything("a rename stalled after its commit, then " + what, false);
  }

  /**
   * Review of the marked rename, must-fix 1: a mover slower than its lease creates the
   * destination after a settler took the source's mark back. While the mover is held
   * right after that late create applied, readers must not see the destination, and a
   * delete of it must not remove the data the source still names. Before, the late create
   * was the commit itself (unconditional, unfenced): the destination showed, its delete
   * removed the file's data, and the source was left a name without data.
   */
  @Test
  void aMoverSlowerThanItsLeaseCannotCommitAfterItsMarkWasTakenBack() throws Exception {
    freshStore();
    FsPath f = FsPath.parse("/a/f");
    FsPath g = FsPath.parse("/a/g");
    write(f, 2 * STRIPE + 3, 31);
    Fault create = dying.on(Op.PUT).keys("n/a/g").pause();
    java.util.concurrent.ExecutorService renamer =
        java.util.concurrent.Executors.newSingleThreadExecutor();
    Object outcome;
    try {
      java.util.concurrent.Future<Object> rename = renamer.submit(() -> {
        try {
          return dyingNamespace().rename(f, g);
        } catch (IOException e) {
          return e;
        }
      });
      create.awaitReached();
      Thread.sleep(LEASE.toMillis() + 5);
      assertEquals(List.of("settled 1 interrupted file rename(s)"),
          recovery.finishInterruptedRenames(), "the settler took the mark back");
      // The mover's next call, whatever it is, after its late create has applied.
      Fault next = dying.on(EVERY_CALL[0], EVERY_CALL).pause();
      create.release();
      next.awaitReached();
      assertTrue(memory.stat("n/a/g").exists(), "the late create applied");
      assertFalse(recovery.probe(g).isPresent(), "readers see the late destination");
      assertFalse(recovery.delete(g, false), "the late destination was deleted");
      assertArrayEquals(given.get(f), NamespaceSoak.readWhole(recovery,
          recovery.getFileInfo(f)), "the source lost its data");
      next.release();
      outcome = rename.get(30, java.util.concurrent.TimeUnit.SECONDS);
    } finally {
      renamer.shutdownNow();
    }
    assertTrue(outcome instanceof IOException, "the fenced rename failed: " + outcome);
    checkEverything("a mover slower than its lease", false);
  }

  /**
   * Review of the marked rename, must-fix 2: the mark applies but its answer is lost, and
   * reading it back fails too. The rename fails, and must keep its lock (with the move in
   * it) rather than release it with the mark still on: the next taker settles the move
   * first. Here that is a directory rename of the source's parent, while a reader reads
   * the source between the directory's copy of it and its removal. Before, the lock was
   * released; the reader took the marked source for moved (its destination held the file,
   * by the directory's copy) and deleted it, and the directory's move, its delete
   * conflicting, took its copy back: the file had no name.
   */
  @Test
  void aMarkWhoseOutcomeIsUnknownKeepsTheLockForTheNextTaker() throws Exception {
    freshStore();
    FsPath f = FsPath.parse("/a/f");
    FsPath bf = FsPath.parse("/b/f");
    write(f, 2 * STRIPE + 3, 32);
    String lock = "d/" + recovery.getFileInfo(f).record().fileId() + "/lock";
    Fault mark = dying.on(Op.PUT).keys("n/a/f").applyThenFail();
    // The source is read by the rename's probe, its read, and again under the lock: the
    // fourth read is the mark's read-back.
    Fault readBack = dying.on(Op.READ).keys("n/a/f").nth(4).always().failBefore();
    assertThrows(IOException.class, () -> dyingNamespace().rename(f, bf));
    assertEquals(1, mark.fired());
    assertEquals(1, readBack.fired());
    dying.clear();
    assertTrue(memory.stat(lock).exists(), "the lock was released with the mark on");
    Thread.sleep(LEASE.toMillis() + 5);
    FaultInjectingBlobStore mover =
        FaultInjectingBlobStore.over(memory, TransactionalBlobStore.class);
    Fault beforeRemoval = mover.on(Op.DELETE).keys("n/a/f").pause();
    java.util.concurrent.ExecutorService dirMove =
        java.util.concurrent.Executors.newSingleThreadExecutor();
    try {
      java.util.concurrent.Future<Boolean> moved = dirMove.submit(() ->
          new BlobNamespace(mover.store(), OPTIONS, StoreCallCounters.NONE)
              .rename(FsPath.parse("/a"), FsPath.parse("/b")));
      beforeRemoval.awaitReached();
      recovery.probe(f); // a reader of the source meanwhile
      beforeRemoval.release();
      assertTrue(moved.get(30, java.util.concurrent.TimeUnit.SECONDS));
    } finally {
      dirMove.shutdownNow();
    }
    given.put(bf, given.remove(f));
    checkEverything("a mark whose outcome is unknown, then a directory rename", false);
  }

  /**
   * Review of the marked rename, should-fix 3: a settler whose removal of a dead mover's
   * mark fails keeps the lock it took over (the move in it, a fresh lease), so the next
   * taker settles the move again. Before, it released the lock with the mark still on the
   * source, and nothing knew of the move any more.
   */
  @Test
  void aSettlerThatCannotTakeTheMarkOffKeepsTheLock() throws Exception {
    FsPath f = FsPath.parse("/a/f");
    FsPath g = FsPath.parse("/a/g");
    String lock = null;
    for (int k = 1; lock == null; k++) { // the client dies right after its mark applied
      assertTrue(k < 20, "no call of the rename left the source marked");
      freshStore();
      write(f, 2 * STRIPE + 3, 41);
      final FsPath from = f;
      assertTrue(dieAt(k, () -> dyingNamespace().rename(from, g)));
      if (rawMark("n/a/f") == FileRecord.Mark.MOVING && !memory.stat("n/a/g").exists()) {
        lock = "d/" + recovery.getFileInfo(f).record().fileId() + "/lock";
      }
    }
    Thread.sleep(LEASE.toMillis() + 5);
    FaultInjectingBlobStore settling =
        FaultInjectingBlobStore.over(memory, TransactionalBlobStore.class);
    Fault unmark = settling.on(Op.PUT).keys("n/a/f").always().failBefore();
    assertThrows(IOException.class, () ->
        new BlobNamespace(settling.store(), OPTIONS, StoreCallCounters.NONE).rename(f, g));
    assertEquals(1, unmark.fired());
    assertEquals(FileRecord.Mark.MOVING, rawMark("n/a/f"), "the mark is still on");
    assertTrue(memory.stat(lock).exists(), "the settler released the lock with the mark on");
    Thread.sleep(LEASE.toMillis() + 5);
    assertTrue(recovery.rename(f, g)); // the next taker settles the move, then renames
    given.put(g, given.remove(f));
    checkEverything("a settler that could not take the mark off, then a rename", false);
  }

  /** The mark on the record stored at {@code key}, as it is stored. */
  private FileRecord.Mark rawMark(String key) throws IOException {
    byte[] raw = memory.readFully(key, 0, (int) memory.stat(key).size());
    return FileRecord.decode(key, raw, raw.length, true).mark();
  }

  /**
   * A rename that stalls past its lease before its copy, while another client deletes the
   * source: the copy lands afterwards and would name deleted data; the rename takes it back.
   */
  @Test
  void aRenameStalledBeforeItsCopyTakesItBackIfTheSourceWasDeleted() throws Exception {
    freshStore();
    FsPath f = FsPath.parse("/a/f");
    FsPath g = FsPath.parse("/a/g");
    write(f, 2 * STRIPE + 3, 14);
    Fault stall = dying.on(Op.PUT).keys("n/a/g").pause();
    Object outcome = stalledRename(stall, f, g, () -> assertTrue(recovery.delete(f, false)));
    assertTrue(outcome instanceof IOException, "the stalled rename failed: " + outcome);
    given.remove(f);
    checkEverything("a rename stalled before its copy, the source deleted", false);
  }

  /**
   * A rename over a file that stalls past its leases before its put, while another rename
   * moves the source away. Before, the late put applied, the mover took it back, and until
   * it put the replaced record back no name held that file: a sweep removed its data and
   * the rename reported the target lost. Now the settler inside the other rename rewrites
   * the replaced record unchanged before taking the mark off the source
   * ({@link MarkedReplace}): the late put never applies, the target keeps its name and its
   * data throughout, the sweep finds no orphan, and the stalled rename fails having
   * changed nothing.
   */
  @Test
  void aRenameOverStalledPastItsLeasesNeverUnnamesItsTarget() throws Exception {
    freshStore();
    FsPath f = FsPath.parse("/a/f");
    FsPath g = FsPath.parse("/a/g");
    FsPath h = FsPath.parse("/a/h");
    write(f, 2 * STRIPE + 3, 21);
    write(g, STRIPE + 5, 22);
    FileInfo target = recovery.getFileInfo(g);
    Fault stall = dying.on(Op.PUT).keys("n/a/g").pause(); // the put over the target
    java.util.concurrent.ExecutorService renamer =
        java.util.concurrent.Executors.newSingleThreadExecutor();
    try {
      java.util.concurrent.Future<Object> rename = renamer.submit(() -> {
        try {
          dyingNamespace().renameOver(f, target);
          return "returned";
        } catch (IOException e) {
          return e;
        }
      });
      stall.awaitReached();
      Thread.sleep(LEASE.toMillis() + 5);
      assertTrue(recovery.rename(f, h));
      stall.release();
      Object outcome = rename.get(30, java.util.concurrent.TimeUnit.SECONDS);
      assertTrue(outcome instanceof IOException, "the stalled rename failed: " + outcome);
      Thread.sleep(LEASE.toMillis() + 5);
      OrphanSweeper.Report swept = new OrphanSweeper(recovery, LEASE).sweep(Duration.ZERO, false);
      assertEquals(List.of(), List.copyOf(swept.orphanFileIds()), "no file lost its name");
    } finally {
      renamer.shutdownNow();
    }
    given.put(h, given.remove(f));
    checkEverything("a rename over a file stalled past its leases, its source renamed", false);
  }

  /** A change that removes a name's data. */
  enum Replace { DELETE, OVERWRITE }

  /**
   * A delete or overwrite takes the file's lock, reads the name, and stalls past its lease;
   * a rename takes the lock over, puts its copy and dies. The delete or overwrite, waking,
   * removes the name it read, and must leave the data, which the copy names now. Before,
   * it deleted the data: a name without data.
   */
  @ParameterizedTest
  @EnumSource(Replace.class)
  void aDeleteOrOverwriteThatOutlivedItsLockLeavesTheData(Replace how) throws Exception {
    freshStore();
    FsPath f = FsPath.parse("/a/f");
    FsPath g = FsPath.parse("/a/g");
    write(f, 2 * STRIPE + 5, 15);
    byte[] newer = new byte[STRIPE + 1];
    new Random(16).nextBytes(newer);
    FaultInjectingBlobStore crashing =
        FaultInjectingBlobStore.over(memory, TransactionalBlobStore.class);
    Fault stall = dying.on(how == Replace.DELETE ? Op.DELETE : Op.PUT).keys("n/a/f").pause();
    Fault death = crashing.on(Op.DELETE).keys("n/a/f").pause(); // the renamer's last call
    java.util.concurrent.ExecutorService replacer =
        java.util.concurrent.Executors.newSingleThreadExecutor();
    java.util.concurrent.ExecutorService renamer =
        java.util.concurrent.Executors.newSingleThreadExecutor();
    try {
      java.util.concurrent.Future<Boolean> replace = replacer.submit(() -> {
        if (how == Replace.DELETE) {
          return dyingNamespace().delete(f, false);
        }
        try (FileWriter w = dyingNamespace().create(f, true)) {
          w.write(newer, 0, newer.length);
        }
        return true;
      });
      stall.awaitReached();
      Thread.sleep(LEASE.toMillis() + 5);
      java.util.concurrent.Future<Boolean> rename = renamer.submit(() ->
          new BlobNamespace(crashing.store(), OPTIONS, StoreCallCounters.NONE).rename(f, g));
      death.awaitReached();
      stall.release();
      // The rename committed (its copy) while the stalled call waited: a delete then finds
      // the source gone, an overwrite makes a new file there.
      assertEquals(how == Replace.OVERWRITE,
          replace.get(30, java.util.concurrent.TimeUnit.SECONDS));
      // The renamer dies where it stands: its paused call and every later one fail. Its
      // answer does not matter (the move had committed): only what it leaves.
      crashing.on(Op.STAT, EVERY_CALL).always().failBefore();
      renamer.shutdownNow();
      try {
        rename.get(30, java.util.concurrent.TimeUnit.SECONDS);
      } catch (java.util.concurrent.ExecutionException dead) {
        // as good as an answer
      }
    } finally {
      replacer.shutdownNow();
      renamer.shutdownNow();
    }
    Thread.sleep(LEASE.toMillis() + 5);
    given.put(g, given.remove(f));
    if (how == Replace.OVERWRITE) {
      given.put(f, newer);
    }
    checkEverything("a " + how + " that outlived its lock", false);
  }

  /**
   * A recursive delete stalls past its intent's lease; another client finishes it, and a
   * file is made in the directory again. The stalled delete, waking, must stop rather than
   * delete that file. Before, its renewal of the lease went on silently and its retry pass
   * deleted the new file.
   */
  @Test
  void aStalledRecursiveDeleteStopsOnceAnotherFinishedIt() throws Exception {
    freshStore();
    FsPath d = FsPath.parse("/d");
    write(FsPath.parse("/d/w"), 2 * STRIPE + 1, 17);
    write(FsPath.parse("/d/x"), 90, 18);
    Fault stall = dying.on(Op.DELETE).keys("n/d/w").pause();
    Object outcome;
    java.util.concurrent.ExecutorService deleter =
        java.util.concurrent.Executors.newSingleThreadExecutor();
    try {
      java.util.concurrent.Future<Object> delete = deleter.submit(() -> {
        try {
          return dyingNamespace().delete(d, true);
        } catch (IOException e) {
          return e;
        }
      });
      stall.awaitReached();
      Thread.sleep(LEASE.toMillis() + 5);
      assertTrue(recovery.delete(d, true));
      given.clear();
      write(FsPath.parse("/d/y"), 100, 19);
      stall.release();
      outcome = delete.get(30, java.util.concurrent.TimeUnit.SECONDS);
    } finally {
      deleter.shutdownNow();
    }
    checkEverything("a stalled recursive delete", false);
    assertTrue(outcome instanceof IOException
        && outcome.toString().contains("outlived its lease"), "it stopped: " + outcome);
  }

  /** What is done to the destination of a directory rename cut off halfway. */
  enum AtDestination { RENAME_IT, DELETE_IT, DELETE_BELOW_IT }

  /**
   * A directory rename /a to /b cut off with some names moved and some not; then the user
   * acts on /b. The interrupted rename must be finished first. Before, only intents whose
   * source was at or under the path were: renaming /b moved half the directory (split), and
   * deleting /b deleted half, the rest coming back under /b once the intent was finished.
   */
  @ParameterizedTest
  @EnumSource(AtDestination.class)
  void aDirectoryRenameCutOffHalfwayIsFinishedFromItsDestination(AtDestination what)
      throws Exception {
    int split = 0;
    for (int k = 1; ; k++) {
      freshStore();
      fillDirectory(k);
      FsPath a = FsPath.parse("/a");
      FsPath b = FsPath.parse("/b");
      if (!dieAt(k, () -> dyingNamespace().rename(a, b))) {
        break;
      }
      if (recovery.probe(a).isEmpty() || recovery.probe(b).isEmpty()) {
        continue; // not halfway
      }
      split++;
      Thread.sleep(LEASE.toMillis() + 5);
      moveExpected(a, b);
      switch (what) {
        case RENAME_IT -> {
          assertTrue(recovery.rename(b, FsPath.parse("/c2")));
          moveExpected(b, FsPath.parse("/c2"));
        }
        case DELETE_IT -> {
          assertTrue(recovery.delete(b, true));
          given.keySet().removeIf(p -> p.isAtOrUnder(b));
        }
        case DELETE_BELOW_IT -> {
          FsPath sub = FsPath.parse("/b/sub");
          assertTrue(recovery.delete(sub, true));
          given.keySet().removeIf(p -> p.isAtOrUnder(sub));
        }
      }
      checkEverything(what + " after the rename was cut off at call " + k, false);
    }
    assertTrue(split > 3, "cut off halfway: " + split);
  }

  // ---------------------------------------------------------------- helpers

  /**
   * The dying client's rename of {@code f} to {@code g}, stalled at {@code stall}: once it
   * is there and its lease has run out, {@code meanwhile} runs on the recovering client,
   * then the rename goes on. Returns its answer, or the IOException it threw.
   */
  private Object stalledRename(Fault stall, FsPath f, FsPath g, Action meanwhile)
      throws Exception {
    java.util.concurrent.ExecutorService renamer =
        java.util.concurrent.Executors.newSingleThreadExecutor();
    try {
      java.util.concurrent.Future<Object> rename = renamer.submit(() -> {
        try {
          return dyingNamespace().rename(f, g);
        } catch (IOException e) {
          return e;
        }
      });
      stall.awaitReached();
      Thread.sleep(LEASE.toMillis() + 5);
      meanwhile.run();
      stall.release();
      return rename.get(30, java.util.concurrent.TimeUnit.SECONDS);
    } finally {
      renamer.shutdownNow();
    }
  }

  private BlobNamespace dyingNamespace() {
    return new BlobNamespace(dying.store(), OPTIONS, StoreCallCounters.NONE);
  }

  private interface Action {
    void run() throws IOException;
  }

  /**
   * Runs {@code action} on a client that dies at its {@code k}th store call: that call and
   * every later one fail without applying. Returns false if the action finished first.
   */
  private boolean dieAt(int k, Action action) {
    Fault death = dying.on(EVERY_CALL[0], EVERY_CALL).nth(k).always().failBefore();
    try {
      action.run();
    } catch (IOException | RuntimeException expected) {
      // the dying client's answer does not matter
    } finally {
      dying.clear();
    }
    return death.fired() > 0;
  }

  private void write(FsPath path, int length, long seed) throws IOException {
    byte[] bytes = new byte[length];
    new Random(seed).nextBytes(bytes);
    try (FileWriter w = recovery.create(path, true)) {
      w.write(bytes, 0, bytes.length);
    }
    given.put(path, bytes);
  }

  private void fillDirectory(long seed) throws IOException {
    write(FsPath.parse("/a/x"), 2 * STRIPE + 1, seed);
    write(FsPath.parse("/a/y"), 90, seed + 1);
    write(FsPath.parse("/a/sub/z"), STRIPE + 9, seed + 2);
    write(FsPath.parse("/a/sub/w"), 3 * STRIPE, seed + 3);
    write(FsPath.parse("/c"), 50, seed + 4); // outside: untouched
  }

  private void moveExpected(FsPath src, FsPath dst) {
    Map<FsPath, byte[]> moved = new HashMap<>();
    given.entrySet().removeIf(e -> {
      if (e.getKey().isAtOrUnder(src)) {
        moved.put(e.getKey().rebase(src, dst), e.getValue());
        return true;
      }
      return false;
    });
    given.putAll(moved);
  }

  private List<FsPath> names(FsPath dir) throws IOException {
    List<FsPath> out = new ArrayList<>();
    EntryIterator<FileInfo> it = recovery.listFilesRecursively(dir);
    while (it.hasNext()) {
      out.add(it.next().path());
    }
    out.sort(null);
    return out;
  }

  /**
   * Every name holds the bytes expected of it and no other name exists; no two names
   * share a file id; after a sweep no data blob lacks a name and no lock or intent is left.
   */
  private void checkEverything(String when, boolean sweepFirst) throws Exception {
    Thread.sleep(5); // past the blobs' own millisecond
    if (sweepFirst) {
      new OrphanSweeper(recovery, LEASE).sweep(Duration.ZERO, false);
    }
    List<FsPath> all = names(FsPath.ROOT);
    assertEquals(List.copyOf(given.keySet()), all, when + ": the names");
    Map<String, FsPath> byId = new HashMap<>();
    for (FsPath p : all) {
      FileInfo info = recovery.getFileInfo(p);
      assertArrayEquals(given.get(p), NamespaceSoak.readWhole(recovery, info), when + ": " + p);
      FsPath other = byId.put(info.record().fileId(), p);
      assertEquals(null, other, when + ": " + p + " shares its file id");
    }
    new OrphanSweeper(recovery, LEASE).sweep(Duration.ZERO, false);
    for (String key : keys("d/")) {
      String id = KeyLayout.fileIdOf(key);
      assertFalse(KeyLayout.isLock(key), when + ": lock left: " + key);
      assertTrue(byId.containsKey(id), when + ": orphan data after a sweep: " + key);
    }
    assertEquals(List.of(), keys("r/"), when + ": intents left");
  }

  private List<String> keys(String prefix) throws IOException {
    BlobStore raw = memory;
    List<String> out = new ArrayList<>();
    String cursor = null;
    do {
      ScanPage page = raw.scan(prefix, cursor, 1000);
      out.addAll(page.keys());
      cursor = page.nextCursor();
    } while (cursor != null);
    return out;
  }
}
