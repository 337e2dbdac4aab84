package io.blobfs.tyr.engine;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

import io.blobfs.tyr.api.BlobStat;
import io.blobfs.tyr.api.CasFailedException;
import io.blobfs.tyr.api.CommitResult;
import io.blobfs.tyr.api.ErrorCode;
import io.blobfs.tyr.api.ReadCheck;
import io.blobfs.tyr.api.ScanResult;
import io.blobfs.tyr.api.TxOp;
import io.blobfs.tyr.api.TxRequest;
import io.blobfs.tyr.api.TyrException;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

class TyrEngineTest {
  @TempDir
  Path dir;

  private EngineConfig small(SyncPolicy policy) {
    // 4 KiB chunks and 64 KiB segments so that tests cross chunk and segment boundaries.
    return new EngineConfig(dir, 4096, 64 << 10, policy, java.time.Duration.ofMillis(20),
        256, 1L << 30, 8, java.time.Duration.ZERO, 0.5);
  }

  static CommitResult commit(TyrEngine e, TxOp... ops) throws IOException {
    return await(e, TxRequest.of(ops));
  }

  static CommitResult await(TyrEngine e, TxRequest tx) throws IOException {
    try {
      return e.commit(tx).join();
    } catch (CompletionException c) {
      throw (IOException) c.getCause();
    }
  }

  static byte[] read(TyrEngine e, String key) throws IOException {
    ByteBuffer b = ByteBuffer.allocate((int) e.stat(key).size());
    e.read(key, 0, b);
    return b.array();
  }

  static ByteBuffer bytes(byte[] b) {
    return ByteBuffer.wrap(b);
  }

  @ParameterizedTest
  @EnumSource(SyncPolicy.class)
  void randomWritesAgreeWithAModelAcrossRestarts(SyncPolicy policy) throws IOException {
    Random rnd = new Random(42);
    Map<String, byte[]> model = new HashMap<>();
    int deletedSegments = 0;
    for (int round = 0; round < 3; round++) {
      try (TyrEngine e = TyrEngine.open(small(policy))) {
        for (String key : model.keySet()) {
          assertArrayEquals(model.get(key), read(e, key), key + " after restart " + round);
        }
        for (int i = 0; i < 300; i++) {
          String key = "blob-" + rnd.nextInt(4);
          byte[] cur = model.get(key);
          int kind = rnd.nextInt(10);
          if (kind < 6) {
            int off = rnd.nextInt(20_000);
            byte[] data = new byte[1 + rnd.nextInt(kind == 0 ? 9000 : 300)];
            rnd.nextBytes(data);
            commit(e, new TxOp.Write(key, off, bytes(data)));
            byte[] next = Arrays.copyOf(cur == null ? new byte[0] : cur,
                Math.max(cur == null ? 0 : cur.length, off + data.length));
            System.arraycopy(data, 0, next, off, data.length);
            model.put(key, next);
          } else if (kind < 7 && cur != null) {
            int size = rnd.nextInt(cur.length + 5000);
            commit(e, new TxOp.Truncate(key, size));
            model.put(key, Arrays.copyOf(cur, size));
          } else if (kind < 8) {
            byte[] data = new byte[rnd.nextInt(3000)];
            rnd.nextBytes(data);
            commit(e, new TxOp.Append(key, bytes(data)));
            byte[] base = cur == null ? new byte[0] : cur;
            byte[] next = Arrays.copyOf(base, base.length + data.length);
            System.arraycopy(data, 0, next, base.length, data.length);
            model.put(key, next);
          } else if (kind < 9) {
            commit(e, new TxOp.Delete(key, false));
            model.remove(key);
          } else {
            byte[] data = new byte[rnd.nextInt(5000)];
            rnd.nextBytes(data);
            commit(e, new TxOp.Put(key, bytes(data), false));
            model.put(key, data);
          }
          if (i % 97 == 96) {
            // Moves live bytes and deletes dead segments under the model's eyes.
            deletedSegments += e.compact().segmentsDeleted();
          }
          byte[] expect = model.get(key);
          if (expect == null) {
            assertThat(e.stat(key).exists()).isFalse();
          } else {
            assertArrayEquals(expect, read(e, key), key + " at step " + i);
          }
        }
      }
    }
    assertThat(deletedSegments).as("64 KiB segments rolled and were reclaimed")
        .isGreaterThan(3);
  }

