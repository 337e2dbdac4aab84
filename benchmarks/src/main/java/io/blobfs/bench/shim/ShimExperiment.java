package io.blobfs.bench.shim;

import io.blobfs.bench.Args;
import io.blobfs.bench.MainJob;
import io.blobfs.bench.StorageCounters;
import io.blobfs.bench.run.Dataset;
import io.blobfs.bench.run.SparkSubmitRunner;
import io.blobfs.bench.run.Workload;
import io.blobfs.bench.workloads.Committer;
import io.blobfs.bench.workloads.Grep;
import io.blobfs.bench.workloads.TextDataGenerator;
import java.io.IOException;
import java.nio.file.Files;
import java.time.Instant;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.GlobalStorageStatistics;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.StorageStatistics;

/**
 * The paper's section 7 experiment: the five Spark workloads ({@link Workload}) on HDFS with its hierarchical
 * namespace ({@code hdfs://}) and on the flat namespace over the same HDFS
 * ({@code flat://}, blobfs-hdfs-shim: every path one name in {@code /bench-flat}).
 * Reports completion time per workload (Figure 4), the directory operations each job made
 * on each, and the latency of each directory operation (Figure 5), as Markdown.
 *
 * <p>Run through {@code scripts/bench-hdfs-shim.sh}, which starts HDFS's daemons
 * ({@code scripts/hdfs/hdfs.sh}). Options [defaults]: {@code --hdfs} the NameNode's URI
 * [$HDFS_URI], {@code --size} text input bytes, the other inputs a share of it as in
 * {@link Dataset} [64m], {@code --seed} [1], {@code --rounds}
 * measured runs of each workload on each side [5], {@code --warmup} unmeasured runs [1],
 * {@code --committer} classic|manifest [classic], {@code --master} [local[2]],
 * {@code --workloads} comma-separated ids of {@link Workload} [all],
 * {@code --dirop-reps} [30], {@code --root-names} comma-separated extra names in the flat
 * root for the directory benchmark [0,1000,5000], {@code --report} the Markdown file, the
 * charts beside it as NAME-time.png and NAME-dirops.png [benchmarks/reports/hdfs-shim.md].
 */
public final class ShimExperiment {
  /** Grep's pattern: the application's default, which the expectations must use too. */
  static final String PATTERN = Grep.DEFAULT_PATTERN;
  static final String FLAT_IMPL = "io.blobfs.shim.FlatNamespaceFileSystem";
  static final String FLAT_ROOT = "/bench-flat";
  /** Counted per job: Hadoop's own call names, as DFS and the shim both report them. */
  static final List<String> DIR_CALLS = List.of("op_mkdirs", "op_list_status",
      "op_get_file_status", "op_rename", "op_delete");
  /** DFSOpsCountStatistics.NAME: HDFS's client call counts in GlobalStorageStatistics. */
  static final String DFS_STATISTICS = "DFSOpsCountStatistics";
  static final String DFS_PREFIX = "dfs:";
  /** The shim's own: what Table 3 turns those calls into. */
  static final List<String> FLAT_COUNTERS = List.of("flat_mkdir_dropped", "flat_opendir",
      "flat_rmdir", "flat_dir_rename", "flat_dir_probe", "flat_root_scans",
      "flat_scanned_names", "flat_underlying_calls");

  private ShimExperiment() {}

  static Map<String, String> defaults() {
    Map<String, String> d = new LinkedHashMap<>();
    d.put("hdfs", System.getenv().getOrDefault("HDFS_URI", ""));
    d.put("size", "64m");
    d.put("seed", "1");
    d.put("rounds", "5");
    d.put("warmup", "1");
    d.put("committer", "classic");
    d.put("master", "local[2]");
    d.put("workloads", "all");
    d.put("dirop-reps", "30");
    d.put("root-names", "0,1000,5000");
    d.put("report", "benchmarks/reports/hdfs-shim.md");
    return d;
  }

  /** One side of the comparison. */
  record Target(String name, FileSystem fs, Path base) {}

  /** One measured run of a workload on a target. */
  record Run(String workload, String target, double seconds, StorageCounters calls,
      String check) {}

