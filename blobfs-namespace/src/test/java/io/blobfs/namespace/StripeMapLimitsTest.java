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

/**
 * The limits of the stripe-map record format (BFS3) and of adopted locks, from the review of
 * shared-stripes (session 15): a record that decodes can be renamed (its mark is outside the
 * 4 KiB limit), a cleanup due is bounded and never names the record's own id or sits on a
 * directory, borrowed ids are counted in bytes, and a late commit keeps its adoption.
 */
class StripeMapLimitsTest extends SharedStripesFixture {
  /**
   * A mapped record whose header is within 4 KiB (so it decodes, and a takeover may make
   * it) is renamed without transactions, with a 200-char destination: MarkedMove's marked
   * copies add the other key to the header, which the limit does not count (it used to:
   * encodeMapped threw IllegalArgumentException mid-rename, the lock kept).
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
   * A due's stripe count was any u64: decode accepted Long.MAX_VALUE, and deleteData then
   * looped (and filled a LinkedHashSet) 2^63 times. Now bounded like a run (u32); the
   * stored count is set past the bound in the bytes (a writer cannot make such a due).
   */
  @Test
  void aDueWithAnAbsurdStripeCountIsRefused() throws Exception {
    byte[] b = dueRecord("B", "Z");
    assertEquals(5, ByteBuffer.wrap(b, b.length - 9, 8).getLong());
    for (long absurd : new long[] {Long.MAX_VALUE, 1L << 32, -1}) {
      ByteBuffer.wrap(b, b.length - 9, 8).putLong(absurd);
      CorruptRecordException e = assertThrows(CorruptRecordException.class,
          () -> FileRecord.decode("n/x", b, b.length, false), "" + absurd);
      // The constructor's own message, not a wording that names maps (review S5).
      assertTrue(e.getMessage().contains("bad cleanup due: Z " + absurd), e.getMessage());
    }
    ByteBuffer.wrap(b, b.length - 9, 8).putLong(0xffffffffL);
    assertEquals(0xffffffffL,
        FileRecord.decode("n/x", b, b.length, false).dues().get(0).stripeCount());
  }

  /**
   * A due naming the record's own id would delete the keys the record itself names, and a
   * directory has no data: both refused, typed (the ids are set in the bytes).
   */
  @Test
  void aDueOnTheOwnIdOrOnADirectoryIsRefused() throws Exception {
    byte[] own = dueRecord("B", "C");
    own[own.length - 10] = 'B'; // the due's one-byte id, before its u64 and scope
    assertEquals("B", FileRecord.decode("n/x", dueRecord("B", "C"), own.length, false).fileId());
    assertThrows(CorruptRecordException.class,
        () -> FileRecord.decode("n/x", own, own.length, false));
    byte[] dir = dueRecord("B", "C");
    dir[7] = (byte) FileRecord.Kind.DIRECTORY.ordinal(); // after magic, length, flags
    assertThrows(CorruptRecordException.class,
        () -> FileRecord.decode("n/x", dir, dir.length, false));
  }

  /** Ids are stored as UTF-8, and the 64 the header's size counts on are bytes. */
  @Test
  void borrowedAndDueIdsAreLimitedInBytes() {
    String twoByteChars = "\u00e9".repeat(33); // 33 chars, 66 bytes
    assertThrows(IllegalArgumentException.class,
        () -> new StripeMap(List.of(twoByteChars), List.of(new Run(0, 1, 0))));
    assertThrows(IllegalArgumentException.class, () -> new Due(twoByteChars, 1, Due.Scope.ALL));
    String fits = "\u00e9".repeat(32); // 64 bytes
    assertEquals(fits, new StripeMap(List.of(fits), List.of(new Run(0, 1, 0))).idOf(0));
    assertEquals(fits, new Due(fits, 1, Due.Scope.ALL).fileId());
  }

