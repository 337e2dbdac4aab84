package io.blobfs.namespace;

import static org.junit.jupiter.api.Assertions.*;

import io.blobfs.namespace.FileRecord.Due;
import io.blobfs.namespace.StripeMap.Run;
import io.blobfs.store.PutMode;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import io.blobfs.store.FaultInjectingBlobStore.Fault;
import io.blobfs.store.FaultInjectingBlobStore.Op;
import java.time.Duration;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/** Review of shared-stripes (session 15). */
class SharedStripesReviewTest extends SharedStripesFixture {
  /**
   * A mapped record whose header is within 4 KiB (so it decodes, and a takeover may make
   * it) cannot be renamed without transactions: MarkedMove's marked copy adds the
   * destination key to the header, and encodeMapped throws IllegalArgumentException
   * (untyped, mid-rename) past MAX_STORED_HEADER.
   */
  @Test
  void aMappedRecordNearTheHeaderLimitCanBeRenamed() throws Exception {
    open(false);
    List<Run> runs = new ArrayList<>();
    for (int i = 0; i < 440; i++) {
      runs.add(new Run(2L * i, 1, i % 3));
    }
    FileRecord r = FileRecord.striped("own", 880L * S, 1, S).withStripes(
        new StripeMap(List.of("A", "B", "C"), runs), List.of());
    assertTrue(r.headerSize() <= FileRecord.MAX_STORED_HEADER, "" + r.headerSize());
    store.put("n/a/f", r.encode(), PutMode.CREATE);
    String longName = "/b/" + "x".repeat(200);
    assertTrue(ns.rename(FsPath.parse("/a/f"), FsPath.parse(longName)));
    assertEquals(r.map(), ns.getFileInfo(FsPath.parse(longName)).record().map());
  }

  /**
   * A due's stripe count is any u64: decode accepts Long.MAX_VALUE, and deleteData then
   * loops (and fills a LinkedHashSet) 2^63 times. Runs are bounded to u32 and by the file;
   * a due is bounded by nothing.
   */
  @Test
  void aDueWithAnAbsurdStripeCountIsRefused() {
    FileRecord r = FileRecord.striped("B", 10, 1, S).withStripes(StripeMap.NONE,
        List.of(new Due("Z", Long.MAX_VALUE, Due.Scope.ALL)));
    ByteBuffer enc = r.encode();
    byte[] b = new byte[enc.remaining()];
    enc.get(b);
    assertThrows(CorruptRecordException.class, () -> FileRecord.decode("n/x", b, b.length, false));
  }

  /**
   * RADOS step 4-5 with a slow commit: A's lock is ADOPTED (pending, until 300 ms); a rename
   * of A waits, takes the lock over (RENAMER), then its mark loses to B's late commit
   * (putIfVersion on A's version, applied after until). The rename follows B under B's
   * lock and releases A's: B names A's keys and A's lock is gone (I2 broken), so the
   * sweeper race of AdoptedStripesTest#adoptedKeysSurviveTheirRecordMovingPastBothScans
   * deletes them.
   */
  @Test
  void aLateCommitKeepsItsAdoptionWhenARenameTookTheLockOver() throws Exception {
    open(false);
    FileWriter w = ns.create(FsPath.parse("/a/f"), false);
    w.write(bytes, 0, LENGTH);
    w.close();
    String a = ns.getFileInfo(FsPath.parse("/a/f")).record().fileId();
    long va = store.readWithVersion("n/a/f", 1).version();
    ns.locks().adopt(a, ns.locks().read(a), "B", Duration.ofMillis(300));
    FileRecord b = FileRecord.striped("B", LENGTH, 1, S).withStripes(
        new StripeMap(List.of(a), List.of(new Run(0, 4, 0))), List.of());
    Fault mark = faults.on(Op.PUT).keys("n/a/f").pause();
    ExecutorService racer = Executors.newSingleThreadExecutor();
    Future<Boolean> rename = racer.submit(
        () -> ns.rename(FsPath.parse("/a/f"), FsPath.parse("/a/g")));
    mark.awaitReached();
    store.putIfVersion("n/a/f", b.encode(), va); // B's commit, late
    mark.release();
    try {
      rename.get(30, TimeUnit.SECONDS); // applied, or lost to B: either way A's adoption must stay
    } catch (java.util.concurrent.ExecutionException lost) {
      // "conflicted with a concurrent change": fine
    }
    racer.shutdownNow();
    assertEquals(a, b.map().ids().get(0));
    assertTrue(ns.locks().read(a).isPresent(), "A's ADOPTED lock is gone while B names A's keys");
    assertEquals(DataLocks.Owner.ADOPTED, ns.locks().read(a).get().owner());
  }
}
