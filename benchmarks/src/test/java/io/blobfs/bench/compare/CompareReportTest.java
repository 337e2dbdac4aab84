package io.blobfs.bench.compare;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import io.blobfs.bench.StorageCounters;
import io.blobfs.bench.run.Workload;
import io.blobfs.bench.run.WorkloadBench;
import io.blobfs.bench.trace.Call;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Medians, ratios, the paper's claims and the charts, from runs whose answers are known. */
class CompareReportTest {
  @TempDir
  Path dir;

  private static CompareReport.Run run(int round, String store, Workload w, double seconds,
      long bytesRead, long readNanos) {
    StorageCounters c = StorageCounters.of(Map.of("fs.bytesRead", bytesRead,
        "fs.bytesWritten", 1_000_000L, Call.READ_NANOS, readNanos,
        Call.WRITE_NANOS, 1_000_000_000L));
    return new CompareReport.Run(round, new WorkloadBench.Result(store, w, seconds, c,
        Workload.OK));
  }

  private static CompareReport report() {
    List<CompareReport.Run> runs = new ArrayList<>();
    // grep: hdfs 10 s and 100 MB/s read; tyr 8 s (20% faster) and 150 MB/s; cephfs 9 s.
    // The third round's tyr time is an outlier the median ignores.
    for (int r = 1; r <= 3; r++) {
      runs.add(run(r, "hdfs", Workload.GREP, 10, 100_000_000L, 1_000_000_000L));
      runs.add(run(r, "tyr", Workload.GREP, r == 3 ? 30 : 8, 150_000_000L, 1_000_000_000L));
      runs.add(run(r, "cephfs", Workload.GREP, 9, 100_000_000L, 500_000_000L));
      // sort: tyr 10% slower than hdfs, same read bandwidth
      runs.add(run(r, "hdfs", Workload.SORT, 20, 100_000_000L, 1_000_000_000L));
      runs.add(run(r, "tyr", Workload.SORT, 22, 100_000_000L, 1_000_000_000L));
      runs.add(run(r, "cephfs", Workload.SORT, 20, 100_000_000L, 1_000_000_000L));
    }
    return new CompareReport(List.of("hdfs", "tyr", "cephfs"),
        List.of(Workload.GREP, Workload.SORT), runs);
  }

  @Test
  void mediansRatiosAndGains() {
    CompareReport r = report();
    assertThat(r.median(CompareReport.TIME, Workload.GREP, "tyr")).isEqualTo(8.0);
    assertThat(r.median(CompareReport.READ, Workload.GREP, "tyr")).isCloseTo(150.0, within(1e-9));
    assertThat(r.median(CompareReport.READ, Workload.GREP, "cephfs")).isCloseTo(200.0, within(1e-9));
    // read bandwidth over HDFS: sqrt(1.5 * 1.0)
    assertThat(r.geomeanRatio(CompareReport.READ, "tyr", "hdfs"))
        .isCloseTo(Math.sqrt(1.5), within(1e-9));
    assertThat(r.bestGain("tyr", "hdfs")).isCloseTo(0.2, within(1e-9));
    assertThat(r.bestGain("tyr", "cephfs")).isCloseTo(1 - 8 / 9.0, within(1e-9));
    assertThat(CompareReport.median(List.of(3.0, 1.0, 2.0, 10.0))).isEqualTo(2.5);
    // per workload (grep, sort): tyr 20% faster than hdfs, then 10% slower
    List<Double> gains = r.relativeImprovement("tyr", "hdfs");
    assertThat(gains).hasSize(2);
    assertThat(gains.get(0)).isCloseTo(20.0, within(1e-9));
    assertThat(gains.get(1)).isCloseTo(-10.0, within(1e-9));
  }

  @Test
  void markdownHoldsTheTablesAndTheChartsAreWritten() throws Exception {
    CompareReport r = report();
    String md = r.markdown("setup", "cmp", "scripts/bench-compare.sh");
    assertThat(md).contains("| grep | 10.00 (10.00-10.00) | 8.00 (8.00-30.00) | 9.00 (9.00-9.00) | 0.80 | 0.90 | 0.89 |")
        .contains("| read bandwidth over HDFS (geomean of workloads) | Týr 1.28, RADOS 1.32 | 1.22 |")
        .contains("| jobs faster than HDFS, best workload | up to 22% | +20% |")
        .contains("All 18 runs were right.");
    assertThat(md).contains("![relative improvement](cmp-relative.png)");
    r.charts(dir, "cmp");
    for (String m : List.of("time", "read", "write", "relative")) {
      Path png = dir.resolve("cmp-" + m + ".png");
      assertThat(png).exists();
      byte[] head = Files.readAllBytes(png);
      assertThat(head).startsWith((byte) 0x89, (byte) 'P', (byte) 'N', (byte) 'G');
    }
  }
}
