package io.blobfs.fuse.kernel;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

class RequestStatsTest {
  @Test
  void countsTheRequestsServedSlowerThanTheThresholdAndTheSlowest() {
    RequestStats stats = new RequestStats();
    stats.record(Opcode.WRITE, 8192, 20_000); // 20 us: a staged write as usual
    stats.record(Opcode.WRITE, 8192, RequestStats.SLOW_NANOS); // at the threshold: not slow
    stats.record(Opcode.WRITE, 8192, 21_000_000); // 21 ms: the tail
    stats.record(Opcode.READ, 4096, 7_000_000);
    assertEquals(1, stats.slow(Opcode.WRITE));
    assertEquals(1, stats.slow(Opcode.READ));
    String summary = stats.summary();
    assertTrue(summary.contains("WRITE: 3 requests, 24576 bytes (avg 8192), 26 ms served,"
        + " 1 over 5 ms, slowest 21000 us"), summary);
    assertTrue(summary.contains("READ: 1 requests, 4096 bytes (avg 4096), 7 ms served,"
        + " 1 over 5 ms, slowest 7000 us"), summary);
  }
}
