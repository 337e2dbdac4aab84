package io.blobfs.namespace;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.blobfs.store.BlobNotFoundException;
import io.blobfs.store.BlobStore;
import io.blobfs.store.FaultInjectingBlobStore;
import io.blobfs.store.FaultInjectingBlobStore.Fault;
import io.blobfs.store.FaultInjectingBlobStore.Op;
import io.blobfs.store.Futures;
import io.blobfs.store.StoreLimits;
import io.blobfs.store.TransactionalBlobStore;
import io.blobfs.store.memory.InMemoryBlobStore;
import java.io.IOException;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import java.nio.ByteBuffer;
import java.util.Random;
import org.junit.jupiter.api.Test;

/**
 * Store calls whose outcome is unknown (a timeout that may have applied) in the middle of a
 * rename without transactions (RADOS' path) and at the end of an overwrite: the answer is
 * read back, so that a failed rename never leaves two names on one file's data, which a
 * later delete of either would destroy. A file rename ({@link MarkedMove}) commits when
 * its source, marked moving, is rewritten as moved: a failure after that is cleanup, and
 * the rename has happened; a failure before it (the destination's incoming create
 * included) leaves the source.
 */
class UnknownOutcomeTest {
  private static final int STRIPE = 64 << 10;
  private static final FsPath F = FsPath.parse("/f");
  private static final FsPath G = FsPath.parse("/g");
  private static final byte[] DATA = random(2 * STRIPE + 7, 1);

  private final InMemoryBlobStore memory =
      new InMemoryBlobStore("unknown", new StoreLimits(1024, 1L << 30, Integer.MAX_VALUE));
  // Without transactions, as on RADOS: the rename is a put, then a conditional delete.
  private final FaultInjectingBlobStore faults =
      FaultInjectingBlobStore.over(memory, TransactionalBlobStore.class);
  private final BlobNamespace ns = namespace(faults.store());

  private static BlobNamespace namespace(BlobStore store) {
    return new BlobNamespace(store, new NamespaceOptions(STRIPE, 16 << 10, 64 << 10, 1024,
        false, 100), StoreCallCounters.NONE);
  }

  private static byte[] random(int n, long seed) {
    byte[] b = new byte[n];
    new Random(seed).nextBytes(b);
    return b;
  }

  private static void write(BlobNamespace ns, FsPath path, byte[] data) throws IOException {
    try (FileWriter w = ns.create(path, true)) {
      w.write(data, 0, data.length);
    }
  }

  private static byte[] read(BlobNamespace ns, FsPath path) throws IOException {
    FileReader r = ns.open(path);
    ByteBuffer back = ByteBuffer.allocate((int) r.length());
    while (back.hasRemaining()) {
      assertTrue(Futures.await(r.read(back.position(), back)) > 0, "ended early");
    }
    return back.array();
  }

  /** After a failed rename, deleting the name it did not make must leave the file whole. */
  private void assertOnlyAt(FsPath at, FsPath notAt) throws IOException {
    faults.clear();
    assertFalse(ns.probe(notAt).isPresent(), notAt + " is left naming the file");
    ns.delete(notAt, false);
    assertArrayEquals(DATA, read(ns, at));
  }

  @Test
  void aSourceDeleteThatFailsUnappliedAfterTheCommitLeavesOnlyTheDestination()
      throws IOException {
    write(ns, F, DATA);
    Fault f = faults.on(Op.DELETE).keys("n/f").failBefore();
    assertTrue(ns.rename(F, G)); // committed: the marked source reads as gone
    assertEquals(1, f.fired());
    assertOnlyAt(G, F);
  }

  @Test
  void aSourceDeleteAppliedWithItsAnswerLostCompletesTheRename() throws IOException {
    write(ns, F, DATA);
    Fault f = faults.on(Op.DELETE).keys("n/f").applyThenFail();
    assertTrue(ns.rename(F, G));
    assertEquals(1, f.fired());
    assertOnlyAt(G, F);
  }

  @Test
  void aDestinationPutAppliedWithItsAnswerLostCommitsTheRename() throws IOException {
    write(ns, F, DATA);
    Fault f = faults.on(Op.PUT).keys("n/g").applyThenFail();
    assertTrue(ns.rename(F, G)); // read back: the destination holds the file
    assertEquals(1, f.fired());
    assertOnlyAt(G, F);
  }

  @Test
  void aDestinationPutThatFailsUnappliedChangesNothing() throws IOException {
    write(ns, F, DATA);
    faults.on(Op.PUT).keys("n/g").failBefore();
    assertThrows(IOException.class, () -> ns.rename(F, G));
    assertOnlyAt(F, G);
  }

  @Test
  void anIncomingCreateWhoseOutcomeCannotBeReadBackIsReportedAndReadersSeeOneName()
      throws IOException {
    write(ns, F, DATA);
    faults.on(Op.PUT).keys("n/g").failBefore();
    // The destination's incoming create fails (step 2, before the commit). The rename
    // reads n/g once before it (its probe); the second read is the create's read-back.
    Fault readBack = faults.on(Op.READ).keys("n/g").nth(2).always().failBefore();
    IOException e = assertThrows(IOException.class, () -> ns.rename(F, G));
    assertEquals(1, readBack.fired());
    assertTrue(e.getMessage().contains("could not be read back"), e.getMessage());
    faults.clear();
    assertArrayEquals(DATA, read(ns, F)); // the mark, uncommitted, reads as the source
    assertFalse(ns.probe(G).isPresent());
  }

  @Test
  void anOverwriteThatKeepsLosingTheNameFailsWithAnIoExceptionAndKeepsNothing()
      throws Exception {
    // The name reads as absent every time, yet is always taken when created: each attempt
    // of an overwrite's publication loses, up to the bound. The answer is an IOException
    // (before, a ClassCastException), and the writer's data is removed.
    write(ns, F, random(10, 2));
    BlobStore hiding = (BlobStore) Proxy.newProxyInstance(getClass().getClassLoader(),
        new Class<?>[] {BlobStore.class}, (proxy, m, args) -> {
          if (m.getName().equals("readWithVersion") && "n/f".equals(args[0])) {
            throw new BlobNotFoundException("n/f");
          }
          try {
            return m.invoke(memory, args);
          } catch (InvocationTargetException e) {
            throw e.getCause();
          }
        });
    BlobNamespace racing = namespace(hiding);
    FileWriter w = racing.create(F, true);
    w.write(DATA, 0, DATA.length);
    IOException e = assertThrows(IOException.class, w::close);
    assertTrue(e.getMessage().contains("conflicted"), e.getMessage());
    assertEquals(java.util.List.of(), memory.scan("d/", null, 1000).keys(),
        "the losing writer's stripes are removed (the first file is inline)");
    assertArrayEquals(random(10, 2), read(ns, F));
  }
}
