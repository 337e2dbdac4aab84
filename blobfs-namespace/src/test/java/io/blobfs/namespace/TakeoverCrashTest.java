package io.blobfs.namespace;

import static org.junit.jupiter.api.Assertions.*;

import io.blobfs.store.FaultInjectingBlobStore.Fault;
import io.blobfs.store.FaultInjectingBlobStore.Op;
import java.io.IOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * Shared stripes, step 3 without transactions (RADOS, DESIGN §2.3 steps 1-7): a takeover
 * publication, and a plain overwrite of a mapped version, cut at every store call in turn, as {@link CrashLoopTest} cuts its worker
 * (that call fails unapplied, or is applied with its answer lost, and every later call
 * fails: the client is dead). After each cut, the dead client's leases out and a sweep,
 * the name reads the base or the new version, whole; after the next publication over what
 * is there (or a delete) and sweeps, no data key is left that no record names, and no lock
 * but the ADOPTED lock of an id a record borrows from.
 */
class TakeoverCrashTest extends SharedStripesFixture {
  private static final Duration LEASE = Duration.ofMillis(40);

  private void sweepTwice() throws Exception {
    Thread.sleep(LEASE.toMillis() + 30); // the dead client's leases and untils run out
    // Twice: an ADOPTED lock whose last keys a sweep's dues removed goes the sweep after.
    new OrphanSweeper(ns, LEASE).sweep(Duration.ZERO, false);
    new OrphanSweeper(ns, LEASE).sweep(Duration.ZERO, false);
  }

  /** Data keys no record names, records naming missing keys, locks that should be gone. */
  private List<String> leaks() throws IOException {
    Set<String> named = new TreeSet<>();
    Set<String> borrowed = new HashSet<>();
    EntryIterator<FileInfo> all = ns.listFilesRecursively(FsPath.ROOT);
    while (all.hasNext()) {
      FileRecord r = all.next().record();
      for (long s = 0; s < r.stripeCount(); s++) {
        named.add(r.stripeKey(ns.layout(), s));
      }
      borrowed.addAll(r.map().ids());
    }
    List<String> problems = new ArrayList<>();
    Set<String> data = new TreeSet<>();
    for (String key : keys("d/")) {
      if (!KeyLayout.isLock(key)) {
        data.add(key);
      } else if (!borrowed.contains(KeyLayout.fileIdOf(key))) {
        problems.add("lock left: " + key);
      } else if (ns.locks().read(KeyLayout.fileIdOf(key)).get().owner()
          != DataLocks.Owner.ADOPTED) {
        problems.add("a borrowed id's lock is not ADOPTED: " + key);
      }
    }
    for (String key : data) {
      if (!named.contains(key)) {
        problems.add("no record names " + key);
      }
    }
    for (String key : named) {
      if (!data.contains(key)) {
        problems.add("a record names the missing " + key);
      }
    }
    for (String id : borrowed) {
      if (!keys("d/").contains("d/" + id + "/lock")) {
        problems.add("borrowed id " + id + " has no ADOPTED lock");
      }
    }
    return problems;
  }

  /** The publication cut: writes the version after {@code base} at {@code p}. */
  private interface Publication {
    void publish(FsPath p, byte[] next) throws IOException;
  }

  @Test
  void aTakeoverCutAtEveryStoreCallLeavesOneVersionWholeAndNothingUnnamed() throws Exception {
    // keeps A's 1, the older one's 3; drops its 0 and the older id's 2
    cutAtEveryCall((p, next) -> version(p, next, stripes(1, 3)));
  }

  /**
   * A plain overwrite (no takeover) of a mapped version: its record carries the replaced
   * one's keys as dues, so that a cut cleanup leaves them findable (DESIGN §2.3 step 7).
   */
  @Test
  void aPlainOverwriteOfAMappedVersionCutAtEveryStoreCallLeavesNothingUnnamed()
      throws Exception {
    cutAtEveryCall((p, next) -> {
      try (FileWriter w = ns.create(p, true)) {
        w.write(next, 0, next.length);
      }
    });
  }

