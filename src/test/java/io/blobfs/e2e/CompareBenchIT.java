package io.blobfs.e2e;

import static org.assertj.core.api.Assertions.assertThat;

import io.blobfs.bench.compare.CompareBench;
import io.blobfs.bench.compare.ThroughputBench;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The comparison bench and the Spark throughput job end to end on two back ends that need
 * no service (file:// and blob:// on a Týr node in this JVM), at a tiny size: every output
 * checked, the stores' order turning between rounds, the report and its charts written.
 * scripts/bench-compare.sh runs the same classes on HDFS, Týr, RADOS and CephFS.
 */
class CompareBenchIT {
  @TempDir
  Path dir;

  @Test
  void twoRoundsOfTwoWorkloadsOnTwoStores() throws Exception {
    Path reports = dir.resolve("reports");
    CompareBench.main(new String[] {"--stores", "embedded,file", "--size", "256k",
        "--rounds", "2", "--workloads", "grep,tokenizer", "--report-dir", reports.toString(),
        "--name", "cmp", "--work-dir", dir.resolve("work").toString(),
        "--data-dir", dir.resolve("tyr").toString()});
    String md = Files.readString(reports.resolve("cmp.md"));
    assertThat(md).contains("All 8 runs were right.")
        // round 1 starts with file:// (the reference), round 2 with the next store
        .contains("| 1 | grep | file |", "| 2 | grep | embedded |")
        .containsSubsequence("| 2 | grep | embedded |", "| 2 | grep | file |")
        .contains("## Read bandwidth (MB/s, Figure 12)", "## Write bandwidth (MB/s, Figure 13)",
            "## Completion time (s, Figure 14)");
    for (String chart : List.of("cmp-time.png", "cmp-read.png", "cmp-write.png")) {
      assertThat(Files.size(reports.resolve(chart))).as(chart).isPositive();
    }
  }

  @Test
  void profileRecordsEachTimedRun() throws Exception {
    Path profile = dir.resolve("profile");
    CompareBench.main(new String[] {"--stores", "embedded,file", "--size", "256k",
        "--rounds", "1", "--workloads", "tokenizer", "--report-dir", dir.resolve("r").toString(),
        "--name", "p", "--work-dir", dir.resolve("work").toString(),
        "--data-dir", dir.resolve("tyr").toString(), "--profile", profile.toString(),
        "--profile-pids", "self:" + ProcessHandle.current().pid()});
    // One recording per timed run (the warm-up is not profiled), and a CPU line for each.
    for (String run : List.of("r1-tokenizer-file", "r1-tokenizer-embedded")) {
      assertThat(Files.size(profile.resolve(run + ".jfr"))).as(run).isPositive();
    }
    List<String> cpu = Files.readAllLines(profile.resolve("cpu.tsv"));
    assertThat(cpu).hasSize(3);
    assertThat(cpu.get(0)).isEqualTo("run\twall_s\tjvm_cpu_s\tself_cpu_s\ttasks_cpu_s\ttasks_runq_s");
    assertThat(cpu.get(1)).startsWith("r1-tokenizer-file\t");
    assertThat(cpu.get(2)).startsWith("r1-tokenizer-embedded\t");
    // Spark's event logs: the warm-up's and the two runs', as plain JSON lines.
    try (var logs = Files.list(profile)) {
      List<Path> dirs = logs.filter(d -> d.getFileName().toString().startsWith("eventlog"))
          .toList();
      assertThat(dirs).hasSize(3);
      for (Path d : dirs) {
        try (var files = Files.list(d)) {
          Path events = files.filter(f -> f.getFileName().toString().startsWith("events_"))
              .findFirst().orElseThrow();
          assertThat(Files.readAllLines(events)).first().asString()
              .startsWith("{\"Event\":\"SparkListenerLogStart\"");
        }
      }
    }
  }

  @Test
  void throughputJobWritesReadsAndReports() throws Exception {
    Path reports = dir.resolve("reports");
    ThroughputBench.main(new String[] {"--stores", "embedded,file", "--files", "2",
        "--file-size", "3m", "--rounds", "1", "--report-dir", reports.toString(),
        "--name", "tp", "--work-dir", dir.resolve("work").toString(),
        "--data-dir", dir.resolve("tyr").toString()});
    String md = Files.readString(reports.resolve("tp.md"));
    assertThat(md).contains("2 files of 3,145,728 bytes").contains("| 1 | embedded |")
        .contains("| 1 | file |");
    assertThat(Files.size(reports.resolve("tp.png"))).isPositive();
  }
}
