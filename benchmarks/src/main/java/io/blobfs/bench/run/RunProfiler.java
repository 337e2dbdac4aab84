package io.blobfs.bench.run;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.text.ParseException;
import java.util.Map;
import jdk.jfr.Configuration;
import jdk.jfr.Recording;

/**
 * Profiles each timed submission of a bench (CompareBench {@code --profile DIR}): a JFR
 * recording of this JVM (the JDK's "profile" settings: CPU samples, allocation samples,
 * GC, locks, file and socket I/O) around the submission, dumped to {@code DIR/NAME.jfr},
 * and Spark's event log of the application (stages, tasks, their metrics) in {@code DIR}.
 * In local mode the driver, the tasks and an embedded store all run in this JVM, so one
 * recording sees the whole job but a store server's own process. {@code cpu.tsv} also
 * gets the task threads' CPU and run-queue wait ({@link ThreadSchedule}): what of a task's
 * time was spent waiting for a core rather than blocked.
 */
public final class RunProfiler {
  private final Path dir;
  /** Other processes whose CPU time each run is charged (a store server, HDFS's daemons). */
  private final Map<String, Long> pids;
  private long[] cpuAtStart;
  private ThreadSchedule tasks;

  /**
   * @param pids name to pid of the service processes whose CPU time (from /proc) is
   *     recorded with this JVM's, per run, in {@code DIR/cpu.tsv}: on a shared machine
   *     CPU seconds are steadier than wall-clock ones
   */
  public RunProfiler(Path dir, Map<String, Long> pids) throws IOException {
    this.dir = Files.createDirectories(dir.toAbsolutePath());
    this.pids = new java.util.LinkedHashMap<>(pids);
  }

  /** Parses {@code name:pid,name:pid} (the bench's {@code --profile-pids}). */
  public static Map<String, Long> parsePids(String list) {
    Map<String, Long> m = new java.util.LinkedHashMap<>();
    for (String item : list.split(",")) {
      if (!item.isBlank()) {
        String[] kv = item.split(":", 2);
        m.put(kv[0].trim(), Long.parseLong(kv[1].trim()));
      }
    }
    return m;
  }

  /** CPU nanoseconds of this JVM, then of each service process (-1 if unreadable). */
  private long[] cpuNow() {
    long[] t = new long[1 + pids.size()];
    t[0] = ((com.sun.management.OperatingSystemMXBean)
        java.lang.management.ManagementFactory.getOperatingSystemMXBean()).getProcessCpuTime();
    int i = 1;
    for (long pid : pids.values()) {
      t[i++] = procCpuNanos(pid);
    }
    return t;
  }

  /** utime + stime of a process from /proc/PID/stat (in clock ticks of 10 ms on Linux). */
  static long procCpuNanos(long pid) {
    try {
      String stat = Files.readString(Path.of("/proc", Long.toString(pid), "stat"));
      // Fields after the command name, which is in parentheses and may hold spaces.
      String[] f = stat.substring(stat.lastIndexOf(')') + 2).split(" ");
      return (Long.parseLong(f[11]) + Long.parseLong(f[12])) * 10_000_000L;
    } catch (IOException | RuntimeException e) {
      return -1;
    }
  }

  /** The spark-submit settings that write the application's event log here. */
  public void addSparkConf(Map<String, String> conf) {
    conf.put("spark.eventLog.enabled", "true");
    conf.put("spark.eventLog.dir", dir.toUri().toString());
    conf.put("spark.eventLog.compress", "false"); // plain JSON lines, read by any tool
  }

  /** Starts a recording of this JVM, to be dumped as {@code name}.jfr when closed. */
  public Recording start() throws IOException {
    Configuration settings;
    try {
      settings = Configuration.getConfiguration("profile");
    } catch (ParseException e) {
      throw new IOException("the JDK's JFR profile settings do not parse", e);
    }
    Recording r = new Recording(settings);
    r.start();
    cpuAtStart = cpuNow();
    tasks = new ThreadSchedule("Executor task launch worker");
    return r;
  }

  /** Stops {@code r} and writes it to {@code DIR/name.jfr}. */
  public Path stop(Recording r, String name, double seconds) throws IOException {
    long[] cpu = cpuNow();
    long[] taskThreads = tasks.stop();
    r.stop();
    Path tsv = dir.resolve("cpu.tsv");
    StringBuilder line = new StringBuilder();
    if (!Files.exists(tsv)) {
      line.append("run\twall_s\tjvm_cpu_s");
      pids.keySet().forEach(n -> line.append('\t').append(n).append("_cpu_s"));
      line.append("\ttasks_cpu_s\ttasks_runq_s\n");
    }
    line.append(name).append('\t').append(String.format(java.util.Locale.ROOT, "%.2f", seconds));
    for (int i = 0; i < cpu.length; i++) {
      line.append('\t').append(String.format(java.util.Locale.ROOT, "%.2f",
          (cpu[i] - cpuAtStart[i]) / 1e9));
    }
    line.append(String.format(java.util.Locale.ROOT, "\t%.2f\t%.2f", taskThreads[0] / 1e9,
        taskThreads[1] / 1e9));
    line.append(" load ").append(loadAverage()).append('\n');
    Files.writeString(tsv, line, java.nio.file.StandardOpenOption.CREATE,
        java.nio.file.StandardOpenOption.APPEND);
    Path file = dir.resolve(name + ".jfr");
    r.dump(file);
    r.close();
    return file;
  }

  private static String loadAverage() {
    try {
      return Files.readString(Path.of("/proc/loadavg")).trim();
    } catch (IOException e) {
      return "?";
    }
  }
}
