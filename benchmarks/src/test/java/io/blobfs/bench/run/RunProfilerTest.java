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
    assertThat(lines.get(0))
        .isEqualTo("run\twall_s\tjvm_cpu_s\tme_cpu_s\ttasks_cpu_s\ttasks_runq_s");
    assertThat(lines.get(1)).startsWith("r1-x-a\t0.05\t");
    assertThat(lines.get(2).split("\t")).hasSize(6);
  }

  @Test
  void chargesTheTaskThreadsCpuFromTheScheduler() throws Exception {
    // The task's CPU and run-queue wait are about its 200 ms of spinning, plus the waits to
    // start and to wake, which on two cores at a load of 30 can add a few hundred ms (the
    // bound was 390 ms); the other thread spins 1,500 ms, so that counting it
    // would still break the bound by far.
    ThreadSchedule schedule = new ThreadSchedule("Executor task launch worker");
    Thread task = new Thread(() -> {
      long spin = System.nanoTime() + 200_000_000L;
      while (System.nanoTime() < spin) {
        Thread.onSpinWait();
      }
      try {
        // Idle in its pool, as Spark's are after their task; long enough for the 50 ms
        // poller, itself delayed on a loaded machine, to sample it after its spin.
        Thread.sleep(1000);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }, "Executor task launch worker for task 0.0");
    Thread other = new Thread(() -> {
      long spin = System.nanoTime() + 1_500_000_000L;
      while (System.nanoTime() < spin) {
        Thread.onSpinWait();
      }
    }, "not a task");
    task.start();
    other.start();
    task.join();
    other.join();
    long[] cpuAndWait = schedule.stop();
    // The task's 200 ms of spinning (CPU, or run-queue wait on a busy machine); the other
    // thread's are not counted.
    assertThat(cpuAndWait[0] + cpuAndWait[1]).isBetween(150_000_000L, 1_200_000_000L);
    assertThat(cpuAndWait[0]).isPositive();
    assertThat(cpuAndWait[1]).isNotNegative();
  }
}
