package io.blobfs.namespace;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.blobfs.store.FaultInjectingBlobStore;
import io.blobfs.store.FaultInjectingBlobStore.Fault;
import io.blobfs.store.FaultInjectingBlobStore.Op;
import io.blobfs.store.Futures;
import io.blobfs.store.StoreLimits;
import io.blobfs.store.TransactionalBlobStore;
import io.blobfs.store.memory.InMemoryBlobStore;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.Random;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * A write of a file's lock that the store applied but whose answer was lost (a timeout
 * after the OSD applied it) is recognised by its nonce: the call that wrote it holds it
 * and goes on, instead of failing and leaving the file blocked by a lock nobody holds for
 * a whole lease; but only if it is that call's (its nonce) and with half its lease left (a
 * lost answer comes late; a claim with little left could let the caller's next step outlast
 * it). On a store without transactions (RADOS), where the locks are used. The first cases'
 * leases are long, so that none passes because a lock expired.
 */
class LockAnswerLostTest {
  private static final int STRIPE = 64 << 10;
  private static final FsPath F = FsPath.parse("/f");
  private static final FsPath G = FsPath.parse("/g");
  private static final String LOCKS = "d/.*/" + KeyLayout.LOCK;
  private static final String ID = "0123456789abcdef0123456789abcdef";

  private final InMemoryBlobStore memory =
      new InMemoryBlobStore("locks", new StoreLimits(1024, 1L << 30, Integer.MAX_VALUE));
  private final FaultInjectingBlobStore faults =
      FaultInjectingBlobStore.over(memory, TransactionalBlobStore.class);
  private final ExecutorService threads = Executors.newCachedThreadPool();
  private BlobNamespace ns;

  @AfterEach
  void stop() {
    threads.shutdownNow();
  }

  @BeforeEach
  void open() {
    // A writer lease of 10 minutes: nothing in these tests may wait for one to run out.
    ns = new BlobNamespace(faults.store(), new NamespaceOptions(STRIPE, 16 << 10, 64 << 10,
        1024, false, 100, false, Duration.ofMinutes(10)), StoreCallCounters.NONE);
    assertFalse(ns.hasAtomicRename());
  }

  private static byte[] random(int n, long seed) {
    byte[] b = new byte[n];
    new Random(seed).nextBytes(b);
    return b;
  }

  private void write(FsPath path, byte[] data, boolean overwrite) throws IOException {
    FileWriter w = ns.create(path, overwrite);
    w.write(data, 0, data.length);
    w.close();
  }

  private void assertReads(FsPath path, byte[] expected) throws IOException {
    FileReader r = ns.open(path);
    assertEquals(expected.length, r.length());
    ByteBuffer back = ByteBuffer.allocate(expected.length);
    while (back.hasRemaining()) {
      assertTrue(Futures.await(r.read(back.position(), back)) > 0, "ended early");
    }
    assertArrayEquals(expected, back.array());
  }

  private void assertNoLockLeft() throws IOException {
    assertEquals(0, memory.scan("d/", null, 10_000).keys().stream()
        .filter(k -> k.endsWith("/" + KeyLayout.LOCK)).count(), "a lock was left behind");
  }

  @Test
  void aWriterWhoseLockWasTakenWithItsAnswerLostWritesTheFile() throws IOException {
    byte[] data = random(3 * STRIPE + 7, 1);
    Fault lost = faults.on(Op.PUT).keys(LOCKS).applyThenFail();

    write(F, data, false);

    assertEquals(1, lost.fired());
    assertReads(F, data);
    assertNoLockLeft();
  }

  @Test
  void aWriterWhoseLeaseRenewalBeforePublishingLostItsAnswerPublishes() throws IOException {
    byte[] data = random(2 * STRIPE + 3, 2);
    // The first lock write takes the lock, the second renews it right before the record.
    Fault lost = faults.on(Op.PUT).keys(LOCKS).nth(2).applyThenFail();

    write(F, data, false);

    assertEquals(1, lost.fired());
    assertReads(F, data);
    assertNoLockLeft();
  }

