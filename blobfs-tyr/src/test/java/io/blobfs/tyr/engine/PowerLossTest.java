package io.blobfs.tyr.engine;

import static io.blobfs.tyr.engine.TyrEngineTest.await;
import static io.blobfs.tyr.engine.TyrEngineTest.bytes;
import static io.blobfs.tyr.engine.TyrEngineTest.commit;
import static io.blobfs.tyr.engine.TyrEngineTest.read;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

import io.blobfs.tyr.api.ErrorCode;
import io.blobfs.tyr.api.ReadCheck;
import io.blobfs.tyr.api.TxOp;
import io.blobfs.tyr.api.TxRequest;
import io.blobfs.tyr.api.TyrException;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * A power loss takes what the log had not forced, and with it commits that clients saw.
 * Their numbers (the versions of the blobs they wrote) must never be handed out again, or
 * a condition read from the lost state would hold against another one.
 *
 * <p>The power loss is simulated on a copy of the store's directory: each log segment cut
 * back to the length it had when the log was last forced, every other file (checkpoints,
 * the commit ceiling, which are only ever written forced and renamed into place) as it is.
 * The sync interval is an hour and segments are large enough never to roll, so nothing
 * forces the log but what the test does.
 */
class PowerLossTest {
  @TempDir
  Path tmp;

  private static EngineConfig config(Path dir, SyncPolicy policy) {
    return new EngineConfig(dir, 4096, 16L << 20, policy, Duration.ofHours(1), 256,
        1L << 30, 8, Duration.ZERO, 0.5);
  }

  /**
   * The length of each log segment: call it when the log is known to be forced (just
   * after open, which forces what recovery kept and starts a fresh segment; after
   * {@link TyrEngine#checkpoint}; or after a commit is acknowledged with sync=always).
   */
  private static Map<String, Long> forcedLog(Path dir) throws IOException {
    Map<String, Long> sizes = new HashMap<>();
    try (Stream<Path> files = Files.list(dir)) {
      for (Path f : files.filter(f -> f.toString().endsWith(".tyrlog")).toList()) {
        sizes.put(f.getFileName().toString(), Files.size(f));
      }
    }
    return sizes;
  }

  /** A copy of {@code dir} as a power loss leaves it, given the log's {@code forced} lengths. */
  private Path powerLoss(Path dir, Map<String, Long> forced, String name) throws IOException {
    Path copy = tmp.resolve(name);
    Files.createDirectory(copy);
    try (Stream<Path> files = Files.list(dir)) {
      for (Path f : files.toList()) {
        Path to = copy.resolve(f.getFileName());
        Files.copy(f, to);
        String n = f.getFileName().toString();
        if (n.endsWith(".tyrlog")) {
          // A segment begun since has its name on disk (the directory is forced) but none
          // of its bytes.
          try (FileChannel ch = FileChannel.open(to, StandardOpenOption.WRITE)) {
            ch.truncate(forced.getOrDefault(n, 0L));
          }
        }
      }
    }
    return copy;
  }

  private static ByteBuffer text(String s) {
    return bytes(s.getBytes(StandardCharsets.UTF_8));
  }

  private static long put(TyrEngine e, String key, String content) throws IOException {
    return commit(e, new TxOp.Put(key, text(content), false)).version();
  }

  /** A put on condition that {@code key} is still at {@code version}: what a CAS sends. */
  private static TxRequest putIfVersion(String key, long version, String content) {
    return new TxRequest(List.of(new ReadCheck(key, version)),
        List.of(new TxOp.Put(key, text(content), false)));
  }

  private static void assertConflict(TyrEngine e, TxRequest tx) {
    assertThatThrownBy(() -> await(e, tx)).isInstanceOf(TyrException.class)
        .matches(t -> ((TyrException) t).code() == ErrorCode.CONFLICT, "a CONFLICT");
  }