  /**
   * The delete leak (DESIGN §2.4): a delete of a mapped version (or of its directory, with
   * transactions: the chunks' path) cut at every store call, then sweeps: nothing of it is
   * left (its own keys, the keys it borrowed, their ADOPTED locks), or, where the delete
   * did not apply, it reads whole and a second delete and sweeps leave nothing. A mapped
   * file living alongside keeps every key and byte. Before the delete's will, the cuts
   * between the name's removal and the data's left the borrowed keys and their ADOPTED
   * locks for good. Without transactions a recursive delete removes each file as a single
   * delete does (Deleter.deleteFile, under its lock), with an intent's calls around it.
   */
  @ParameterizedTest(name = "transactional={0}, recursive={1}")
  @CsvSource({"false,false", "true,false", "true,true"})
  void aDeleteOfAMappedVersionCutAtEveryStoreCallLeavesNothingOfIt(boolean transactional,
      boolean recursive) throws Exception {
    open(transactional);
    ns = new BlobNamespace(faults.store(), ns.options().withWriterLease(LEASE),
        StoreCallCounters.NONE);
    FsPath live = FsPath.parse("/live/f");
    try (FileWriter w = ns.create(live, false)) {
      w.write(bytes, 0, LENGTH);
    }
    byte[] liveBytes = rewritten(bytes, 2, 7);
    version(live, liveBytes, stripes(0, 1, 3));
    Set<String> liveKeys = keys("d/");
    List<String> problems = new ArrayList<>();
    int cuts = 0;
    boolean reachedEnd = false;
    for (int cut = 1; !reachedEnd && cut < 200; cut++) {
      reachedEnd = true;
      for (boolean applied : new boolean[] {false, true}) {
        String at = "cut " + cut + (applied ? " (applied, answer lost)" : " (not applied)");
        FsPath p = FsPath.parse("/c" + cut + (applied ? "a" : "n") + "/f");
        // Borrows 0 and 3 of its first version, 2 of its second: its own key, borrowed
        // keys of two ids, their ADOPTED locks.
        try (FileWriter w = ns.create(p, false)) {
          w.write(bytes, 0, LENGTH);
        }
        byte[] v2 = rewritten(bytes, 1, cut);
        version(p, v2, stripes(0, 2, 3));
        byte[] v3 = rewritten(v2, 1, 1000 + cut);
        version(p, v3, stripes(0, 2, 3));
        boolean fired =
            withCut(cut, applied, () -> ns.delete(recursive ? p.parent() : p, recursive));
        reachedEnd &= !fired;
        cuts += fired ? 1 : 0;
        sweepTwice();
        if (ns.probe(p).isPresent()) {
          if (!Arrays.equals(read(p.toString()), v3)) {
            problems.add(at + ": the file was not deleted, and does not read whole");
          }
          assertTrue(ns.delete(p, false));
          sweepTwice();
        }
        if (!keys("d/").equals(liveKeys)) {
          Set<String> extra = new TreeSet<>(keys("d/"));
          extra.removeAll(liveKeys);
          Set<String> missing = new TreeSet<>(liveKeys);
          missing.removeAll(keys("d/"));
          problems.add(at + ": left " + extra + ", lost " + missing);
        }
        if (!Arrays.equals(read(live.toString()), liveBytes)) {
          problems.add(at + ": the live file's bytes changed");
        }
      }
    }
    System.out.printf("[takeover crash] delete (transactional=%s, recursive=%s): %d cuts%n",
        transactional, recursive, cuts);
    assertTrue(reachedEnd, "the delete never completed without reaching the cut");
    assertTrue(cuts > 5, "cuts: " + cuts);
    assertEquals(List.of(), problems);
  }

  /**
   * Why the delete puts its record again before its will (DESIGN §2.4): a new version over
   * the record whose lock ran out while its commit (a put conditional on the version it
   * read) was in flight, and a delete that took the lock, wrote its will and died before
   * removing the name. The late put must not apply: if it did, the name would hold the new
   * version, the will would take the name's change for the delete's, and delete the keys
   * the new version took over. The put fails (the record was put again, at a version only
   * the delete knew), the will is void, and the file reads whole.
   */
  @Test
  void aLatePutOfANewVersionCannotApplyAfterADeletesWill() throws Exception {
    open(false);
    ns = new BlobNamespace(faults.store(), ns.options().withWriterLease(LEASE),
        StoreCallCounters.NONE);
    FsPath p = FsPath.parse("/late/f");
    try (FileWriter w = ns.create(p, false)) {
      w.write(bytes, 0, LENGTH);
    }
    byte[] b = rewritten(bytes, 2, 3);
    version(p, b, stripes(0, 1, 3));
    String name = ns.layout().recordKey(p);
    FileWriter c = ns.createVersion(p, ns.getFileInfo(p));
    c.setLength(LENGTH);
    c.takeOver(stripes(0, 1, 2));
    writeUntaken(c, rewritten(b, 3, 4), stripes(0, 1, 2));
    Fault held = faults.on(Op.PUT).keys(name).pause(); // C's commit, step 5
    java.util.concurrent.ExecutorService late =
        java.util.concurrent.Executors.newSingleThreadExecutor();
    try {
      java.util.concurrent.Future<?> closing = late.submit(() -> {
        c.close();
        return null;
      });
      held.awaitReached();
      Thread.sleep(LEASE.toMillis() + 20); // C's adoption of B runs out
      Fault dies = faults.on(Op.DELETE).keys(name).always().failBefore();
      assertThrows(IOException.class, () -> ns.delete(p, false));
      assertEquals(1, dies.fired());
      held.release();
      java.util.concurrent.ExecutionException refused = assertThrows(
          java.util.concurrent.ExecutionException.class,
          () -> closing.get(10, java.util.concurrent.TimeUnit.SECONDS));
      assertInstanceOf(BaseChangedException.class, refused.getCause());
    } finally {
      faults.clear();
      late.shutdownNow();
    }
    sweepTwice();
    assertArrayEquals(b, read(p.toString()));
    assertTrue(ns.delete(p, false));
    sweepTwice();
    assertEquals(Set.of(), keys("d/"));
  }