  @Test
  void aRenameWhoseLockWasTakenWithItsAnswerLostMovesTheFileAndLeavesItFree()
      throws IOException {
    byte[] data = random(2 * STRIPE + 9, 3);
    write(F, data, false);
    Fault lost = faults.on(Op.PUT).keys(LOCKS).applyThenFail();

    assertTrue(ns.rename(F, G));

    assertEquals(1, lost.fired());
    assertTrue(ns.probe(F).isEmpty());
    assertReads(G, data);
    assertNoLockLeft();
    // The file is free at once: a rename back does not wait for a lease (10 minutes).
    assertTrue(ns.rename(G, F));
    assertReads(F, data);
  }

  @Test
  void anOverwriteWhoseLockOnTheReplacedFileLostItsAnswerReplacesIt() throws IOException {
    write(F, random(2 * STRIPE, 4), false);
    String replaced = ns.getFileInfo(F).record().fileId();
    byte[] after = random(STRIPE + 1, 5);
    FileWriter w = ns.create(F, true);
    w.write(after, 0, after.length);
    Fault lost = faults.on(Op.PUT).keys("d/" + replaced + "/" + KeyLayout.LOCK).applyThenFail();

    w.close();

    assertEquals(1, lost.fired());
    assertReads(F, after);
    assertNoLockLeft();
  }

  @Test
  void aDeleteWhoseLockWasTakenWithItsAnswerLostDeletesTheFile() throws IOException {
    write(F, random(2 * STRIPE, 6), false);
    Fault lost = faults.on(Op.PUT).keys(LOCKS).applyThenFail();

    assertTrue(ns.delete(F, false));

    assertEquals(1, lost.fired());
    assertTrue(ns.probe(F).isEmpty());
    assertEquals(0, memory.scan("d/", null, 10_000).keys().size(), "data or lock left");
  }

  private BlobNamespace namespace(Duration writerLease, boolean faulty) {
    return new BlobNamespace(faulty ? faults.store() : memory, new NamespaceOptions(STRIPE,
        16 << 10, 64 << 10, 1024, false, 100, false, writerLease), StoreCallCounters.NONE);
  }

  /** Pins the nonce check: a writer whose renewal fails must not hold a sweeper's lock. */
  @Test
  void aRenewalRefusedBecauseASweeperTookTheLockDoesNotClaimTheSweepersLock() throws Exception {
    DataLocks locks = namespace(Duration.ofMinutes(10), true).locks();
    DataLocks.Lock writer = locks.takeForWriter(ID, Duration.ofMillis(20));
    Thread.sleep(60); // the writer's lease runs out
    Optional<DataLocks.Lock> sweeper =
        locks.takeForSweeper(ID, locks.read(ID), Duration.ofMinutes(10));
    assertTrue(sweeper.isPresent());
    // refused (a conflict), and failed unapplied (a timeout): neither may hold the lock
    assertThrows(IOException.class, () -> locks.renew(writer, Duration.ofMinutes(10)));
    faults.on(Op.PUT).keys(LOCKS).failBefore();
    assertThrows(IOException.class, () -> locks.renew(writer, Duration.ofMinutes(10)));
    assertTrue(locks.stillHeld(sweeper.get()));
  }

  /** Pins the nonce check on the sweeper's side: a live writer's lock is not the sweeper's. */
  @Test
  void aSweeperWhoseCreateMeetsALiveWritersLockHoldsNothing() throws Exception {
    DataLocks locks = namespace(Duration.ofMinutes(10), true).locks();
    locks.takeForWriter(ID, Duration.ofMinutes(10));
    assertTrue(locks.takeForSweeper(ID, Optional.empty(), Duration.ofMinutes(10)).isEmpty());
    faults.on(Op.PUT).keys(LOCKS).failBefore();
    assertThrows(IOException.class,
        () -> locks.takeForSweeper(ID, locks.read(ID), Duration.ofMinutes(10)));
  }

