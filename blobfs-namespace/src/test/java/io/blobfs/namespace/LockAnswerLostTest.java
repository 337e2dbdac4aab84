package io.blobfs.namespace;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
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
import java.util.Random;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * A write of a file's lock that the store applied but whose answer was lost (a timeout
 * after the OSD applied it) is recognised by its nonce: the call that wrote it holds it
 * and goes on, instead of failing and leaving the file blocked by a lock nobody holds for
 * a whole lease. On a store without transactions (RADOS), where the locks are used. The
 * leases are long here, so that a test passing because a lock expired is not possible.
 */
class LockAnswerLostTest {
  private static final int STRIPE = 64 << 10;
  private static final FsPath F = FsPath.parse("/f");
  private static final FsPath G = FsPath.parse("/g");
  private static final String LOCKS = "d/.*/" + KeyLayout.LOCK;

  private final InMemoryBlobStore memory =
      new InMemoryBlobStore("locks", new StoreLimits(1024, 1L << 30, Integer.MAX_VALUE));
  private final FaultInjectingBlobStore faults =
      FaultInjectingBlobStore.over(memory, TransactionalBlobStore.class);
  private BlobNamespace ns;

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
}