  /**
   * Review must-fix 1: the fence assumed the delete is the only change the fenced version
   * allows, but dropDues (TakeoverCommit step 7, commitFile) reads the name's
   * current version and re-puts the record under it, without the file's lock (a delete
   * takes over a live WRITER lock at once). Writer C publishes its version (step 5, with
   * dues) and is held in its cleanup (step 6); a delete of the name fences, writes its
   * will and dies before removing the name; C's step 7 then re-puts the record, so the
   * name no longer holds the will's version; the sweep carries the will out and deletes
   * the data of the live record C.
   */
  @Test
  void aWriterDroppingItsDuesAfterADeletesWillKeepsItsData() throws Exception {
    open(false);
    ns = new BlobNamespace(faults.store(), ns.options().withWriterLease(LEASE),
        StoreCallCounters.NONE);
    FsPath p = FsPath.parse("/drop/f");
    try (FileWriter w = ns.create(p, false)) {
      w.write(bytes, 0, LENGTH);
    }
    String a = ns.getFileInfo(p).record().fileId();
    String name = ns.layout().recordKey(p);
    byte[] c = rewritten(bytes, 2, 11);
    FileWriter cw = ns.createVersion(p, ns.getFileInfo(p));
    cw.setLength(LENGTH);
    cw.takeOver(stripes(0, 1, 3));
    writeUntaken(cw, c, stripes(0, 1, 3));
    Fault held = faults.on(Op.DELETE).keys(java.util.regex.Pattern.quote("d/" + a + "/2"))
        .pause(); // C's step 6: A's unnamed stripe
    java.util.concurrent.ExecutorService bg =
        java.util.concurrent.Executors.newSingleThreadExecutor();
    try {
      java.util.concurrent.Future<?> closing = bg.submit(() -> {
        cw.close();
        return null;
      });
      held.awaitReached(); // C is published, with dues
      Fault dies = faults.on(Op.DELETE).keys(java.util.regex.Pattern.quote(name)).always()
          .failBefore();
      assertThrows(IOException.class, () -> ns.delete(p, false)); // dies after its will
      assertEquals(1, dies.fired());
      held.release();
      closing.get(10, java.util.concurrent.TimeUnit.SECONDS); // C's close succeeds
      // C's dropDues put nothing over the delete's fence: the delete holds C's lock.
      assertFalse(ns.readStored(name, false).get().record().dues().isEmpty(),
          "the writer re-put the record over a version it did not write");
    } finally {
      faults.clear();
      bg.shutdownNow();
    }
    assertTrue(ns.probe(p).isPresent(), "the delete never removed the name");
    assertArrayEquals(c, read(p.toString()), "before the sweep");
    sweepTwice();
    assertArrayEquals(c, read(p.toString()), "after the sweep: the will deleted live data");
  }

  /**
   * Review must-fix 1 (a): a will whose name holds its file at a later version (here a
   * put of the record applied after the will, as a writer's dropDues in flight could) is
   * void: the file is live. Before, any other version was taken for the delete applied,
   * and the sweep deleted the data the name reads.
   */
  @Test
  void aWillIsVoidWhileTheNameHoldsItsFileAtAnotherVersion() throws Exception {
    FsPath p = mappedVersion("/void/f", LEASE);
    byte[] next = rewritten(bytes, 2, 11);
    String name = ns.layout().recordKey(p);
    faults.on(Op.DELETE).keys(java.util.regex.Pattern.quote(name)).always().failBefore();
    assertThrows(IOException.class, () -> ns.delete(p, false)); // dies after its will
    faults.clear();
    io.blobfs.store.VersionedBytes got = store.readWithVersion(name, 1 << 16);
    store.putIfVersion(name, java.nio.ByteBuffer.wrap(got.bytes()), got.version());
    sweepTwice();
    assertArrayEquals(next, read(p.toString()), "the void will deleted live data");
  }