  /** A striped record of 10 bytes with id {@code own} and one due on {@code due}, 5 stripes. */
  private static byte[] dueRecord(String own, String due) throws Exception {
    FileRecord r = FileRecord.striped(own, 10, 1, S).withStripes(StripeMap.NONE,
        List.of(new Due(due, 5, Due.Scope.ALL)));
    ByteBuffer enc = r.encode();
    byte[] b = new byte[enc.remaining()];
    enc.get(b);
    return b;
  }

  /**
   * RADOS step 4-5 with a slow commit: A's lock is ADOPTED (pending, until 300 ms); a rename
   * of A waits, takes the lock over (RENAMER), then its mark loses to B's late commit
   * (putIfVersion on A's version, applied after until). The rename used to release A's
   * lock then: B named A's keys with A's lock gone (I2 broken), so the sweeper race of
   * AdoptedStripesTest#adoptedKeysSurviveTheirRecordMovingPastBothScans deleted them.
   */
  @Test
  void aLateCommitKeepsItsAdoptionWhenARenameTookTheLockOver() throws Exception {
    Adopted adopted = adoptedByALateCommit();
    String a = adopted.a();
    FileRecord b = adopted.b();
    Fault mark = faults.on(Op.PUT).keys("n/a/f").pause();
    ExecutorService racer = Executors.newSingleThreadExecutor();
    Future<Boolean> rename = racer.submit(
        () -> ns.rename(FsPath.parse("/a/f"), FsPath.parse("/a/g")));
    mark.awaitReached();
    store.putIfVersion("n/a/f", b.encode(), adopted.va()); // B's commit, late
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

  /**
   * The same race for a delete (takeForReplace, then a conditional delete of the name): it
   * loses to B's late commit (its retry, which would delete B, fails), and A's ADOPTED lock
   * stays, now B's and committed, with A's keys.
   */
  @Test
  void aLateCommitKeepsItsAdoptionWhenADeleteTookTheLockOver() throws Exception {
    Adopted adopted = adoptedByALateCommit();
    String a = adopted.a();
    FileRecord b = adopted.b();
    Fault delete = faults.on(Op.DELETE).keys("n/a/f").pause();
    // Its retry (which would delete B, and A's keys with it) fails: B stays named.
    faults.on(Op.DELETE).keys("n/a/f").nth(2).always().failBefore();
    ExecutorService racer = Executors.newSingleThreadExecutor();
    Future<Boolean> deleted = racer.submit(() -> ns.delete(FsPath.parse("/a/f"), false));
    delete.awaitReached();
    store.putIfVersion("n/a/f", b.encode(), adopted.va()); // B's commit, late
    delete.release();
    try {
      deleted.get(30, TimeUnit.SECONDS);
    } catch (java.util.concurrent.ExecutionException lost) {
      // lost to B: fine
    }
    racer.shutdownNow();
    assertEquals("B", ns.getFileInfo(FsPath.parse("/a/f")).record().fileId());
    assertTrue(ns.locks().read(a).isPresent(), "A's ADOPTED lock is gone while B names A's keys");
    assertEquals(DataLocks.Owner.ADOPTED, ns.locks().read(a).get().owner());
    assertEquals("B", ns.locks().read(a).get().adopter());
    for (long s = 0; s < 4; s++) {
      assertTrue(store.stat(ns.layout().dataKey(a, s)).exists(), "stripe " + s);
    }
  }

  /** A's file at /a/f, its lock ADOPTED by B until 300 ms from now, A's version, B's record. */
  private record Adopted(String a, long va, FileRecord b) {}

  private Adopted adoptedByALateCommit() throws Exception {
    open(false);
    FileWriter w = ns.create(FsPath.parse("/a/f"), false);
    w.write(bytes, 0, LENGTH);
    w.close();
    String a = ns.getFileInfo(FsPath.parse("/a/f")).record().fileId();
    long va = store.readWithVersion("n/a/f", 1).version();
    ns.locks().adopt(a, ns.locks().read(a), "B", Duration.ofMillis(300));
    return new Adopted(a, va, FileRecord.striped("B", LENGTH, 1, S).withStripes(
        new StripeMap(List.of(a), List.of(new Run(0, 4, 0))), List.of()));
  }
}
