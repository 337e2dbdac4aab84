package io.blobfs.bench.shim;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.blobfs.bench.StorageCounters;
import io.blobfs.bench.run.Workload;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class ShimReportTest {
  @TempDir
  Path dir;

  @Test
  void theExperimentCoversAllFiveWorkloads() {
    assertArrayEquals(Workload.values(),
        ShimWorkload.ALL.stream().map(ShimWorkload::workload).toArray());
  }

  /** Figure 5 spans orders of magnitude on a log axis; latencies below 1 µs included. */
  @Test
  void chartsAreWrittenBesideTheReport() throws Exception {
    List<ShimWorkload> workloads = ShimWorkload.ALL;
    List<ShimExperiment.Run> runs = new ArrayList<>();
    for (ShimWorkload w : workloads) {
      for (String side : List.of("hdfs", "flat")) {
        runs.add(new ShimExperiment.Run(w.name(), side, 1.5, StorageCounters.of(Map.of()),
            Workload.OK));
      }
    }
    Map<String, Map<Integer, Map<String, List<Long>>>> dirOps = new LinkedHashMap<>();
    Map<Integer, Long> rootNames = new LinkedHashMap<>();
    for (int extra : List.of(0, 1000)) {
      rootNames.put(extra, extra + 15L);
      for (String side : List.of("hdfs", "flat")) {
        Map<String, List<Long>> byOp = new LinkedHashMap<>();
        DirectoryOpBench.OPS.forEach(op -> byOp.put(op,
            Arrays.asList(300L, 400_000L, side.equals("flat") ? 40_000_000L : 500_000L)));
        dirOps.computeIfAbsent(side, k -> new LinkedHashMap<>()).put(extra, byOp);
      }
    }

    ShimReport.charts(dir, "hdfs-shim", workloads, runs, dirOps, rootNames);

    for (String chart : List.of("hdfs-shim-time.png", "hdfs-shim-dirops.png")) {
      Path png = dir.resolve(chart);
      assertTrue(Files.size(png) > 1000, chart + " is " + Files.size(png) + " bytes");
    }
  }
}
