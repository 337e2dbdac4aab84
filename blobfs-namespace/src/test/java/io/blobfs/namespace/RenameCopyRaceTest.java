package io.blobfs.namespace;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.blobfs.store.FaultInjectingBlobStore;
import io.blobfs.store.FaultInjectingBlobStore.Fault;
import io.blobfs.store.FaultInjectingBlobStore.Op;
import io.blobfs.store.StoreLimits;
import io.blobfs.store.TransactionalBlobStore;
import io.blobfs.store.memory.InMemoryBlobStore;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * Found by {@link NamespaceSoakTest} without transactions (RADOS' path): a file rename
 * puts its copy at the destination before it deletes the source; a directory rename that
 * runs in between moves both the source and the copy. The file rename then finds its
 * source gone, looks for its copy to take back, does not find it where it put it, and
 * reports that nothing moved, while two names now refer to one file's data: deleting
 * either destroys the other. Now a rename without transactions holds the file's lock from
 * before its copy until the source is gone, and the directory rename waits for it.
 */
class RenameCopyRaceTest {
  private static final int STRIPE = 64 << 10;
  private final InMemoryBlobStore memory =
      new InMemoryBlobStore("copy", new StoreLimits(1024, 1L << 30, Integer.MAX_VALUE));
  private final FaultInjectingBlobStore faults =
      FaultInjectingBlobStore.over(memory, TransactionalBlobStore.class);
  private final BlobNamespace ns = new BlobNamespace(faults.store(),
      new NamespaceOptions(STRIPE, 16 << 10, 64 << 10, 1024, false, 100), StoreCallCounters.NONE);
  private final ExecutorService racer = Executors.newSingleThreadExecutor();

  @AfterEach
  void stop() {
    faults.clear();
    racer.shutdownNow();
  }

  @Test
  void aDirectoryRenameBetweenTheCopyAndTheSourceDeleteLeavesOneName() throws Exception {
    byte[] data = new byte[2 * STRIPE + 5];
    new Random(1).nextBytes(data);
    FsPath f = FsPath.parse("/a/f");
    try (FileWriter w = ns.create(f, false)) {
      w.write(data, 0, data.length);
    }
    // Held after the copy /a/g is put, before the source /a/f is deleted.
    Fault held = faults.on(Op.DELETE).keys("n/a/f").pause();
    Future<Object> rename = racer.submit(() -> {
      try {
        return ns.rename(f, FsPath.parse("/a/g"));
      } catch (java.io.IOException e) {
        return e;
      }
    });
    held.awaitReached();
    ExecutorService dirRenamer = Executors.newSingleThreadExecutor();
    try {
      Future<Boolean> dir = dirRenamer.submit(
          () -> ns.rename(FsPath.parse("/a"), FsPath.parse("/b")));
      Thread.sleep(300);
      // Before: it carried away the source and the copy, and two names shared the data.
      assertFalse(dir.isDone(), "the directory rename waits for the file's rename");
      held.release();
      Object outcome = rename.get(30, TimeUnit.SECONDS);
      assertEquals(Boolean.TRUE, outcome);
      assertTrue(dir.get(30, TimeUnit.SECONDS));
    } finally {
      dirRenamer.shutdownNow();
    }
    List<String> names = new ArrayList<>();
    for (FileInfo info : ns.list(FsPath.parse("/b"))) {
      names.add(info.path().toString());
    }
    assertEquals(List.of("/b/g"), names, "one file, one name: the rename, then the directory's");
    assertArrayEquals(data, NamespaceSoak.readWhole(ns, ns.getFileInfo(FsPath.parse("/b/g"))));
  }
}