  /** Pins the expiry check: an own lock applied after its lease ran out is not claimed. */
  @Test
  void anOwnLockAppliedAlreadyExpiredIsNotClaimed() throws Exception {
    DataLocks locks = namespace(Duration.ofMinutes(10), true).locks();
    faults.on(Op.PUT).keys(LOCKS).delay(Duration.ofMillis(80));
    faults.on(Op.PUT).keys(LOCKS).applyThenFail();
    assertThrows(IOException.class, () -> locks.takeForWriter(ID, Duration.ofMillis(20)));
  }

  /**
   * The renewal before publishing is applied with its answer lost when little of its lease
   * is left (a lost answer is a timeout: it comes late by construction). Main: close()
   * fails, nothing published. Branch: the lock is claimed with ~100 ms left, the record put
   * takes longer, a sweep takes the expired lock and deletes the data, the record lands.
   */
  @Test
  void aRenewalClaimedWithLittleLeaseLeftDoesNotPublishDataASweeperDeleted() throws Exception {
    lateRenewal(true);
  }

  /** The same with the renewal answered, only late: main too (stamped() checks no expiry). */
  @Test
  void aRenewalAnsweredWithLittleLeaseLeftDoesNotPublishDataASweeperDeleted() throws Exception {
    lateRenewal(false);
  }

  private void lateRenewal(boolean answerLost) throws Exception {
    Duration lease = Duration.ofMillis(4000);
    BlobNamespace writerNs = namespace(lease, true);
    BlobNamespace other = namespace(lease, false);
    byte[] data = new byte[2 * STRIPE + 3];
    new Random(9).nextBytes(data);
    FileWriter w = writerNs.create(F, false);
    w.write(data, 0, data.length);
    String id = w.fileId();
    faults.on(Op.PUT).keys(LOCKS).delay(lease.minusMillis(150)); // the renewal, late
    if (answerLost) {
      faults.on(Op.PUT).keys(LOCKS).applyThenFail();               // and its answer lost
    }
    Fault put = faults.on(Op.PUT).keys(KeyLayout.NAMES + F).pause(); // the record put, slow
    Future<Object> close = threads.submit(() -> {
      try {
        w.close();
        return "closed";
      } catch (IOException e) {
        return e;
      }
    });
    long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
    while (put.fired() == 0 && !close.isDone() && System.nanoTime() < until) {
      Thread.sleep(5);
    }
    boolean reached = put.fired() > 0;
    boolean sweptData = false;
    if (reached) {
      put.awaitReached();
    }
    if (reached) {
      Thread.sleep(400); // the claimed lease runs out while the put is on its way
      OrphanSweeper.Report swept =
          new OrphanSweeper(other, Duration.ofMinutes(1)).sweep(Duration.ZERO, false);
      put.release();
      // Either the renewal is taken again with half its lease (the data stays the
      // writer's), or the sweep takes the data and close() must then publish nothing.
      sweptData = swept.orphanFileIds().equals(List.of(id));
    }
    Object outcome = close.get(30, TimeUnit.SECONDS);
    if ("closed".equals(outcome)) {
      assertFalse(sweptData, "DATA LOSS: close() returned after a sweep deleted its data");
      FileReader r = other.open(F);
      ByteBuffer back = ByteBuffer.allocate(data.length);
      try {
        while (back.hasRemaining()) {
          assertTrue(Futures.await(r.read(back.position(), back)) > 0, "ended early");
        }
      } catch (IOException e) {
        throw new AssertionError("DATA LOSS: close() returned, " + F + " names data a"
            + " sweeper deleted: " + e, e);
      }
      assertArrayEquals(data, back.array());
    } else {
      assertTrue(other.probe(F).isEmpty(), "close() failed: " + outcome);
    }
  }

  private DataLocks locks() {
    return ns.locks();
  }