  @Test
  void compactionReclaimsOldVersionsKeepsBlobVersionsAndSurvivesRestarts() throws Exception {
    byte[][] last = new byte[4][];
    long[] versions = new long[4];
    Random rnd = new Random(7);
    try (TyrEngine e = TyrEngine.open(small(SyncPolicy.ALWAYS))) {
      for (int i = 0; i < 400; i++) { // ~2.4 MiB written, 24 KiB live at the end
        int b = i % 4;
        last[b] = new byte[6000];
        rnd.nextBytes(last[b]);
        commit(e, new TxOp.Put("b" + b, bytes(last[b]), false));
      }
      commit(e, new TxOp.Put("small", bytes(new byte[] {1, 2, 3}), true));
      for (int b = 0; b < 4; b++) {
        versions[b] = e.stat("b" + b).version();
      }
      long before = e.diskBytes();
      // Readers run through the compaction: none may fail or see other bytes.
      java.util.concurrent.atomic.AtomicReference<Throwable> readerError =
          new java.util.concurrent.atomic.AtomicReference<>();
      java.util.concurrent.atomic.AtomicBoolean stop =
          new java.util.concurrent.atomic.AtomicBoolean();
      Thread reader = new Thread(() -> {
        try {
          while (!stop.get()) {
            for (int b = 0; b < 4; b++) {
              assertArrayEquals(last[b], read(e, "b" + b));
            }
          }
        } catch (Throwable t) {
          readerError.set(t);
        }
      });
      reader.start();
      TyrEngine.Compaction c = e.compact();
      stop.set(true);
      reader.join();
      assertThat(readerError.get()).isNull();
      assertThat(c.segmentsDeleted()).isGreaterThan(20);
      assertThat(e.diskBytes()).isLessThan(before / 10);
      for (int b = 0; b < 4; b++) {
        assertArrayEquals(last[b], read(e, "b" + b));
        assertEquals(versions[b], e.stat("b" + b).version(), "compaction is not a new version");
      }
      commit(e, new TxOp.Write("b0", 0, bytes(new byte[] {42})));
      last[0][0] = 42;
    }
    try (TyrEngine e = TyrEngine.open(small(SyncPolicy.ALWAYS))) {
      for (int b = 0; b < 4; b++) {
        assertArrayEquals(last[b], read(e, "b" + b), "b" + b + " after restart");
      }
      assertArrayEquals(new byte[] {1, 2, 3}, read(e, "small"));
      assertEquals(versions[1], e.stat("b1").version());
    }
  }

  @Test
  void aBusyNodeCheckpointsOnItsOwnSoThatRecoveryReplaysLittle() throws Exception {
    EngineConfig config = small(SyncPolicy.NONE)
        .withCompaction(java.time.Duration.ofMillis(100), 0.5);
    try (TyrEngine e = TyrEngine.open(config)) {
      // A quarter of a segment of live data: nothing to compact, but worth a checkpoint.
      commit(e, new TxOp.Put("live", bytes(new byte[20_000]), true));
      long deadline = System.nanoTime() + 60_000_000_000L; // generous: a loaded machine
      while (checkpointVersion() == 0 && System.nanoTime() < deadline) {
        Thread.sleep(50);
      }
      assertEquals(e.lastCommit(), checkpointVersion());
    }
  }

  /** The commit the newest checkpoint file was taken at (0 if none). */
  private long checkpointVersion() throws IOException {
    try (Stream<Path> files = Files.list(dir)) {
      return files.map(p -> p.getFileName().toString()).filter(n -> n.endsWith(".tyrckpt"))
          .mapToLong(n -> Long.parseLong(n.substring(0, n.indexOf('.')))).max().orElse(0);
    }
  }

  /** The checkpoint files, oldest first. */
  private List<Path> checkpointFiles() throws IOException {
    try (Stream<Path> files = Files.list(dir)) {
      return files.filter(p -> p.getFileName().toString().endsWith(".tyrckpt")).sorted()
          .toList();
    }
  }

  private static void assertHolds(TyrEngine e, Map<String, byte[]> model) throws IOException {
    for (Map.Entry<String, byte[]> m : model.entrySet()) {
      assertArrayEquals(m.getValue(), read(e, m.getKey()), m.getKey());
    }
  }