  /**
   * Review must-fix 1 (c): a delete whose name delete conflicts after its will (the
   * record re-put meanwhile, as a writer's dropDues in flight could) did not apply: it
   * releases the will and goes again at once. Before, the will stayed and the retry
   * waited on it (a live rename lock) for SWEEPER_WAIT, then failed.
   */
  @Test
  void aDeleteWhoseNameChangedAfterItsWillReleasesItAndGoesAgain() throws Exception {
    FsPath p = mappedVersion("/again/f", Duration.ofMinutes(5));
    String name = ns.layout().recordKey(p);
    Fault held = faults.on(Op.DELETE).keys(java.util.regex.Pattern.quote(name)).pause();
    java.util.concurrent.ExecutorService bg =
        java.util.concurrent.Executors.newSingleThreadExecutor();
    try {
      java.util.concurrent.Future<Boolean> deleting = bg.submit(() -> ns.delete(p, false));
      held.awaitReached(); // fenced, will written, the name's delete about to go
      io.blobfs.store.VersionedBytes got = store.readWithVersion(name, 1 << 16);
      store.putIfVersion(name, java.nio.ByteBuffer.wrap(got.bytes()), got.version());
      held.release();
      assertTrue(deleting.get(20, java.util.concurrent.TimeUnit.SECONDS));
    } finally {
      faults.clear();
      bg.shutdownNow();
    }
    assertFalse(ns.probe(p).isPresent());
    assertEquals(Set.of(), keys("d/"));
  }

  /**
   * Review should-fix 3: a settler of a will cut in the will's data delete leaves the
   * will for the next one. Before, it took the lock over as a plain lock: the borrowed
   * keys stayed ADOPTED and named by nothing, which no sweep takes.
   */
  @Test
  void aSettlerCutInAWillsDataDeleteLeavesTheWillForTheNext() throws Exception {
    FsPath p = mappedVersion("/settle/f", LEASE);
    Fault data = faults.on(Op.DELETE).keys("d/[^/]+/[0-9]+").always().failBefore();
    assertThrows(IOException.class, () -> ns.delete(p, false)); // name gone, data not
    assertFalse(ns.probe(p).isPresent());
    int before = data.fired();
    Thread.sleep(LEASE.toMillis() + 30);
    try {
      new OrphanSweeper(ns, LEASE).sweep(Duration.ZERO, false); // the settler is cut too
    } catch (IOException | RuntimeException cut) {
      // a sweep may report it: the point is what is left
    }
    assertTrue(data.fired() > before, "the sweep did not try the will");
    faults.clear();
    sweepTwice();
    assertEquals(Set.of(), keys("d/"));
  }

  /**
   * Review should-fix 4: another operation that meets an applied will whose data cannot
   * all be deleted is told its name changed (it read it before the delete), not failed by
   * the data delete; the will stays for the sweeper, which finishes it.
   */
  @Test
  void aWillThatCannotBeCarriedOutInsideAnotherOperationIsLeftToTheSweeper()
      throws Exception {
    FsPath p = mappedVersion("/inside/f", LEASE);
    String name = ns.layout().recordKey(p);
    VersionedRecord stale = ns.readRecord(name, false).get();
    faults.on(Op.DELETE).keys("d/[^/]+/[0-9]+").always().failBefore();
    assertThrows(IOException.class, () -> ns.delete(p, false)); // name gone, data not
    Thread.sleep(LEASE.toMillis() + 30);
    DataLocks.Held held = ns.locks().takeForReplace(name, stale, p,
        DataLocks.Patience.OUTWAIT); // e.g. an overwrite
    assertTrue(held.changed());
    assertNull(held.lock());
    faults.clear();
    sweepTwice();
    assertEquals(Set.of(), keys("d/"));
  }

