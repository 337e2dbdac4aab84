package io.blobfs.namespace;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.blobfs.store.BlobStore;
import io.blobfs.store.FaultInjectingBlobStore;
import io.blobfs.store.ScanPage;
import io.blobfs.store.StoreLimits;
import io.blobfs.store.TransactionalBlobStore;
import io.blobfs.store.memory.InMemoryBlobStore;
import java.io.FileNotFoundException;
import java.io.IOException;
import java.nio.file.NotDirectoryException;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * {@link BlobNamespace#renameOver}: a file renamed over an existing file, with
 * transactions (Týr's and memory's path: one commit) and without (RADOS' path: under both
 * files' locks, crash-safe; cut off at every call in {@link InterruptedMoveTest}).
 */
class RenameOverTest {
  private static final int STRIPE = 4096;
  private final InMemoryBlobStore memory =
      new InMemoryBlobStore("over", new StoreLimits(1024, 1L << 30, Integer.MAX_VALUE));
  private final FsPath f = FsPath.parse("/a/f");
  private final FsPath g = FsPath.parse("/a/g");

  private BlobNamespace ns(boolean transactional) {
    BlobStore store = transactional ? memory
        : FaultInjectingBlobStore.over(memory, TransactionalBlobStore.class).store();
    return new BlobNamespace(store, new NamespaceOptions(STRIPE, 1024, 4096, 256, false, 3),
        StoreCallCounters.NONE);
  }

  @ParameterizedTest
  @ValueSource(booleans = {true, false})
  void replacesTheTargetAndFreesItsData(boolean transactional) throws Exception {
    BlobNamespace ns = ns(transactional);
    for (int[] lengths : new int[][] {{3 * STRIPE + 1, 2 * STRIPE}, {100, 90}, {100, STRIPE + 1}}) {
      byte[] src = write(ns, f, lengths[0], 1);
      write(ns, g, lengths[1], 2);
      String oldId = ns.getFileInfo(g).record().fileId();
      ns.renameOver(f, ns.getFileInfo(g));
      assertTrue(ns.probe(f).isEmpty(), "the source is gone");
      assertArrayEquals(src, read(ns, g));
      assertEquals(List.of(), keys("d/" + oldId + "/"), "the replaced file's data is removed");
      assertEquals(List.of(), locks(), "no lock left");
      ns.delete(g, false);
    }
  }

  /**
   * A writer publishes at the destination after the caller probed it: the rename refuses
   * (typed) and changes nothing, so the writer's bytes stay. A delete-then-rename, as the
   * mount did before, removed them.
   */
  @ParameterizedTest
  @ValueSource(booleans = {true, false})
  void aWriterAtTheTargetAfterTheProbeKeepsItsBytes(boolean transactional) throws Exception {
    BlobNamespace ns = ns(transactional);
    byte[] src = write(ns, f, 2 * STRIPE + 3, 1);
    write(ns, g, STRIPE + 5, 2);
    FileInfo probed = ns.getFileInfo(g);
    byte[] writer = write(ns, g, 3 * STRIPE, 3); // another client, after the probe
    assertThrows(TargetChangedException.class, () -> ns.renameOver(f, probed));
    assertArrayEquals(writer, read(ns, g), "the writer's bytes");
    assertArrayEquals(src, read(ns, f), "the source is untouched");
    assertEquals(List.of(), locks());
    // Probed again, the rename replaces what is there now.
    ns.renameOver(f, ns.getFileInfo(g));
    assertArrayEquals(src, read(ns, g));
    assertEquals(List.of(), locks());
  }

  @ParameterizedTest
  @ValueSource(booleans = {true, false})
  void aRemovedTargetOrSourceIsTyped(boolean transactional) throws Exception {
    BlobNamespace ns = ns(transactional);
    write(ns, f, 10, 1);
    write(ns, g, 10, 2);
    FileInfo probed = ns.getFileInfo(g);
    ns.delete(g, false);
    assertThrows(TargetChangedException.class, () -> ns.renameOver(f, probed));
    assertTrue(ns.probe(f).isPresent());
    byte[] kept = write(ns, g, 20, 3);
    FileInfo target = ns.getFileInfo(g);
    assertThrows(FileNotFoundException.class,
        () -> ns.renameOver(FsPath.parse("/a/missing"), target));
    write(ns, FsPath.parse("/a/dir/x"), 5, 4);
    assertThrows(NotDirectoryException.class,
        () -> ns.renameOver(FsPath.parse("/a/dir"), target));
    assertArrayEquals(kept, read(ns, g));
  }

  /**
   * A reader probing the destination while renames replace it over and over never finds
   * it missing; each version it reads is whole. With transactions the commit is atomic;
   * without, the source's record is put over the destination's before the source goes.
   */
  @ParameterizedTest
  @ValueSource(booleans = {true, false})
  void aReaderNeverFindsTheTargetMissing(boolean transactional) throws Exception {
    BlobNamespace ns = ns(transactional);
    write(ns, g, STRIPE + 1, 0);
    AtomicBoolean done = new AtomicBoolean();
    ExecutorService reader = Executors.newSingleThreadExecutor();
    try {
      Future<Integer> reads = reader.submit(() -> {
        int n = 0;
        while (!done.get()) {
          FileInfo info = ns.probe(g).orElseThrow(() -> new AssertionError("g missing"));
          assertTrue(info.isFile());
          n++;
        }
        return n;
      });
      for (int i = 1; i <= 301; i++) {
        write(ns, f, i % 2 == 0 ? 50 : STRIPE + i, i);
        ns.renameOver(f, ns.getFileInfo(g));
      }
      done.set(true);
      assertTrue(reads.get(30, TimeUnit.SECONDS) > 0);
    } finally {
      done.set(true);
      reader.shutdownNow();
    }
    assertFalse(ns.probe(f).isPresent());
    assertEquals(1, keysUnder("d/").stream().map(KeyLayout::fileIdOf).distinct().count(),
        "only the last file's data is left");
  }

  /**
   * Two names hold one file (here a record copied by hand; also what a rename cut off
   * part-way can leave once its lock is gone): renaming one over the other is refused with
   * its own typed error, and both names stay. Before, it was TargetChangedException ("the
   * target changed"), which callers retry, and no retry could succeed.
   */
  @ParameterizedTest
  @ValueSource(booleans = {true, false})
  void twoNamesOnOneFileAreRefusedWithTheirOwnError(boolean transactional) throws Exception {
    BlobNamespace ns = ns(transactional);
    byte[] src = write(ns, f, 2 * STRIPE + 3, 1);
    byte[] record = memory.readFully("n/a/f", 0, (int) memory.stat("n/a/f").size());
    memory.put("n/a/g", java.nio.ByteBuffer.wrap(record), io.blobfs.store.PutMode.CREATE);
    assertThrows(TwoNamesOneFileException.class, () -> ns.renameOver(f, ns.getFileInfo(g)));
    assertArrayEquals(src, read(ns, f), "the source is untouched");
    assertArrayEquals(src, read(ns, g), "the target is untouched");
  }

  private static byte[] write(BlobNamespace ns, FsPath path, int length, long seed)
      throws IOException {
    byte[] bytes = new byte[length];
    new Random(seed).nextBytes(bytes);
    try (FileWriter w = ns.create(path, true)) {
      w.write(bytes, 0, bytes.length);
    }
    return bytes;
  }

  private static byte[] read(BlobNamespace ns, FsPath path) throws IOException {
    return NamespaceSoak.readWhole(ns, ns.getFileInfo(path));
  }

  private List<String> locks() throws IOException {
    return keysUnder("d/").stream().filter(KeyLayout::isLock).toList();
  }

  private List<String> keys(String prefix) throws IOException {
    return keysUnder(prefix);
  }

  private List<String> keysUnder(String prefix) throws IOException {
    List<String> out = new ArrayList<>();
    String cursor = null;
    do {
      ScanPage page = memory.scan(prefix, cursor, 1000);
      out.addAll(page.keys());
      cursor = page.nextCursor();
    } while (cursor != null);
    return out;
  }
}
