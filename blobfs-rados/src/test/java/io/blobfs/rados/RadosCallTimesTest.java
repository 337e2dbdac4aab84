package io.blobfs.rados;

import static org.junit.jupiter.api.Assertions.*;

import java.util.Map;
import org.junit.jupiter.api.Test;

/** The per-kind call counts and times a benchmark subtracts between two snapshots. */
class RadosCallTimesTest {

  @Test
  void aDeltaCountsOnlyTheCallsMadeBetweenTheSnapshots() {
    String kind = "test.kind" + System.nanoTime(); // the table is the JVM's: a kind of our own
    RadosCallTimes.record(kind, System.nanoTime());
    Map<String, long[]> before = RadosCallTimes.snapshot();
    RadosCallTimes.record(kind, System.nanoTime() - 2_000_000); // 2 ms ago
    RadosCallTimes.record(kind, System.nanoTime(), 3);
    Map<String, long[]> after = RadosCallTimes.snapshot();

    assertEquals(1, before.get(kind)[0]);
    assertEquals(5, after.get(kind)[0]);
    assertTrue(after.get(kind)[1] - before.get(kind)[1] >= 2_000_000);
    String delta = RadosCallTimes.delta(before, after);
    assertTrue(delta.contains(kind + " n=4 "), delta);
    assertFalse(RadosCallTimes.delta(after, after).contains(kind), "no calls, no entry");
  }
}