  public static void main(String[] argv) throws Exception {
    Args a = Args.parse(argv, defaults());
    String hdfs = a.get("hdfs");
    if (hdfs.isEmpty()) {
      throw new IllegalArgumentException("--hdfs (or HDFS_URI) must name the NameNode, e.g. "
          + "hdfs://127.0.0.1:16500; scripts/bench-hdfs-shim.sh starts one");
    }
    List<ShimWorkload> workloads = select(a.get("workloads"));
    Committer committer = Committer.parse(a.get("committer"));
    long size = a.getBytes("size");
    long seed = a.getLong("seed");
    Map<Dataset, Dataset.Expected> expected = new EnumMap<>(Dataset.class);
    for (ShimWorkload w : workloads) {
      Dataset d = w.workload().input();
      expected.computeIfAbsent(d, k -> k.expected(k.spec(size, seed), PATTERN));
    }

    // The jobs' settings: Spark's own, then the Hadoop keys every job and the harness share.
    Map<String, String> hadoop = new LinkedHashMap<>();
    // scripts/hdfs/hdfs.sh runs one DataNode: the client chooses replication.
    hadoop.put("dfs.replication", "1");
    hadoop.put("fs.flat.impl", FLAT_IMPL);
    hadoop.put("fs.flat.underlying.shim", hdfs + FLAT_ROOT);
    for (String scheme : List.of("hdfs", "flat")) {
      hadoop.put(Committer.FACTORY_SCHEME_KEY_PREFIX + scheme, committer.factoryClass());
    }
    Map<String, String> spark = MainJob.sparkConf();
    hadoop.forEach((k, v) -> spark.put("spark.hadoop." + k, v));
    Configuration conf = new Configuration();
    hadoop.forEach(conf::set);
    java.nio.file.Path appJar = SparkSubmitRunner.appJar(
        java.nio.file.Path.of(System.getProperty("java.io.tmpdir"), "blobfs-shim-bench"));

    double loadBefore = loadAverage();
    String run = "run-" + System.currentTimeMillis();
    List<Run> runs = new ArrayList<>();
    List<String> wrong = new ArrayList<>();
    Map<String, Map<Integer, Map<String, List<Long>>>> dirOps = new LinkedHashMap<>();
    Map<Integer, Long> flatRootNames = new LinkedHashMap<>();
    // The jobs run in this JVM (client mode) and get these same cached instances: Hadoop's
    // cache is keyed by scheme, authority and user, not by configuration.
    FileSystem hdfsFs = new Path(hdfs + "/").getFileSystem(conf);
    Path flatBase = new Path("flat://shim/" + run);
    List<Target> targets = List.of(
        new Target("hdfs", hdfsFs, new Path(hdfs + "/bench-hier/" + run)),
        new Target("flat", flatBase.getFileSystem(conf), flatBase));
    for (Target t : targets) {
      for (Dataset d : expected.keySet()) {
        d.generate(t.fs(), new Path(t.base(), d.dirName()), d.spec(size, seed));
      }
    }
    Map<Workload, Workload.Outcome> reference = new EnumMap<>(Workload.class);
    int rounds = a.getInt("rounds");
    int warmup = a.getInt("warmup");
    for (int r = 0; r < warmup + rounds; r++) {
      for (ShimWorkload w : workloads) {
        // Alternate which side goes first, so neither always runs on a warmer cache.
        List<Target> order = r % 2 == 0 ? targets : List.of(targets.get(1), targets.get(0));
        for (Target t : order) {
          Run result = runOnce(a.get("master"), spark, appJar, w, t, r, reference,
              expected.get(w.workload().input()));
          System.out.printf(Locale.ROOT, "%s %s %s: %.2f s %s (load %.1f)%n",
              r < warmup ? "warmup" : "round " + (r - warmup + 1), w.name(), t.name(),
              result.seconds(), result.check(), loadAverage());
          if (r >= warmup) {
            runs.add(result);
          }
          if (!Workload.OK.equals(result.check())) {
            wrong.add(w.name() + "/" + t.name() + " round " + r + ": " + result.check());
          }
        }
      }
    }
    int padded = 0;
    for (int extra : parseInts(a.get("root-names"))) {
      for (Target t : targets) {
        pad(t, padded, extra);
        Path base = new Path(t.base(), "dirops-" + extra);
        dirOps.computeIfAbsent(t.name(), k -> new LinkedHashMap<>())
            .put(extra, DirectoryOpBench.run(t.fs(), base, a.getInt("dirop-reps"), 4));
      }
      flatRootNames.put(extra, (long) hdfsFs.listStatus(new Path(hdfs + FLAT_ROOT)).length);
      padded = Math.max(padded, extra);
    }
    for (Target t : targets) {
      t.fs().delete(t.base(), true);
    }
    String load = String.format(Locale.ROOT, "%.1f at the start, %.1f at the end",
        loadBefore, loadAverage());
    java.nio.file.Path report = java.nio.file.Path.of(a.get("report")).toAbsolutePath();
    // The charts sit beside the report, named after it: hdfs-shim.md, hdfs-shim-time.png.
    String chartName = report.getFileName().toString().replaceFirst("\\.md$", "");
    String markdown = ShimReport.markdown(a, inputs(expected.keySet(), size, seed), workloads,
        runs, dirOps, flatRootNames, Instant.now(), load, chartName);
    System.out.println(markdown);
    Files.createDirectories(report.getParent());
    Files.writeString(report, markdown);
    ShimReport.charts(report.getParent(), chartName, workloads, runs, dirOps, flatRootNames);
    if (!wrong.isEmpty()) {
      throw new IllegalStateException("wrong output: " + wrong);
    }
  }

