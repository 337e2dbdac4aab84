package io.blobfs.namespace;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

import io.blobfs.store.FaultInjectingBlobStore;
import io.blobfs.store.FaultInjectingBlobStore.Fault;
import io.blobfs.store.FaultInjectingBlobStore.Op;
import io.blobfs.store.StoreLimits;
import io.blobfs.store.TransactionalBlobStore;
import io.blobfs.store.memory.InMemoryBlobStore;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
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
