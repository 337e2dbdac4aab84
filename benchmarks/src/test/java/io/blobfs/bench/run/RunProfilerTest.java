package io.blobfs.bench.run;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The bench's per-run profile: a JFR file and a CPU line per run, services included. */
class RunProfilerTest {
  @TempDir
  Path dir;

  @Test
  void parsesServicePids() {
    assertThat(RunProfiler.parsePids("tyr-server:12, datanode:345"))
        .containsExactly(Map.entry("tyr-server", 12L), Map.entry("datanode", 345L));
    assertThat(RunProfiler.parsePids("")).isEmpty();
  }

  @Test
  void readsAProcessCpuTimeFromProc() {
    long self = ProcessHandle.current().pid();
    // This JVM has run for a while: at least one 10 ms tick of CPU.
    assertThat(RunProfiler.procCpuNanos(self)).isPositive();
    assertThat(RunProfiler.procCpuNanos(Long.MAX_VALUE)).isEqualTo(-1);
  }

  @Test
  void writesARecordingAndACpuLinePerRun() throws Exception {
    long self = ProcessHandle.current().pid();
    RunProfiler p = new RunProfiler(dir, Map.of("me", self));
    for (String run : List.of("r1-x-a", "r1-x-b")) {
      var recording = p.start();
      long spin = System.nanoTime() + 50_000_000L;
      while (System.nanoTime() < spin) {
        Thread.onSpinWait();
      }
      p.stop(recording, run, 0.05);
    }
    assertThat(Files.size(dir.resolve("r1-x-a.jfr"))).isPositive();
    assertThat(Files.size(dir.resolve("r1-x-b.jfr"))).isPositive();
    List<String> lines = Files.readAllLines(dir.resolve("cpu.tsv"));
    assertThat(lines).hasSize(3);
    assertThat(lines.get(0)).isEqualTo("run\twall_s\tjvm_cpu_s\tme_cpu_s");
    assertThat(lines.get(1)).startsWith("r1-x-a\t0.05\t");
    assertThat(lines.get(2).split("\t")).hasSize(4);
  }
}