  @Test
  void aVersionSeenBeforeAPowerLossIsNeverHandedOutAgain() throws IOException {
    Path live = tmp.resolve("live");
    try (TyrEngine e = TyrEngine.open(config(live, SyncPolicy.INTERVAL))) {
      put(e, "k", "durable"); // on disk once closed
    }
    Path crashed;
    long seen;
    long lastSeen;
    try (TyrEngine e = TyrEngine.open(config(live, SyncPolicy.INTERVAL))) {
      Map<String, Long> forced = forcedLog(live);
      put(e, "k", "lost 1");
      put(e, "k", "lost 2");
      seen = e.stat("k").version(); // a client reads k, then the power goes
      lastSeen = e.lastCommit();
      crashed = powerLoss(live, forced, "crashed");
    }
    try (TyrEngine e = TyrEngine.open(config(crashed, SyncPolicy.INTERVAL))) {
      assertArrayEquals("durable".getBytes(StandardCharsets.UTF_8), read(e, "k"),
          "the power loss took the unforced commits");
      // Others write k as often as the lost commits did: without the ceiling, k would now
      // be at the version the client read.
      long first = put(e, "k", "other 1");
      long second = put(e, "k", "other 2");
      assertConflict(e, putIfVersion("k", seen, "acting on what it read"));
      assertConflict(e, new TxRequest(List.of(new ReadCheck("k", seen)),
          List.of(new TxOp.Delete("k", true))));
      assertArrayEquals("other 2".getBytes(StandardCharsets.UTF_8), read(e, "k"));
      assertEquals(second, e.stat("k").version());
      assertThat(first).isGreaterThan(lastSeen);
      assertThat(second).isGreaterThan(first);
    }
  }

  /**
   * Power losses again and again, some followed by a clean restart that commits nothing
   * (which must not give back the lost numbers when it closes), one losing more commits
   * than the ceiling reserves at once (so the reservation is extended mid-run). Each run
   * then writes k three times, as often as a run usually loses, and the lost versions fail
   * as conditions (the first and last each run lost: without the ceiling k would now be at
   * the last one of a usual run).
   */
  @ParameterizedTest
  @EnumSource(value = SyncPolicy.class, names = {"INTERVAL", "NONE"})
  void numbersStayAboveEveryEarlierRunThroughRepeatedPowerLosses(SyncPolicy policy)
      throws IOException {
    Path live = tmp.resolve("run0");
    List<Long> lost = new ArrayList<>(); // the first and last version each run lost
    long highestSeen = 0;
    byte[] durable = null;
    for (int round = 0; round < 4; round++) {
      if (round % 2 == 1) {
        try (TyrEngine e = TyrEngine.open(config(live, policy))) {
          assertThat(e.lastCommit()).isLessThan(highestSeen); // a power loss took some
        }
      }
      Path next;
      try (TyrEngine e = TyrEngine.open(config(live, policy))) {
        if (durable != null) {
          assertArrayEquals(durable, read(e, "k"), "the power loss took the last commits");
        }
        for (int i = 0; i < 3; i++) {
          long v = put(e, "k", "run " + round + " kept " + i);
          assertThat(v).as("run %d", round).isGreaterThan(highestSeen);
          highestSeen = v;
        }
        for (long stale : lost) {
          assertConflict(e, putIfVersion("k", stale, "stale"));
        }
        e.checkpoint(); // forces the log: all of the above survives the power loss
        durable = read(e, "k");
        Map<String, Long> forced = forcedLog(live);
        int losing = round == 2 ? (int) VersionCeiling.STEP + 10 : 3;
        for (int i = 0; i < losing; i++) {
          long v = put(e, "k", "run " + round + " lost " + i);
          assertThat(v).isGreaterThan(highestSeen);
          highestSeen = v;
          if (i == 0 || i == losing - 1) {
            lost.add(v);
          }
        }
        next = powerLoss(live, forced, "run" + (round + 1));
      }
      live = next;
    }
  }