  /**
   * The will's second review, should-fix 1: a directory move (Renamer.moveLocked,
   * followChanges) that read a file before a delete whose data delete then failed meets the
   * expired will in takeForRename.
   * The source is gone: moveLocked's answer for that is false ("renamed or deleted
   * meanwhile", the directory move goes on); it must not fail the whole directory move
   * with a TransactionConflictException, nor create the destination.
   */
  @Test
  void aMoveMeetingAWillItCannotCarryOutTreatsItsSourceAsGone() throws Exception {
    FsPath p = mappedVersion("/mv/f", LEASE);
    FsPath dst = FsPath.parse("/mv2/f");
    String name = ns.layout().recordKey(p);
    String to = ns.layout().recordKey(dst);
    VersionedRecord stale = ns.readRecord(name, true).get();
    faults.on(Op.DELETE).keys("d/[^/]+/[0-9]+").always().failBefore();
    assertThrows(IOException.class, () -> ns.delete(p, false)); // name gone, data not
    Thread.sleep(LEASE.toMillis() + 30);
    IOException failed = null;
    boolean moved = true;
    try {
      moved = ns.renamer().moveLocked(name, to, stale, p, dst, true, null);
    } catch (IOException e) {
      failed = e;
    }
    faults.clear();
    assertFalse(ns.probe(dst).isPresent(), "a name was made for a deleted file");
    assertFalse(ns.probe(p).isPresent());
    assertNull(failed, "the directory move failed: " + failed);
    assertFalse(moved);
  }

  /** Review of will-shoulds: the source deleted under a will left, then another file made there. */
  @Test
  void reviewAMoveMeetingAWillLeftFollowsAnotherFileAtItsSource() throws Exception {
    FsPath p = mappedVersion("/mvf/f", LEASE);
    FsPath dst = FsPath.parse("/mvf2/f");
    String name = ns.layout().recordKey(p);
    String to = ns.layout().recordKey(dst);
    VersionedRecord stale = ns.readRecord(name, true).get();
    faults.on(Op.DELETE).keys("d/" + stale.record().fileId() + "/[0-9]+").always().failBefore();
    assertThrows(IOException.class, () -> ns.delete(p, false));
    mappedVersion("/mvf/f", LEASE);
    VersionedRecord y = ns.readRecord(name, true).get();
    Thread.sleep(LEASE.toMillis() + 30);
    Object out;
    try {
      out = ns.renamer().moveLocked(name, to, stale, p, dst, true, null);
    } catch (Exception e) {
      out = e;
    }
    Set<String> dataBefore = keys("d/" + y.record().fileId() + "/");
    assertEquals(Boolean.TRUE, out);
    assertFalse(ns.probe(p).isPresent());
    assertEquals(y.record().fileId(), ns.probe(dst).get().record().fileId());
    faults.clear();
    sweepTwice();
    assertTrue(ns.probe(dst).isPresent());
    assertTrue(keys("d/").containsAll(dataBefore), "Y's data went: " + keys("d/"));
  }

  /** Review of will-shoulds: the source deleted under a will left, then made a directory. */
  @Test
  void reviewAMoveMeetingAWillLeftFollowsADirectoryAtItsSource() throws Exception {
    FsPath p = mappedVersion("/mvd/f", LEASE);
    FsPath dst = FsPath.parse("/mvd2/f");
    String name = ns.layout().recordKey(p);
    String to = ns.layout().recordKey(dst);
    VersionedRecord stale = ns.readRecord(name, true).get();
    faults.on(Op.DELETE).keys("d/[^/]+/[0-9]+").always().failBefore();
    assertThrows(IOException.class, () -> ns.delete(p, false));
    assertTrue(ns.mkdirs(p));
    Thread.sleep(LEASE.toMillis() + 30);
    Object out;
    try {
      out = ns.renamer().moveLocked(name, to, stale, p, dst, true, null);
    } catch (Exception e) {
      out = e;
    }
    faults.clear();
    assertFalse(out instanceof RuntimeException, "unchecked: " + out);
    assertFalse(ns.locks().read("").isPresent(), "a lock under d//lock");
  }

  /**
   * The will's second review, should-fix 1, for a rename that settles both names of a file,
   * on the state settleBothNames is called in (will-land; the review's should-fix 2 found
   * the first version of this test called it where no rename would): both names hold file
   * X (a rename of it cut between its commit and the source's removal, that no lock
   * records: made here by copying the record), then a delete of the source applied and its
   * data delete failed. settleBothNames meets the expired will, which cannot be carried
   * out: it takes no lock and decides on the names as after the lock. The source is gone
   * and the destination holds X: the rename asked for is done, Optional.of(true), as the
   * locked path answers; before, the raw TransactionConflictException of takeForRename.
   * What this proves is that answer and that the call deletes nothing and keeps the will.
   * It does not make the destination safe: the will, once carried out, deletes the data
   * the destination names (two names on one file: a delete of either removes the data of
   * both, the known hazard TwoNamesOneFileException warns of; not this catch's doing).
   */
  @Test
  void settlingBothNamesAfterTheSourcesDeleteLeftItsWillFindsTheRenameDone()
      throws Exception {
    FsPath p = mappedVersion("/both/f", LEASE);
    FsPath dst = FsPath.parse("/both/g");
    String name = ns.layout().recordKey(p);
    String id = ns.readRecord(name, false).get().record().fileId();
    byte[] x = read(p.toString());
    secondName(name, ns.layout().recordKey(dst));
    assertEquals(id, ns.probe(dst).get().record().fileId());
    faults.on(Op.DELETE).keys("d/[^/]+/[0-9]+").always().failBefore();
    assertThrows(IOException.class, () -> ns.delete(p, false)); // src gone, data not
    assertFalse(ns.probe(p).isPresent());
    Thread.sleep(LEASE.toMillis() + 30);
    assertEquals(java.util.Optional.of(true), ns.renamer().settleBothNames(p, dst, id));
    assertFalse(ns.probe(p).isPresent(), "the source came back");
    assertEquals(id, ns.probe(dst).get().record().fileId());
    assertArrayEquals(x, read(dst.toString()), "the call deleted data");
    assertNotNull(ns.locks().read(id).get().will(), "the will was lost");
    faults.clear();
  }