  /**
   * One submission, timed, with the calls it made, its output checked as
   * {@code WorkloadBench} checks: against the generator's expectations and against the
   * workload's first output on either side (the reference), then deleted.
   */
  private static Run runOnce(String master, Map<String, String> spark,
      java.nio.file.Path appJar, ShimWorkload w, Target t, int round,
      Map<Workload, Workload.Outcome> reference, Dataset.Expected expected)
      throws IOException {
    Path output = new Path(t.base(), w.name() + "-" + round);
    Path input = new Path(t.base(), w.workload().input().dirName());
    StorageCounters before = counters(t.fs());
    long t0 = System.nanoTime();
    String failure = null;
    try {
      w.run(master, spark, appJar, input, output);
    } catch (Exception e) { // SparkSubmit rethrows what the application threw
      failure = "failed: " + e;
      e.printStackTrace();
    }
    double seconds = (System.nanoTime() - t0) / 1e9;
    StorageCounters calls = counters(t.fs()).minus(before);
    String check = failure;
    if (check == null) {
      Workload.Outcome actual = w.workload().read(t.fs(), output);
      check = w.workload().check(actual, reference.computeIfAbsent(w.workload(), k -> actual),
          expected);
    }
    t.fs().delete(output, true);
    return new Run(w.name(), t.name(), seconds, calls, check);
  }

  /** The report's line on the inputs: each dataset's generated size. */
  private static String inputs(java.util.Set<Dataset> datasets, long size, long seed) {
    List<String> parts = new ArrayList<>();
    for (Dataset d : datasets) {
      TextDataGenerator.Spec s = d.spec(size, seed);
      parts.add(String.format(Locale.ROOT, "%s %,d bytes in %d files",
          d.name().toLowerCase(Locale.ROOT), s.totalBytes(), s.files()));
    }
    return String.join("; ", parts) + " (seed " + seed + ")";
  }

  /**
   * The file system's own counters, and HDFS's client-side call counts under
   * {@link #DFS_PREFIX}. DistributedFileSystem keeps those in the JVM-wide
   * {@code GlobalStorageStatistics} (its {@code getStorageStatistics()} is empty), shared by
   * every HDFS client in the JVM: the shim's underlying one included. Runs are sequential,
   * so a run's delta holds its own calls only: on flat, the HDFS calls the shim made.
   */
  static StorageCounters counters(FileSystem fs) {
    Map<String, Long> values = new LinkedHashMap<>(StorageCounters.of(fs).asMap());
    StorageStatistics dfs = GlobalStorageStatistics.INSTANCE.get(DFS_STATISTICS);
    if (dfs != null) {
      for (Iterator<StorageStatistics.LongStatistic> it = dfs.getLongStatistics();
          it.hasNext(); ) {
        StorageStatistics.LongStatistic st = it.next();
        values.put(DFS_PREFIX + st.getName(), st.getValue());
      }
    }
    return StorageCounters.of(values);
  }

  /**
   * Adds empty files {@code from..to-1} under the target's pad directory (levels ascend,
   * so the earlier ones exist; no exists() per file, which on flat:// would scan).
   */
  private static void pad(Target t, int from, int to) throws IOException {
    Path dir = new Path(t.base(), "pad");
    for (int i = from; i < to; i++) {
      t.fs().create(new Path(dir, String.format(Locale.ROOT, "p-%06d", i)), false).close();
    }
  }

  /** The machine's 1-minute load average: other work on it shows in every figure. */
  private static double loadAverage() {
    return java.lang.management.ManagementFactory.getOperatingSystemMXBean()
        .getSystemLoadAverage();
  }

  private static List<ShimWorkload> select(String names) {
    if (names.equals("all")) {
      return ShimWorkload.ALL;
    }
    List<ShimWorkload> out = new ArrayList<>();
    for (String n : names.split(",")) {
      out.add(ShimWorkload.ALL.stream().filter(w -> w.name().equals(n.trim())).findFirst()
          .orElseThrow(() -> new IllegalArgumentException("unknown workload '" + n
              + "'; known: " + ShimWorkload.ALL.stream().map(ShimWorkload::name).toList())));
    }
    return out;
  }

  private static List<Integer> parseInts(String csv) {
    List<Integer> out = new ArrayList<>();
    for (String s : csv.split(",")) {
      out.add(Integer.parseInt(s.trim()));
    }
    return out;
  }
}