  /** Byte offset of the blob count in a checkpoint: magic, format, version, position. */
  private static final int COUNT_OFFSET = 4 + 4 + 8 + 8 + 8;

  private static void damage(Path file, int offset, int mask) throws IOException {
    try (FileChannel ch = FileChannel.open(file, StandardOpenOption.READ,
        StandardOpenOption.WRITE)) {
      ByteBuffer b = ByteBuffer.allocate(4);
      ch.read(b, offset);
      b.flip();
      int v = b.getInt();
      ch.write(ByteBuffer.allocate(4).putInt(0, v ^ mask), offset);
    }
  }

  private Map<String, byte[]> putAll(TyrEngine e, String prefix, int n, int size, long seed)
      throws IOException {
    Map<String, byte[]> written = new HashMap<>();
    Random rnd = new Random(seed);
    for (int i = 0; i < n; i++) {
      byte[] b = new byte[size];
      rnd.nextBytes(b);
      commit(e, new TxOp.Put(prefix + i, bytes(b), false));
      written.put(prefix + i, b);
    }
    return written;
  }

  /**
   * A damaged count in the newest checkpoint (here one that asks for two billion blobs)
   * is caught by the CRC before anything is parsed: the node opens from the older one and
   * replays the log after it. The pair kept afterwards is two loadable checkpoints, the
   * damaged one gone.
   */
  @Test
  void aDamagedNewestCheckpointFallsBackToTheOlderOne() throws IOException {
    Map<String, byte[]> model = new HashMap<>();
    try (TyrEngine e = TyrEngine.open(small(SyncPolicy.ALWAYS))) {
      model.putAll(putAll(e, "a", 5, 9000, 1));
      e.checkpoint();
      model.putAll(putAll(e, "b", 5, 9000, 2));
      model.putAll(putAll(e, "a", 2, 3000, 3));
    } // closing checkpoints: two files
    List<Path> files = checkpointFiles();
    assertThat(files).hasSize(2);
    damage(files.get(1), COUNT_OFFSET, 0x7f000000);
    try (TyrEngine e = TyrEngine.open(small(SyncPolicy.ALWAYS))) {
      assertHolds(e, model);
      model.putAll(putAll(e, "c", 3, 2000, 4));
    }
    assertThat(checkpointFiles()).hasSize(2).doesNotContain(files.get(1));
    assertThat(Checkpoint.loadNewest(dir, 3)).hasSize(2);
    try (TyrEngine e = TyrEngine.open(small(SyncPolicy.ALWAYS))) {
      assertHolds(e, model);
    }
  }

  /**
   * A checkpoint with nothing committed since the last one must not take that one's file:
   * the kept pair would be one state twice, the real fallback unprotected, and a
   * compaction that moves nothing (its own checkpoint at the same version) would delete
   * the segments the fallback needs.
   */
  @Test
  void aCheckpointAtAnUnchangedVersionKeepsTheFallbackAndItsSegments() throws IOException {
    Map<String, byte[]> model = new HashMap<>();
    try (TyrEngine e = TyrEngine.open(small(SyncPolicy.ALWAYS))) {
      putAll(e, "old", 6, 30_000, 1); // about three segments, dead once deleted below
      e.checkpoint(); // the fallback-to-be: it names the old blobs' segments
      for (int i = 0; i < 6; i++) {
        commit(e, new TxOp.Delete("old" + i, true));
      }
      model.putAll(putAll(e, "live", 3, 30_000, 2));
      e.checkpoint();
      e.checkpoint(); // nothing committed since
      e.compact(); // the old segments hold nothing live: nothing to move, no new version
      assertThat(Checkpoint.loadNewest(dir, 3)).extracting(Checkpoint.Loaded::version)
          .doesNotHaveDuplicates().hasSize(2);
    }
    List<Path> files = checkpointFiles();
    assertThat(files).hasSize(2);
    damage(files.get(1), COUNT_OFFSET, 0x00ff0000);
    try (TyrEngine e = TyrEngine.open(small(SyncPolicy.ALWAYS))) {
      assertHolds(e, model);
      for (int i = 0; i < 6; i++) {
        assertThat(e.stat("old" + i).exists()).isFalse();
      }
    }
  }

