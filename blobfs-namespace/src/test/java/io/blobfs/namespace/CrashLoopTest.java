package io.blobfs.namespace;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.blobfs.store.FaultInjectingBlobStore;
import io.blobfs.store.FaultInjectingBlobStore.Op;
import io.blobfs.store.StoreLimits;
import io.blobfs.store.memory.InMemoryBlobStore;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;

/**
 * {@link CrashLoop} on the in-memory store without its transactions, in one JVM: the
 * worker "dies" at a random store call (that call and every later one fail unapplied, as
 * after SIGKILL), then the recovery runs and the invariants are checked; 30 times. The
 * process-level run is {@code RadosCrashIT}.
 */
class CrashLoopTest {
  private static final Duration LEASE = Duration.ofMillis(30);

  @Test
  void killedAtRandomCallsNothingIsLostSplitOrShared() throws Exception {
    long seed = Long.getLong("blobfs.crash.seed", System.nanoTime() & 0xffffff);
    Random rnd = new Random(seed);
    InMemoryBlobStore memory =
        new InMemoryBlobStore("crash", new StoreLimits(1024, 1L << 30, Integer.MAX_VALUE));
    FaultInjectingBlobStore dying = FaultInjectingBlobStore.over(memory);
    List<String> problems = new ArrayList<>();
    CrashLoop.Log log = new CrashLoop.Log();
    int settled = 0;
    int kills = 30;
    for (int kill = 1; kill <= kills; kill++) {
      dying.on(Op.values()[0], Op.values()).nth(1 + rnd.nextInt(1500)).always().failBefore();
      ByteArrayOutputStream out = new ByteArrayOutputStream();
      try {
        CrashLoop.work(dying.store(), LEASE, seed * 100 + kill,
            new PrintStream(out, true, StandardCharsets.UTF_8));
      } catch (IOException | RuntimeException died) {
        // every call fails from the point of death on
      }
      dying.clear();
      log.run(out.toString(StandardCharsets.UTF_8).lines().toList());
      CrashLoop.Check c = CrashLoop.recoverAndCheck(memory, LEASE, log.groups());
      settled += c.finished().size();
      for (String p : c.problems()) {
        problems.add("after kill " + kill + ": " + p);
      }
    }
    System.out.printf("[crash memory] seed %d: %d kills (%d mid-operation), %d operations,"
        + " %d recoveries, %d interrupted operations finished or settled, %d groups that"
        + " must exist%n", seed, kills, log.killedMidOperation(), log.operations(), kills,
        settled, log.groups().size());
    assertEquals(List.of(), problems, "seed " + seed);
    assertTrue(log.operations() > kills, "operations: " + log.operations());
    assertTrue(log.killedMidOperation() > kills / 2,
        "kills mid-operation: " + log.killedMidOperation());
  }
}