  /**
   * will-land (the will's second review, should-fix 2): the sweeper's named-file site
   * (removeExpiredLocksOfNamedFiles). A will on a file another name still holds (both names
   * held X; a delete of one applied and its data delete keeps failing) cannot be carried
   * out: it is logged and passed over, and the sweep goes on, so the orphans go in the same
   * run. Without the catch there, the WillLeft ended the sweep before any candidate.
   */
  @Test
  void aSweepMeetingAWillLeftOnANamedFileStillSweepsTheOtherFiles() throws Exception {
    FsPath p = mappedVersion("/named/f", LEASE);
    FsPath dst = FsPath.parse("/named/g");
    String name = ns.layout().recordKey(p);
    String id = ns.readRecord(name, false).get().record().fileId();
    byte[] x = read(p.toString());
    secondName(name, ns.layout().recordKey(dst));
    faults.on(Op.DELETE).keys("d/(?!orphan)[^/]+/[0-9]+").always().failBefore();
    assertThrows(IOException.class, () -> ns.delete(p, false)); // src gone, data not
    sweepPassingOverTheWill(4);
    assertNotNull(ns.locks().read(id).get().will(), "the will was lost");
    assertArrayEquals(x, read(dst.toString()), "data went although its delete failed");
    faults.clear();
  }

  /**
   * will-land (the will's second review, should-fix 1 for Replacer): a rename over an
   * existing file whose source was deleted, after the rename read it, by a delete whose
   * data delete failed meets the expired will in takeForRename, with the target's lock
   * taken first or not (file-id order). The source is gone: FileNotFoundException, as the
   * locked path says, not the raw TransactionConflictException; the target is untouched,
   * its lock released, and nothing leaks once the will is carried out.
   */
  @ParameterizedTest
  @CsvSource({"true", "false"})
  void aRenameOverAFileMeetingAWillItCannotCarryOutFindsItsSourceGone(boolean targetFirst)
      throws Exception {
    byte[] old = rewritten(bytes, 1, 77);
    FsPath p;
    FsPath dst;
    String dstId;
    for (int tries = 1; ; tries++) { // ids are random: a pair in the order asked for
      p = mappedVersion("/over" + tries + "/f", LEASE);
      dst = FsPath.parse("/over" + tries + "/g");
      try (FileWriter w = ns.create(dst, false)) {
        w.write(old, 0, LENGTH);
      }
      String srcId = ns.readRecord(ns.layout().recordKey(p), false).get().record().fileId();
      dstId = ns.getFileInfo(dst).record().fileId();
      if ((dstId.compareTo(srcId) < 0) == targetFirst) {
        break;
      }
      assertTrue(tries < 40);
    }
    FsPath src = p;
    FileInfo target = ns.getFileInfo(dst);
    Fault held = faults.on(Op.READ, Op.STAT)
        .keys(java.util.regex.Pattern.quote(ns.layout().recordKey(dst))).pause();
    java.util.concurrent.ExecutorService bg =
        java.util.concurrent.Executors.newSingleThreadExecutor();
    try {
      java.util.concurrent.Future<?> renaming = bg.submit(() -> {
        ns.renameOver(src, target);
        return null;
      });
      held.awaitReached(); // the source read, the target about to be read
      faults.on(Op.DELETE).keys("d/(?!" + dstId + "/)[^/]+/[0-9]+").always().failBefore();
      assertThrows(IOException.class, () -> ns.delete(src, false)); // src gone, data not
      Thread.sleep(LEASE.toMillis() + 30);
      held.release();
      java.util.concurrent.ExecutionException failed = assertThrows(
          java.util.concurrent.ExecutionException.class,
          () -> renaming.get(20, java.util.concurrent.TimeUnit.SECONDS));
      assertInstanceOf(java.io.FileNotFoundException.class, failed.getCause(),
          "not 'source gone': " + failed.getCause());
    } finally {
      faults.clear();
      bg.shutdownNow();
    }
    assertFalse(ns.probe(p).isPresent());
    assertEquals(dstId, ns.probe(dst).get().record().fileId());
    assertArrayEquals(old, read(dst.toString()));
    assertFalse(ns.locks().read(dstId).isPresent(), "the target's lock was left");
    sweepTwice(); // the will, carried out now
    assertEquals(List.of(), leaks());
    assertArrayEquals(old, read(dst.toString()));
  }

