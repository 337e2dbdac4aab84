package io.blobfs.fuse;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.blobfs.fuse.kernel.Passthrough;
import io.blobfs.fuse.kernel.Entry;
import io.blobfs.fuse.kernel.FuseSession;
import io.blobfs.fuse.kernel.LowLevelFs;
import io.blobfs.fuse.kernel.Opened;
import io.blobfs.namespace.BlobNamespace;
import io.blobfs.namespace.NamespaceOptions;
import io.blobfs.namespace.StoreCallCounters;
import io.blobfs.store.StoreLimits;
import io.blobfs.store.memory.InMemoryBlobStore;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.HashMap;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A close of a just-written passed-through file costs what it did before the skip of
 * unchanged files (~2 ms in memory): no wait for the file's times to age (session 12's
 * first version slept up to 20 ms per publication, ~22 ms per file here).
 */
class SmallFileCloseTest {
  @TempDir
  Path staging;

  @Test
  void closingManyJustWrittenSmallFilesDoesNotSleepTwentyMsEach() throws Exception {
    Map<Integer, Path> files = new HashMap<>();
    Passthrough kernel = new Passthrough() {
      int next = 1;
      @Override public synchronized int open(Path file) { files.put(next, file); return next++; }
      @Override public synchronized void close(int backingId) { }
    };
    BlobNamespace ns = new BlobNamespace(new InMemoryBlobStore("pt", new StoreLimits(200,
        1L << 30, Integer.MAX_VALUE)), new NamespaceOptions(4096, 4096, 16384, 0, false, 100),
        StoreCallCounters.NONE);
    BlobFuseFs fs = new BlobFuseFs(ns, new BlobFuseFs.Settings(false, 0755, 4096, staging));
    fs.initialized(kernel);
    int n = 100;
    // warm-up
    for (int i = 0; i < 5; i++) {
      one(fs, files, "w" + i);
    }
    long t0 = System.nanoTime();
    for (int i = 0; i < n; i++) {
      one(fs, files, "f" + i);
    }
    double perFileMs = (System.nanoTime() - t0) / 1e6 / n;
    System.out.printf("SmallFileCloseTest: %.2f ms per create+write+close+release%n", perFileMs);
    assertTrue(perFileMs < 10, "per file " + perFileMs + " ms");
  }

  private static void one(BlobFuseFs fs, Map<Integer, Path> files, String name) throws Exception {
    Opened[] h = new Opened[1];
    Entry e = fs.create(LowLevelFs.ROOT, name, FuseSession.O_RDWR, h);
    try (FileChannel c = FileChannel.open(files.get(h[0].backingId()), StandardOpenOption.WRITE)) {
      c.write(ByteBuffer.wrap("hello, small file\n".getBytes(StandardCharsets.UTF_8)), 0);
    }
    fs.flush(e.node(), h[0].fh());
    fs.release(e.node(), h[0].fh());
  }
}
