package io.blobfs.namespace;

import static org.junit.jupiter.api.Assertions.*;

import io.blobfs.store.Futures;
import io.blobfs.store.StoreLimits;
import io.blobfs.store.memory.InMemoryBlobStore;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;

class OrphanSweeperTest {
  private final InMemoryBlobStore store =
      new InMemoryBlobStore("sweep", new StoreLimits(1024, 1L << 30, Integer.MAX_VALUE));
  private final BlobNamespace ns = new BlobNamespace(store,
      new NamespaceOptions(64 << 10, 16 << 10, 64 << 10, 1024, false, 100),
      StoreCallCounters.NONE);

  private static byte[] data(int n) {
    byte[] b = new byte[n];
    new Random(n).nextBytes(b);
    return b;
  }

  private FileWriter started(String path, int bytes) throws IOException {
    FileWriter w = ns.create(FsPath.parse(path), false);
    w.write(data(bytes), 0, bytes);
    return w; // never closed: its writer "died"
  }

  @Test
  void removesTheDataOfDeadWritersAndNothingElse() throws Exception {
    try (FileWriter w = ns.create(FsPath.parse("/live/big"), false)) {
      w.write(data(300_000), 0, 300_000);
    }
    try (FileWriter w = ns.create(FsPath.parse("/live/small"), false)) {
      w.write(data(10), 0, 10);
    }
    started("/dead/a", 200_000);
    started("/dead/b", 100_000);
    Thread.sleep(20);
    int blobsBefore = store.blobCount();
    long dataBytes = 0;
    for (String key : store.scan("d/", null, 10_000).keys()) {
      dataBytes += store.stat(key).size();
    }

    OrphanSweeper.Report dry = new OrphanSweeper(ns).sweep(Duration.ofMillis(10), true);
    assertEquals(2, dry.orphanFileIds().size());
    assertEquals(0, dry.deletedBlobs());
    assertEquals(blobsBefore, store.blobCount(), "a dry run deletes nothing");

    OrphanSweeper.Report r = new OrphanSweeper(ns).sweep(Duration.ofMillis(10), false);
    assertEquals(dry.orphanFileIds(), r.orphanFileIds());
    assertEquals(dry.orphanBlobs(), r.deletedBlobs());
    // What the dead writers had sent (buffered bytes died with them): all data blobs but
    // those of the live 300000-byte file.
    assertEquals(dataBytes - 300_000, r.orphanBytes());
    assertTrue(r.orphanBytes() > 0);
    assertEquals(blobsBefore - r.orphanBlobs(), store.blobCount());
    FileReader big = ns.open(FsPath.parse("/live/big"));
    ByteBuffer back = ByteBuffer.allocate(300_000);
    Futures.await(big.read(0, back));
    assertArrayEquals(data(300_000), back.array(), "live files untouched");
    assertTrue(ns.probe(FsPath.parse("/dead/a")).isEmpty());
  }

  @Test
  void aWriterStillAtWorkIsNotTouched() throws Exception {
    FileWriter w = started("/busy", 200_000);
    OrphanSweeper.Report r = new OrphanSweeper(ns).sweep(Duration.ofHours(1), false);
    assertEquals(List.of(), r.orphanFileIds());
    w.write(data(10), 0, 10);
    w.close();
    assertEquals(200_010, ns.getFileInfo(FsPath.parse("/busy")).length());
  }
}
