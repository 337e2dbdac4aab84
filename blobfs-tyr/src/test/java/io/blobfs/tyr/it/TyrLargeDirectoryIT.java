package io.blobfs.tyr.it;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.blobfs.hadoop.SweepOrphans;
import io.blobfs.namespace.FileRecord;
import io.blobfs.store.BlobMutation;
import io.blobfs.store.BlobStore;
import io.blobfs.store.HeadScanning;
import io.blobfs.store.PutMode;
import io.blobfs.store.StoreOptions;
import io.blobfs.store.TransactionalBlobStore;
import io.blobfs.tyr.blobfs.TyrBlobStoreProvider;
import io.blobfs.tyr.server.TyrServerProcess;
import java.io.IOException;
import java.net.URI;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.BitSet;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FSDataInputStream;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.util.ToolRunner;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Issue 10, item 4, against a Týr server process: a directory too large for one frame is
 * renamed and deleted through the Hadoop API, every file arriving with its exact bytes,
 * and a rename cut off by a server crash between chunks is finished by
 * {@code SweepOrphans -finish-renames}.
 *
 * <p>The default run uses the smallest frames the store allows ({@code max-op-bytes} 4k:
 * client frames of 1 MiB + 4 KiB, and the server started with the same
 * {@code --max-frame}), so {@value #DEFAULT_FILES} files already need several
 * transactions. With {@code -Dblobfs.soak=true} it renames and deletes 1,000,000 files
 * with the shipped frame sizes (17 MiB client frames) and prints the times.
 */
class TyrLargeDirectoryIT {
  private static final boolean SOAK = Boolean.getBoolean("blobfs.soak");
  /** At 1 MiB frames: two delete transactions and five rename transactions. */
  private static final int DEFAULT_FILES = 30_000;
  /** Enough for several rename transactions: the crash lands between two of them. */
  private static final int CRASH_FILES = 20_000;
  private static final int FILES = SOAK ? 1_000_000 : DEFAULT_FILES;
  private static final int MAX_OP = 4096;
  private static final int FRAME = MAX_OP + (1 << 20);
  /** Every this many files has its bytes in a data blob; the others are inline. */
  private static final int STRIPED_EVERY = 50;
  private static final long STRIPE = 64L << 20;
  private static final int POPULATE_BATCH = 2000;

  @TempDir
  java.nio.file.Path dir;
  private TyrServerProcess server;
  private Configuration conf;
  private BlobStore store;

  @BeforeEach
  void start() throws IOException {
    server = SOAK ? new TyrServerProcess(dir)
        : new TyrServerProcess(dir, "--max-frame", Integer.toString(FRAME));
    server.start();
    conf = new Configuration();
    conf.set("fs.blob.impl", "io.blobfs.hadoop.BlobFileSystem");
    conf.setBoolean("fs.blob.impl.disable.cache", true);
    conf.set("fs.blob.store.big.type", "tyr");
    conf.set("fs.blob.store.big.address", server.address());
    Map<String, String> options = new HashMap<>(Map.of("address", server.address()));
    if (!SOAK) {
      conf.set("fs.blob.store.big.max-op-bytes", Integer.toString(MAX_OP));
      options.put("max-op-bytes", Integer.toString(MAX_OP));
    }
    store = new TyrBlobStoreProvider().open("big",
        new StoreOptions("fs.blob.store.big.", options));
  }

  @AfterEach
  void stop() throws IOException {
    if (store != null) {
      store.close();
    }
    if (server != null) {
      server.close();
    }
  }

  private FileSystem fs() throws IOException {
    return FileSystem.newInstance(URI.create("blob://big/"), conf);
  }

  @Test
  void aDirectoryBeyondTheFrameLimitIsRenamedAndDeleted() throws Exception {
    long t0 = System.nanoTime();
    populate("/src");
    long populated = System.nanoTime();
    if (!SOAK) {
      assertOneTransactionCannotCarryIt("/src", "/dst");
    }
    try (FileSystem fs = fs()) {
      long r0 = System.nanoTime();
      assertTrue(fs.rename(new Path("/src"), new Path("/dst")));
      long renamed = System.nanoTime();
      long renameCommits = commits(fs);
      assertEquals(FILES, checkEveryFile("/dst"));
      assertThat(keys("n/src/", 1)).isEmpty();
      assertThat(keys("r/", 1)).as("no intent left").isEmpty();
      checkStripedFilesThroughHadoop(fs, "/dst");

      long d0 = System.nanoTime();
      assertTrue(fs.delete(new Path("/dst"), true));
      long deleted = System.nanoTime();
      long deleteCommits = commits(fs) - renameCommits;
      assertThat(renameCommits).as("rename transactions").isGreaterThanOrEqualTo(3);
      assertThat(deleteCommits).as("delete transactions").isGreaterThanOrEqualTo(2);
      assertThat(keys("n/", 1)).isEmpty();
      assertThat(keys("d/", 1)).as("data blobs of deleted files").isEmpty();
      System.out.printf("%d files (frame %s): populate %.1f s, rename %.1f s in %d"
              + " transactions, delete %.1f s in %d%n", FILES,
          SOAK ? "17 MiB" : FRAME + " bytes", (populated - t0) / 1e9, (renamed - r0) / 1e9,
          renameCommits, (deleted - d0) / 1e9, deleteCommits);
    }
  }

  @Test
  void aRenameCutOffByAServerCrashIsFinishedBySweepOrphans() throws Exception {
    int files = CRASH_FILES;
    populate("/job/out", files);
    CompletableFuture<Boolean> rename;
    try (FileSystem fs = fs()) {
      rename = CompletableFuture.supplyAsync(() -> {
        try {
          return fs.rename(new Path("/job/out"), new Path("/final"));
        } catch (IOException e) {
          throw new java.io.UncheckedIOException(e);
        }
      });
      // The intent appears with the first chunk: kill the server once it is there.
      long deadline = System.nanoTime() + 60_000_000_000L;
      while (!store.stat("r/job/out").exists()) {
        assertThat(rename).as("the rename ended before its first chunk was seen").isNotDone();
        assertTrue(System.nanoTime() < deadline, "no intent within 60 s");
        Thread.sleep(2);
      }
      server.kill();
      assertThatThrownBy(rename::join).isInstanceOf(java.util.concurrent.CompletionException.class)
          .hasCauseInstanceOf(java.io.UncheckedIOException.class);
    }
    server.start(); // the same data directory and port; acknowledged commits survived

    long atSource = keys("n/job/out/", FILES).size();
    long atTarget = keys("n/final/", FILES).size();
    System.out.println("cut off with " + atTarget + " files moved and " + atSource + " not");
    assertThat(atTarget).isPositive();
    assertThat(atSource).isPositive();
    assertEquals(files, atSource + atTarget, "each file under exactly one name");

    assertEquals(0, ToolRunner.run(conf, new SweepOrphans(),
        new String[] {"-finish-renames", "-min-age", "1h", "blob://big/"}));

    assertEquals(files, checkEveryFile("/final"));
    assertThat(keys("n/job/", 1)).isEmpty();
    assertThat(keys("r/", 1)).isEmpty();
    try (FileSystem fs = fs()) {
      checkStripedFilesThroughHadoop(fs, "/final");
    }
  }

  private static long commits(FileSystem fs) {
    Long n = fs.getStorageStatistics().getLong("store_commit");
    return n == null ? 0 : n;
  }

  // ---------------------------------------------------------------- the files

  private static String relative(int i) {
    return "d" + (i % 10) + "/f" + i;
  }

  private static String fileId(int i) {
    return String.format("%016x%016x", 0xB16L, i);
  }

  /** The bytes of file {@code i}: they name it, so a mix-up cannot pass. */
  private static byte[] bytes(int i) {
    int size = i % STRIPED_EVERY == 0 ? 100 : 24;
    StringBuilder b = new StringBuilder("file ").append(i).append(' ');
    while (b.length() < size) {
      b.append((char) ('a' + b.length() % 26));
    }
    return b.toString().getBytes(StandardCharsets.UTF_8);
  }

  private static FileRecord record(int i) {
    return i % STRIPED_EVERY == 0
        ? FileRecord.striped(fileId(i), bytes(i).length, 1_000_000L + i, STRIPE)
        : FileRecord.inline(fileId(i), bytes(i), 1_000_000L + i, STRIPE);
  }

  private void populate(String dir) throws IOException {
    populate(dir, FILES);
  }

  /** Writes records and data blobs straight to the store, thousands per transaction. */
  private void populate(String dir, int files) throws IOException {
    List<BlobMutation> tx = new ArrayList<>();
    for (int i = 0; i < files; i++) {
      tx.add(new BlobMutation.Put("n" + dir + "/" + relative(i), record(i).encode(),
          PutMode.CREATE));
      if (i % STRIPED_EVERY == 0) {
        tx.add(new BlobMutation.Put("d/" + fileId(i) + "/0", ByteBuffer.wrap(bytes(i)),
            PutMode.CREATE));
      }
      if ((i + 1) % POPULATE_BATCH == 0 || i == files - 1) {
        ((TransactionalBlobStore) store).commit(tx);
        tx.clear();
      }
    }
  }

  /** What the rename did before: every move in one transaction. The store refuses it. */
  private void assertOneTransactionCannotCarryIt(String src, String dst) throws IOException {
    List<BlobMutation> all = new ArrayList<>();
    for (int i = 0; i < FILES; i++) {
      all.add(new BlobMutation.Put("n" + dst + "/" + relative(i), record(i).encode(),
          PutMode.CREATE));
      all.add(new BlobMutation.Delete("n" + src + "/" + relative(i), 1));
    }
    assertThat(((TransactionalBlobStore) store).commitBytes(all))
        .isGreaterThan(3 * store.limits().maxCommitBytes());
    assertThatThrownBy(() -> ((TransactionalBlobStore) store).commit(all))
        .isInstanceOf(IOException.class).hasMessageContaining("frame limit");
  }

  /**
   * Reads every record under {@code dir} from the store in head scans and compares it,
   * bytes included, with what was written; returns how many there are. Holds one bit per
   * file.
   */
  private int checkEveryFile(String dir) throws IOException {
    String prefix = "n" + dir + "/";
    BitSet seen = new BitSet(FILES);
    int count = 0;
    String cursor = null;
    do {
      HeadScanning.HeadPage page = ((HeadScanning) store).scanWithHeads(prefix, cursor, 4000,
          FileRecord.MAX_HEADER + 64);
      for (int k = 0; k < page.keys().size(); k++) {
        String key = page.keys().get(k);
        int i = Integer.parseInt(key.substring(key.lastIndexOf("/f") + 2));
        assertEquals(prefix + relative(i), key);
        byte[] head = page.heads().get(k);
        FileRecord found = FileRecord.decode(key, head, head.length, true);
        FileRecord expected = record(i);
        assertEquals(expected.fileId(), found.fileId(), key);
        assertEquals(expected.length(), found.length(), key);
        assertEquals(expected.isInline(), found.isInline(), key);
        if (expected.isInline()) {
          assertArrayEquals(bytes(i), found.inline(), key);
        }
        assertTrue(!seen.get(i), "twice: " + key);
        seen.set(i);
        count++;
      }
      cursor = page.nextCursor();
    } while (cursor != null);
    return count;
  }

  /** Striped files read through Hadoop: the record found their data blobs (a sample in soak). */
  private void checkStripedFilesThroughHadoop(FileSystem fs, String dir) throws IOException {
    int limit = Math.min(FILES, SOAK ? 50_000 : DEFAULT_FILES);
    for (int i = 0; i < limit; i += STRIPED_EVERY) {
      if (!store.stat("n" + dir + "/" + relative(i)).exists()) {
        continue; // the crash test's smaller directory
      }
      try (FSDataInputStream in = fs.open(new Path(dir + "/" + relative(i)))) {
        assertArrayEquals(bytes(i), in.readAllBytes(), dir + "/" + relative(i));
      }
    }
  }

  private List<String> keys(String prefix, int max) throws IOException {
    List<String> keys = new ArrayList<>();
    String cursor = null;
    do {
      var page = store.scan(prefix, cursor, Math.min(max - keys.size(), 10_000));
      keys.addAll(page.keys());
      cursor = page.nextCursor();
    } while (cursor != null && keys.size() < max);
    return keys;
  }
}