  /**
   * Puts the stripes of {@code n} orphan files and sweeps once, past the lease: no will is
   * carried out (the one there cannot be), and every orphan goes in that same run.
   */
  private void sweepPassingOverTheWill(int n) throws Exception {
    Set<String> orphans = new TreeSet<>();
    for (int i = 0; i < n; i++) {
      putStripe("orphan" + i, 0);
      putStripe("orphan" + i, 1);
      orphans.add("d/orphan" + i + "/0");
      orphans.add("d/orphan" + i + "/1");
    }
    Thread.sleep(LEASE.toMillis() + 30);
    OrphanSweeper.Report r = new OrphanSweeper(ns, LEASE).sweep(Duration.ZERO, false);
    assertEquals(0, r.willsCarriedOut());
    Set<String> left = keys("d/");
    for (String orphan : orphans) {
      assertFalse(left.contains(orphan), "not swept: " + orphan);
    }
  }

  /** Puts the record at {@code from} under {@code to} too: one file under two names. */
  private void secondName(String from, String to) throws IOException {
    io.blobfs.store.VersionedBytes got = store.readWithVersion(from, 1 << 16);
    store.put(to, java.nio.ByteBuffer.wrap(got.bytes()), io.blobfs.store.PutMode.CREATE);
  }

  /**
   * The will's second review, should-fix 2: a will that keeps failing (its data delete
   * fails every time) is logged and passed over, and the sweep goes on: the other orphans
   * go in the same run, the will stays for a later one. Before, the WillLeft ended the
   * whole sweep, so one such will stopped every run.
   */
  @Test
  void aSweepMeetingAWillItCannotCarryOutStillSweepsTheOtherFiles() throws Exception {
    FsPath p = mappedVersion("/stuck/f", LEASE);
    String id = ns.readRecord(ns.layout().recordKey(p), false).get().record().fileId();
    faults.on(Op.DELETE).keys("d/" + id + "/[0-9]+").always().failBefore();
    assertThrows(IOException.class, () -> ns.delete(p, false)); // name gone, data not
    sweepPassingOverTheWill(8);
    Set<String> left = keys("d/");
    assertTrue(left.stream().anyMatch(k -> k.startsWith("d/" + id + "/")),
        "the will's data went although its delete failed: " + left);
    faults.clear();
    sweepTwice(); // the will, carried out now
    assertEquals(Set.of(), keys("d/"));
  }

  /**
   * Review must-fix 2: a client predating the will (main 35a1d99) must read a 'D' lock as
   * UNKNOWN, cheaply. Its DataLocks.read parses any owner but 'A' as W/S/R plus an optional
   * Move after the nonce: a long, then a length-prefixed source key. The will's first
   * layout put the name's length and bytes there, so the source's length was 4 ASCII bytes
   * of the name key and main ran new byte[1869623142] (an OutOfMemoryError, which it does
   * not catch). Replays main's parse on the stored will.
   */
  @Test
  void anOldClientReadsADeletesWillAsUnknownWithoutAGiantAllocation() throws Exception {
    FsPath p = mappedVersion("/old/f", LEASE);
    String id = ns.getFileInfo(p).record().fileId();
    String name = ns.layout().recordKey(p);
    faults.on(Op.DELETE).keys(java.util.regex.Pattern.quote(name)).always().failBefore();
    assertThrows(IOException.class, () -> ns.delete(p, false)); // dies after its will
    faults.clear();
    byte[] raw = store.readWithVersion("d/" + id + "/lock", 1 << 16).bytes();
    assertEquals("UNKNOWN", mainsLockParse(raw));
  }