  @Test
  void transactionsValidateTheirReadSetAndApplyAllOrNothing() throws IOException {
    try (TyrEngine e = TyrEngine.open(small(SyncPolicy.ALWAYS))) {
      commit(e, new TxOp.Put("a", bytes(new byte[] {1}), true),
          new TxOp.Put("b", bytes(new byte[] {2}), true));
      long va = e.stat("a").version();
      commit(e, new TxOp.Write("a", 0, bytes(new byte[] {9})));
      TxRequest stale = new TxRequest(List.of(new ReadCheck("a", va)),
          List.of(new TxOp.Put("c", bytes(new byte[] {3}), false)));
      assertThatThrownBy(() -> await(e, stale)).isInstanceOf(TyrException.class)
          .matches(t -> ((TyrException) t).code() == ErrorCode.CONFLICT)
          .matches(t -> ((TyrException) t).isRetryable());
      assertThat(e.stat("c").exists()).isFalse();
      // The second op fails (b exists): the first must not be applied either.
      assertThatThrownBy(() -> commit(e, new TxOp.Delete("a", true),
          new TxOp.Create("b"))).matches(t -> ((TyrException) t).code() == ErrorCode.EXISTS);
      assertArrayEquals(new byte[] {9}, read(e, "a"));
      // Absent blobs are read at version 0.
      await(e, new TxRequest(List.of(new ReadCheck("nothing", 0)),
          List.of(new TxOp.Create("nothing"))));
      assertThat(e.stat("nothing").exists()).isTrue();
    }
  }

  @Test
  void smallWritesKeepAChunkToAFewExtentsAndTheLogToTheirSize() throws IOException {
    try (TyrEngine e = TyrEngine.open(small(SyncPolicy.NONE))) {
      commit(e, new TxOp.Put("x", bytes(new byte[4096]), true));
      byte[] model = new byte[4096];
      Random rnd = new Random(5);
      for (int i = 0; i < 500; i++) {
        byte[] b = new byte[1 + rnd.nextInt(16)];
        rnd.nextBytes(b);
        int off = rnd.nextInt(4096 - b.length);
        commit(e, new TxOp.Write("x", off, bytes(b)));
        System.arraycopy(b, 0, model, off, b.length);
      }
      assertArrayEquals(model, read(e, "x"));
      // Each rewrite logs a 4 KiB chunk about every 8 writes: well under 1 MiB in all.
      assertThat(e.diskBytes()).isLessThan(1 << 20);
    }
    // 4 KiB chunks, at most 8 extents before a rewrite (see small()). The extent map is
    // the one the engine held at close: its closing checkpoint records it for recovery.
    BlobState x = Checkpoint.loadNewest(dir, 1).get(0).blobs().stream()
        .filter(s -> s.key.equals("x")).findFirst().orElseThrow();
    assertThat(x.chunk(0).extentCount()).isLessThanOrEqualTo(9);
  }

  @Test
  void atomicAddAndCompareAndSet() throws IOException {
    try (TyrEngine e = TyrEngine.open(small(SyncPolicy.NONE))) {
      commit(e, new TxOp.Put("n", ByteBuffer.allocate(16), true));
      assertEquals(5, commit(e, new TxOp.Add("n", 8, 5)).values()[0]);
      assertEquals(2, commit(e, new TxOp.Add("n", 8, -3)).values()[0]);
      commit(e, new TxOp.Cas("n", 0, 0, 77));
      assertThatThrownBy(() -> commit(e, new TxOp.Cas("n", 0, 0, 78)))
          .isInstanceOf(CasFailedException.class)
          .matches(t -> ((CasFailedException) t).actual() == 77);
      ByteBuffer b = ByteBuffer.allocate(16);
      e.read("n", 0, b);
      assertEquals(77, b.getLong(0));
      assertEquals(2, b.getLong(8));
      assertThatThrownBy(() -> commit(e, new TxOp.Add("n", 12, 1)))
          .matches(t -> ((TyrException) t).code() == ErrorCode.BAD_REQUEST);
    }
  }