  /**
   * With sync=always an acknowledged commit is forced, so a power loss right after it
   * takes nothing: the versions read stay valid conditions, and numbering goes on above.
   */
  @Test
  void withSyncAlwaysAPowerLossTakesNothingAcknowledgedAndVersionsStayValid()
      throws IOException {
    Path live = tmp.resolve("live");
    Path crashed;
    long a;
    long b;
    try (TyrEngine e = TyrEngine.open(config(live, SyncPolicy.ALWAYS))) {
      a = put(e, "a", "a1");
      b = put(e, "b", "b1");
      crashed = powerLoss(live, forcedLog(live), "crashed");
    }
    try (TyrEngine e = TyrEngine.open(config(crashed, SyncPolicy.ALWAYS))) {
      assertEquals(a, e.stat("a").version());
      assertEquals(b, e.stat("b").version());
      long v = await(e, putIfVersion("a", a, "a2")).version();
      assertThat(v).isGreaterThan(b);
      assertConflict(e, putIfVersion("a", a, "a3"));
      assertArrayEquals("a2".getBytes(StandardCharsets.UTF_8), read(e, "a"));
    }
  }

  /** With nothing lost there is nothing to skip: a clean restart numbers on by one. */
  @Test
  void aCleanRestartNumbersOnWithoutAGap() throws IOException {
    Path dir = tmp.resolve("live");
    long last;
    try (TyrEngine e = TyrEngine.open(config(dir, SyncPolicy.INTERVAL))) {
      put(e, "k", "1");
      last = put(e, "k", "2");
    }
    try (TyrEngine e = TyrEngine.open(config(dir, SyncPolicy.INTERVAL))) {
      assertEquals(last + 1, put(e, "k", "3"));
    }
    try (TyrEngine e = TyrEngine.open(config(dir, SyncPolicy.INTERVAL))) {
      assertEquals(last + 2, put(e, "k", "4"));
      assertArrayEquals("4".getBytes(StandardCharsets.UTF_8), read(e, "k"));
    }
  }

  /** Which numbers the last run handed out is then unknown: the store must not guess. */
  @Test
  void aDamagedCeilingRefusesTheOpen() throws IOException {
    Path dir = tmp.resolve("live");
    try (TyrEngine e = TyrEngine.open(config(dir, SyncPolicy.INTERVAL))) {
      put(e, "k", "1");
    }
    Path ceiling = dir.resolve(VersionCeiling.FILE);
    byte[] b = Files.readAllBytes(ceiling);
    b[6] ^= 1;
    Files.write(ceiling, b);
    assertThatThrownBy(() -> TyrEngine.open(config(dir, SyncPolicy.INTERVAL)).close())
        .isInstanceOf(IOException.class).hasMessageContaining("damaged");
  }

  /**
   * Numbers may jump where a run begins, at the start of a segment, so a missing segment
   * would no longer show as a jump: recovery checks that none is missing.
   */
  @Test
  void aMissingSegmentAfterTheResumePointRefusesTheOpen() throws IOException {
    Path dir = tmp.resolve("live");
    EngineConfig small = new EngineConfig(dir, 4096, 64 << 10, SyncPolicy.INTERVAL,
        Duration.ofHours(1), 256, 1L << 30, 8, Duration.ZERO, 0.5);
    try (TyrEngine e = TyrEngine.open(small)) {
      for (int i = 0; i < 8; i++) {
        commit(e, new TxOp.Put("k" + i, bytes(new byte[30_000]), false));
      }
    }
    try (Stream<Path> files = Files.list(dir)) {
      for (Path f : files.filter(f -> f.toString().endsWith(".tyrckpt")).toList()) {
        Files.delete(f); // recovery replays the whole log
      }
    }
    Files.delete(dir.resolve(String.format("%020d.tyrlog", 2)));
    assertThatThrownBy(() -> TyrEngine.open(small).close()).isInstanceOf(IOException.class)
        .hasMessageContaining("00000000000000000002.tyrlog");
  }
}