  /**
   * main's (35a1d99) DataLocks.read of a lock's bytes, step for step, to the owner it
   * reports; an allocation past the bytes left fails the test (main would run it).
   */
  private static String mainsLockParse(byte[] raw) {
    java.nio.ByteBuffer b = java.nio.ByteBuffer.wrap(raw);
    if (b.remaining() < 18 || b.get() != 'L') {
      return "UNKNOWN";
    }
    byte owner = b.get();
    b.getLong(); // expires
    b.getLong(); // nonce
    if (owner == 'A') {
      return "ADOPTED";
    }
    if (b.hasRemaining()) { // a rename's move; older versions wrote none
      try {
        b.getLong(); // the move's version
        mainsString(b); // from
        mainsString(b); // to
      } catch (RuntimeException e) {
        return "UNKNOWN"; // main: unreadable
      }
    }
    return owner == 'W' ? "WRITER" : owner == 'S' ? "SWEEPER" : owner == 'R' ? "RENAMER"
        : "UNKNOWN";
  }

  private static void mainsString(java.nio.ByteBuffer b) {
    int length = b.getInt();
    assertTrue(length <= b.remaining(),
        "an old client allocates new byte[" + length + "] reading a will");
    byte[] bytes = new byte[length]; // main's allocation: negative throws, as in main
    b.get(bytes);
  }

  /**
   * A file at {@code path} and a version over it that takes over its stripes 0, 1, 3 (a
   * mapped record), without transactions, writer and rename leases {@code lease}.
   */
  private FsPath mappedVersion(String path, Duration lease) throws IOException {
    open(false);
    ns = new BlobNamespace(faults.store(),
        ns.options().withWriterLease(lease).withRenameLease(lease), StoreCallCounters.NONE);
    FsPath p = FsPath.parse(path);
    try (FileWriter w = ns.create(p, false)) {
      w.write(bytes, 0, LENGTH);
    }
    version(p, rewritten(bytes, 2, 11), stripes(0, 1, 3));
    return p;
  }

  private interface Step {
    void run() throws IOException;
  }

  /**
   * Runs {@code step} with the cut at its {@code cut}th store call armed: that call fails
   * unapplied, or is applied with its answer lost, and every later call fails (the client
   * is dead). Returns whether the cut was reached.
   */
  private boolean withCut(int cut, boolean applied, Step step) {
    Op[] ops = Op.values();
    Fault first = applied ? faults.on(ops[0], ops).nth(cut).applyThenFail()
        : faults.on(ops[0], ops).nth(cut).always().failBefore();
    if (applied) {
      faults.on(ops[0], ops).nth(cut + 1).always().failBefore();
    }
    try {
      step.run();
    } catch (IOException | RuntimeException dead) {
      // the client died at the cut: every later call failed
    }
    boolean fired = first.fired() > 0;
    faults.clear();
    return fired;
  }

  private void cutAtEveryCall(Publication cutOne) throws Exception {
    open(false);
    ns = new BlobNamespace(faults.store(), ns.options().withWriterLease(LEASE),
        StoreCallCounters.NONE);
    List<String> problems = new ArrayList<>();
    int cuts = 0;
    boolean reachedEnd = false;
    for (int cut = 1; !reachedEnd && cut < 200; cut++) {
      reachedEnd = true;
      for (boolean applied : new boolean[] {false, true}) {
        String at = "cut " + cut + (applied ? " (applied, answer lost)" : " (not applied)");
        FsPath p = FsPath.parse("/c" + cut + (applied ? "a" : "n") + "/f");
        // The base is a mapped version itself (it borrows stripes 0 and 3 of an older
        // one), so that the publication also drops a borrowed id and moves the others.
        try (FileWriter w = ns.create(p, false)) {
          w.write(bytes, 0, LENGTH);
        }
        byte[] base = rewritten(bytes, 1, cut);
        version(p, base, stripes(0, 2, 3));
        byte[] next = rewritten(base, 2, 1000 + cut);
        boolean fired = withCut(cut, applied, () -> cutOne.publish(p, next));
        reachedEnd &= !fired;
        cuts += fired ? 1 : 0;
        sweepTwice();
        byte[] now = read(p.toString());
        if (!Arrays.equals(now, base) && !Arrays.equals(now, next)) {
          problems.add(at + ": the name reads neither version whole");
        }
        // The next publication over what is there (a takeover), or a delete.
        if (cut % 2 == 0) {
          version(p, rewritten(now, 0, 2000 + cut), stripes(1, 2, 3));
        } else {
          assertTrue(ns.delete(p, false));
        }
        sweepTwice();
        for (String leak : leaks()) {
          problems.add(at + ", then " + (cut % 2 == 0 ? "a version" : "a delete") + ": "
              + leak);
        }
      }
    }
    System.out.printf("[takeover crash] %d cuts%n", cuts);
    assertTrue(reachedEnd, "the publication never completed without reaching the cut");
    assertTrue(cuts > 20, "cuts: " + cuts);
    assertEquals(List.of(), problems);
  }
}
