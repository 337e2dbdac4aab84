package org.apache.hadoop.fs;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.blobfs.hadoop.BlobFileSystem;
import io.blobfs.store.memory.InMemoryBlobStoreProvider;
import java.io.IOException;
import java.net.URI;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.apache.hadoop.conf.Configuration;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * {@code rename(src, dst, OVERWRITE)}, Hadoop's protected rename with options (called from
 * this package, as FileContext's adapter does): a file over a file is one step, so a
 * reader polling the destination never finds it missing. Hadoop's default (delete, then
 * rename) left such a reader without the file between the two calls.
 */
class BlobRenameOverwriteTest {
  private static final String STORE = "rename-overwrite-test";

  @AfterEach
  void drop() {
    InMemoryBlobStoreProvider.drop(STORE);
  }

  private static FileSystem fs() throws IOException {
    return fs(new Configuration());
  }

  private static FileSystem fs(Configuration conf) throws IOException {
    conf.set("fs.blob.impl", BlobFileSystem.class.getName());
    conf.set("fs.blob.inline.threshold", "0"); // data blobs: the slow path of a delete
    return FileSystem.newInstance(URI.create("blob://" + STORE + "/"), conf);
  }

  private static void write(FileSystem fs, Path p, byte value, int n) throws IOException {
    try (FSDataOutputStream out = fs.create(p, true)) {
      for (int i = 0; i < n; i++) {
        out.write(value);
      }
    }
  }

  @Test
  @SuppressWarnings("deprecation")
  void aFileOverAFileNeverLeavesTheDestinationMissing() throws Exception {
    try (FileSystem fs = fs(); FileSystem reader = fs()) {
      Path dst = new Path("/out/part-0");
      Path src = new Path("/out/tmp");
      write(fs, dst, (byte) 0, 3000);
      AtomicBoolean stop = new AtomicBoolean();
      ExecutorService poll = Executors.newSingleThreadExecutor();
      try {
        Future<long[]> seen = poll.submit(() -> {
          long checks = 0;
          long missing = 0;
          while (!stop.get()) {
            checks++;
            missing += reader.exists(dst) ? 0 : 1;
          }
          return new long[] {checks, missing};
        });
        for (int i = 1; i <= 300; i++) {
          write(fs, src, (byte) i, 3000 + i);
          fs.rename(src, dst, Options.Rename.OVERWRITE);
        }
        stop.set(true);
        long[] r = seen.get(30, TimeUnit.SECONDS);
        assertTrue(r[0] > 100, r[0] + " checks");
        assertEquals(0, r[1], "checks (of " + r[0] + ") that found no destination");
      } finally {
        stop.set(true);
        poll.shutdownNow();
      }
      byte[] want = new byte[3300];
      java.util.Arrays.fill(want, (byte) 300);
      try (FSDataInputStream in = fs.open(dst)) {
        assertArrayEquals(want, in.readAllBytes());
      }
      assertFalse(fs.exists(src));
    }
  }

  @Test
  @SuppressWarnings("deprecation")
  void otherCasesKeepHadoopsRules() throws Exception {
    try (FileSystem fs = fs()) {
      write(fs, new Path("/a"), (byte) 1, 10);
      write(fs, new Path("/b"), (byte) 2, 10);
      assertThrows(FileAlreadyExistsException.class, () -> fs.rename(new Path("/a"),
          new Path("/b"), Options.Rename.NONE));
      write(fs, new Path("/d/x"), (byte) 3, 10);
      assertThrows(IOException.class, () -> fs.rename(new Path("/a"), new Path("/d"),
          Options.Rename.OVERWRITE), "a file over a non-empty directory");
      fs.rename(new Path("/a"), new Path("/c"), Options.Rename.OVERWRITE); // no target
      assertTrue(fs.exists(new Path("/c")));
      assertFalse(fs.exists(new Path("/a")));
    }
  }

  /**
   * The target is free when probed, and another client writes a file there right before
   * the rename's first change: the namespace's rename refuses, and the target is probed
   * again and replaced in one step. Before, the free target went to Hadoop's default,
   * whose rename then failed ("rename from ... failed"), and in a slightly later window
   * it would have deleted the other client's file first.
   */
  @Test
  @SuppressWarnings("deprecation")
  void aFileWrittenAtAFreeTargetMeanwhileIsReplacedInOneStep() throws Exception {
    Configuration hooked = new Configuration();
    hooked.set("fs.blob.store." + STORE + ".type", HookedMemoryStoreProvider.TYPE);
    try (FileSystem fs = fs(hooked); FileSystem other = fs()) {
      Path src = new Path("/out/tmp");
      Path dst = new Path("/out/part-0");
      write(fs, src, (byte) 7, 3000);
      HookedMemoryStoreProvider.beforeNextChange(() -> {
        try {
          write(other, dst, (byte) 9, 2000);
        } catch (IOException e) {
          throw new java.io.UncheckedIOException(e);
        }
      });
      fs.rename(src, dst, Options.Rename.OVERWRITE);
      byte[] want = new byte[3000];
      java.util.Arrays.fill(want, (byte) 7);
      try (FSDataInputStream in = fs.open(dst)) {
        assertArrayEquals(want, in.readAllBytes());
      }
      assertFalse(fs.exists(src));
      assertEquals(0, ((BlobFileSystem) fs).getIOStatistics().counters()
          .getOrDefault(org.apache.hadoop.fs.statistics.StoreStatisticNames.OP_DELETE, 0L),
          "no delete of the target");
    }
  }
}