  /**
   * A writer's lock applied with its answer lost, found with less than half its lease left
   * (the answer came late): not claimed, the call fails (its next step could outlast it).
   */
  @Test
  void anOwnLockFoundWithLessThanHalfItsLeaseLeftIsNotClaimed() throws Exception {
    Duration lease = Duration.ofMillis(1000);
    faults.on(Op.PUT).keys(LOCKS).delay(Duration.ofMillis(600));
    faults.on(Op.PUT).keys(LOCKS).applyThenFail();
    assertThrows(IOException.class, () -> locks().takeForWriter(ID, lease));
    assertEquals(ID.length(), locks().read(ID).get().fileId().length()); // it was applied
  }

  private Fault countLockPuts() {
    return faults.on(Op.PUT).keys(LOCKS).always().delay(Duration.ZERO);
  }

  /** One late answer: renewed again, on the version it renewed, and held with margin. */
  @Test
  void aRenewalAnsweredLateIsRenewedAgainAndHeld() throws Exception {
    Duration lease = Duration.ofSeconds(3);
    DataLocks.Lock writer = locks().takeForWriter(ID, lease);
    Fault puts = countLockPuts();
    faults.on(Op.PUT).keys(LOCKS).delay(Duration.ofMillis(2200)); // ~800 ms of 3 s left
    DataLocks.Lock renewed = locks().renew(writer, lease);
    assertTrue(puts.fired() >= 2, "the late renewal was not renewed again: " + puts.fired());
    assertTrue(locks().stillHeld(renewed));
    assertNotEquals(writer.version(), renewed.version());
    assertEquals(DataLocks.Owner.WRITER, renewed.owner());
  }

  /** Always late: exactly three conditional renewals, then the writer fails. */
  @Test
  void threeLateRenewalsFailAndNoFourthIsSent() throws Exception {
    Duration lease = Duration.ofMillis(400);
    DataLocks.Lock writer = locks().takeForWriter(ID, lease);
    Fault puts = countLockPuts();
    faults.on(Op.PUT).keys(LOCKS).always().delay(Duration.ofMillis(300)); // <= 100 ms left
    IOException e = assertThrows(IOException.class, () -> locks().renew(writer, lease));
    assertTrue(e.getMessage().contains("answered too late 3 times"), e.getMessage());
    assertEquals(3, puts.fired());
  }

  /**
   * A renewal answered after its lock expired; a sweeper takes that expired lock before the
   * retry is applied. The retry must conflict and the writer must not hold the lock.
   */
  @Test
  void aSweepBetweenLateRenewalsIsNotClaimed() throws Exception {
    Duration lease = Duration.ofMillis(200);
    DataLocks.Lock writer = locks().takeForWriter(ID, lease);
    faults.on(Op.PUT).keys(LOCKS).delay(Duration.ofMillis(300)); // attempt 1: applied expired
    Fault retry = faults.on(Op.PUT).keys(LOCKS).nth(2).pause();   // attempt 2: held
    Future<DataLocks.Lock> renew = threads.submit(() -> locks().renew(writer, lease));
    retry.awaitReached();
    Optional<DataLocks.Lock> seen = locks().read(ID);
    assertTrue(seen.isPresent() && seen.get().expired(System.currentTimeMillis()));
    Optional<DataLocks.Lock> sweeper =
        locks().takeForSweeper(ID, seen, Duration.ofMinutes(10));
    assertTrue(sweeper.isPresent(), "the sweeper could not take the expired lock");
    retry.release();
    ExecutionException e = assertThrows(ExecutionException.class,
        () -> renew.get(30, TimeUnit.SECONDS));
    assertTrue(e.getCause() instanceof IOException, String.valueOf(e.getCause()));
    assertTrue(locks().stillHeld(sweeper.get()), "the sweeper lost its lock");
    assertEquals(DataLocks.Owner.SWEEPER, locks().read(ID).get().owner());
    assertFalse(locks().read(ID).get().nonce() == writer.nonce());
  }
}
