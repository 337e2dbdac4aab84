package io.blobfs.namespace;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.blobfs.store.FaultInjectingBlobStore;
import io.blobfs.store.FaultInjectingBlobStore.Fault;
import io.blobfs.store.FaultInjectingBlobStore.Op;
import io.blobfs.store.BlobStore;
import io.blobfs.store.StoreLimits;
import io.blobfs.store.TransactionConflictException;
import io.blobfs.store.TransactionalBlobStore;
import io.blobfs.store.memory.InMemoryBlobStore;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * {@code rename(src, dst)} when another client creates {@code dst} after the rename
 * probed it and before the move applies: the answer for an existing destination file,
 * {@code false} (docs/semantics.md, Hadoop's contract), with nothing changed. Before, on
 * a transactional store (Týr), the move's exclusive create of the new name lost, the
 * rename retried the same commit and threw "conflicted ... retry", which no retry would
 * change; without transactions it threw FileAlreadyExistsException.
 */
class RenameTargetCreatedTest {
  private final InMemoryBlobStore memory =
      new InMemoryBlobStore("target", new StoreLimits(1024, 1L << 30, Integer.MAX_VALUE));
  private FaultInjectingBlobStore faults;
  private final ExecutorService renamer = Executors.newSingleThreadExecutor();

  @AfterEach
  void stop() {
    if (faults != null) {
      faults.clear();
    }
    renamer.shutdownNow();
  }

  @ParameterizedTest(name = "transactional={0}")
  @ValueSource(booleans = {true, false})
  void aTargetCreatedBeforeTheMoveAppliesMakesTheRenameFalse(boolean transactional)
      throws Exception {
    faults = transactional
        ? FaultInjectingBlobStore.over(memory)
        : FaultInjectingBlobStore.over(memory, TransactionalBlobStore.class); // RADOS' path
    BlobNamespace ns = new BlobNamespace(faults.store(),
        new NamespaceOptions(64 << 10, 16 << 10, 64 << 10, 1024, false, 100),
        StoreCallCounters.NONE);
    FsPath src = FsPath.parse("/d/src");
    FsPath dst = FsPath.parse("/d/dst");
    write(ns, src, "source");
    // the move is held after the rename found no destination, before it applies
    Fault held = transactional
        ? faults.on(Op.COMMIT).pause()
        : faults.on(Op.PUT).keys("n/d/dst").pause();
    Future<Boolean> rename = renamer.submit(() -> ns.rename(src, dst));
    held.awaitReached();
    write(ns, dst, "another client's"); // its own create: not the held call
    held.release();
    assertEquals(Boolean.FALSE, rename.get(60, TimeUnit.SECONDS));
    assertArrayEquals(bytes("source"), read(ns, src), "the source is untouched");
    assertArrayEquals(bytes("another client's"), read(ns, dst), "the new file is kept");
  }

  /**
   * A move whose commit applied, then was reported as a conflict (a retry below the
   * namespace, its exclusive create losing to itself): the destination holds the
   * source's file and the source is gone, so the rename did apply and is true. Before, it
   * was false whenever the destination existed, and the mount's and blob://'s OVERWRITE
   * renames then threw ENOENT or FileNotFoundException for a rename that was done.
   */
  @Test
  void aMoveAppliedThenReportedAsAConflictIsTrue() throws Exception {
    AtomicBoolean retried = new AtomicBoolean();
    BlobStore store = (BlobStore) Proxy.newProxyInstance(getClass().getClassLoader(),
        memory.getClass().getInterfaces(), (proxy, m, args) -> {
          try {
            Object result = m.invoke(memory, args);
            if (m.getName().equals("commit") && retried.compareAndSet(false, true)) {
              throw new TransactionConflictException("the retry of an applied commit");
            }
            return result;
          } catch (InvocationTargetException ex) {
            throw ex.getCause();
          }
        });
    BlobNamespace ns = new BlobNamespace(store,
        new NamespaceOptions(64 << 10, 16 << 10, 64 << 10, 1024, false, 100),
        StoreCallCounters.NONE);
    FsPath src = FsPath.parse("/d/src");
    FsPath dst = FsPath.parse("/d/dst");
    write(ns, src, "source");
    retried.set(false); // from here on: the rename's move
    assertTrue(ns.rename(src, dst));
    assertTrue(retried.get(), "the move's commit was reported as a conflict");
    assertArrayEquals(bytes("source"), read(ns, dst));
    assertTrue(ns.probe(src).isEmpty(), "the source is gone");
  }

  /** Another client's file at the destination still makes the rename false. */
  @Test
  void aConflictWithAnotherFileAtTheDestinationIsStillFalse() throws Exception {
    faults = FaultInjectingBlobStore.over(memory);
    BlobNamespace ns = new BlobNamespace(faults.store(),
        new NamespaceOptions(64 << 10, 16 << 10, 64 << 10, 1024, false, 100),
        StoreCallCounters.NONE);
    FsPath src = FsPath.parse("/e/src");
    FsPath dst = FsPath.parse("/e/dst");
    write(ns, src, "source");
    Fault held = faults.on(Op.COMMIT).pause();
    Future<Boolean> rename = renamer.submit(() -> ns.rename(src, dst));
    held.awaitReached();
    write(ns, dst, "another client's");
    held.release();
    assertFalse(rename.get(60, TimeUnit.SECONDS));
    assertArrayEquals(bytes("source"), read(ns, src));
  }

  private static void write(BlobNamespace ns, FsPath path, String text) throws Exception {
    try (FileWriter w = ns.create(path, false)) {
      byte[] b = bytes(text);
      w.write(b, 0, b.length);
    }
  }

  private static byte[] read(BlobNamespace ns, FsPath path) throws Exception {
    FileReader r = ns.open(path);
    ByteBuffer b = ByteBuffer.allocate((int) r.length());
    while (b.hasRemaining() && r.read(b.position(), b).get() > 0) { }
    return b.array();
  }

  private static byte[] bytes(String s) {
    return s.getBytes(StandardCharsets.UTF_8);
  }
}