  @Test
  void scanIsFilteredOrderedAndPaged() throws IOException {
    try (TyrEngine e = TyrEngine.open(small(SyncPolicy.NONE))) {
      List<String> expected = new ArrayList<>();
      for (int i = 0; i < 25; i++) {
        commit(e, new TxOp.Create("p/" + (char) ('a' + i)));
        expected.add("p/" + (char) ('a' + i));
      }
      commit(e, new TxOp.Create("p"), new TxOp.Create("q/a"), new TxOp.Create("o/z"));
      List<String> got = new ArrayList<>();
      String cursor = null;
      int pages = 0;
      do {
        ScanResult page = e.scan("p/", cursor, 10);
        got.addAll(page.keys());
        cursor = page.nextCursor();
        pages++;
      } while (cursor != null);
      assertEquals(expected, got);
      assertEquals(3, pages);
    }
  }

  @Test
  void aTornRecordAtTheEndIsDiscardedAndEverythingBeforeItKept() throws IOException {
    try (TyrEngine e = TyrEngine.open(small(SyncPolicy.ALWAYS))) {
      commit(e, new TxOp.Put("kept", bytes("whole".getBytes()), true));
    }
    Path seg;
    try (Stream<Path> s = Files.list(dir)) {
      seg = s.filter(p -> p.toString().endsWith(".tyrlog")).max(Path::compareTo).orElseThrow();
    }
    long intact = Files.size(seg);
    // A record whose header was never written over its placeholder, then half a header.
    try (FileChannel ch = FileChannel.open(seg, StandardOpenOption.WRITE,
        StandardOpenOption.APPEND)) {
      ch.write(ByteBuffer.wrap(new byte[] {0x54, 0x59, 0x52, 0x31, 0, 0, 0, 1, 9, 9}));
    }
    try (TyrEngine e = TyrEngine.open(small(SyncPolicy.ALWAYS))) {
      assertArrayEquals("whole".getBytes(), read(e, "kept"));
      assertEquals(intact, Files.size(seg));
      commit(e, new TxOp.Put("after", bytes(new byte[] {1}), true));
    }
    try (TyrEngine e = TyrEngine.open(small(SyncPolicy.ALWAYS))) {
      assertThat(e.stat("after").exists()).isTrue();
    }
  }

  @Test
  void aReaderHoldsOneVersionWhileWritersCommit() throws IOException {
    try (TyrEngine e = TyrEngine.open(small(SyncPolicy.NONE))) {
      byte[] ones = new byte[20_000];
      Arrays.fill(ones, (byte) 1);
      commit(e, new TxOp.Put("v", bytes(ones), true));
      long first = e.stat("v").version();
      byte[] twos = new byte[20_000];
      Arrays.fill(twos, (byte) 2);
      ByteBuffer old = ByteBuffer.allocate(20_000);
      // A read has taken its version when it asks for its buffer: writers commit on
      // another thread before it reads a byte.
      BlobStat held = e.read("v", 0, 20_000, n -> {
        CompletableFuture.runAsync(() -> {
          try {
            commit(e, new TxOp.Write("v", 0, bytes(twos)));
            commit(e, new TxOp.Truncate("v", 10));
          } catch (IOException x) {
            throw new UncheckedIOException(x);
          }
        }).join();
        return old;
      });
      assertArrayEquals(ones, old.array());
      assertEquals(first, held.version());
      assertEquals(20_000, held.size());
      assertEquals(10, e.stat("v").size());
    }
  }

  @Test
  void badInputIsRefusedWithTypedErrors() throws IOException {
    try (TyrEngine e = TyrEngine.open(small(SyncPolicy.NONE))) {
      assertThatThrownBy(() -> commit(e, new TxOp.Create("k".repeat(300))))
          .matches(t -> ((TyrException) t).code() == ErrorCode.TOO_LARGE);
      assertThatThrownBy(() -> commit(e, new TxOp.Truncate("missing", 3)))
          .matches(t -> ((TyrException) t).code() == ErrorCode.NOT_FOUND);
      assertThatThrownBy(() -> e.read("missing", 0, ByteBuffer.allocate(1)))
          .matches(t -> ((TyrException) t).code() == ErrorCode.NOT_FOUND);
      assertThatThrownBy(() -> commit(e, new TxOp.Write("big", (1L << 30) - 1,
          bytes(new byte[2])))).matches(t -> ((TyrException) t).code() == ErrorCode.TOO_LARGE);
      assertThat(e.stat("big").exists()).isFalse();
      BlobStat none = e.stat("missing");
      assertThat(none.exists()).isFalse();
      assertEquals(0, e.lastCommit());
    }
  }
}
