package io.blobfs.bench.shim;

import io.blobfs.bench.Args;
import io.blobfs.bench.run.Workload;
import io.blobfs.bench.StorageCounters;
import io.blobfs.bench.workloads.Committer;
import io.blobfs.bench.workloads.TextDataGenerator;
import java.io.IOException;
import java.nio.file.Files;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.GlobalStorageStatistics;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.StorageStatistics;
import org.apache.spark.SparkConf;
import org.apache.spark.api.java.JavaSparkContext;

/**
 * The paper's section 7 experiment: the same Spark workloads on HDFS with its hierarchical
 * namespace ({@code hdfs://}) and on the flat namespace over the same HDFS
 * ({@code flat://}, blobfs-hdfs-shim: every path one name in {@code /bench-flat}).
 * Reports completion time per workload (Figure 4), the directory operations each job made
 * on each, and the latency of each directory operation (Figure 5), as Markdown.
 *
 * <p>Run through {@code scripts/bench-hdfs-shim.sh}, which starts HDFS's daemons
 * ({@code scripts/hdfs/hdfs.sh}). Options [defaults]: {@code --hdfs} the NameNode's URI
 * [$HDFS_URI], {@code --size} input bytes [64m], {@code --files} [8], {@code --rounds}
 * measured runs of each workload on each side [5], {@code --warmup} unmeasured runs [1],
 * {@code --committer} classic|manifest [classic], {@code --master} [local[2]],
 * {@code --workloads} comma-separated names from {@link ShimWorkload#ALL} [all],
 * {@code --dirop-reps} [30], {@code --root-names} comma-separated extra names in the flat
 * root for the directory benchmark [0,1000,5000], {@code --report} the Markdown file
 * [benchmarks/reports/hdfs-shim.md].
 */
public final class ShimExperiment {
  static final String PATTERN = "ceph";
  static final int SORT_PARTITIONS = 4;
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
    d.put("files", "8");
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
          + "hdfs://127.0.0.1:40500; scripts/bench-hdfs-shim.sh starts one");
    }
    List<ShimWorkload> workloads = select(a.get("workloads"));
    Committer committer = Committer.parse(a.get("committer"));
    TextDataGenerator.Spec spec =
        new TextDataGenerator.Spec(a.getBytes("size"), a.getInt("files"), 1);
    ShimWorkload.InputFacts facts = facts(spec);

    SparkConf conf = new SparkConf()
        .setMaster(a.get("master"))
        .setAppName("blobfs-hdfs-shim")
        .set("spark.ui.enabled", "false")
        .set("spark.log.level", "WARN")
        .set("spark.driver.host", "127.0.0.1")
        .set("spark.driver.bindAddress", "127.0.0.1")
        // scripts/hdfs/hdfs.sh runs one DataNode: the client chooses replication.
        .set("spark.hadoop.dfs.replication", "1")
        .set("spark.hadoop.fs.flat.impl", FLAT_IMPL)
        .set("spark.hadoop.fs.flat.underlying.shim", hdfs + FLAT_ROOT);

    double loadBefore = loadAverage();
    String run = "run-" + System.currentTimeMillis();
    List<Run> runs = new ArrayList<>();
    Map<String, Map<Integer, Map<String, List<Long>>>> dirOps = new LinkedHashMap<>();
    Map<Integer, Long> flatRootNames = new LinkedHashMap<>();
    try (JavaSparkContext sc = new JavaSparkContext(conf)) {
      FileSystem hdfsFs = new Path(hdfs + "/").getFileSystem(sc.hadoopConfiguration());
      Path flatBase = new Path("flat://shim/" + run);
      List<Target> targets = List.of(
          new Target("hdfs", hdfsFs, new Path(hdfs + "/bench-hier/" + run)),
          new Target("flat", flatBase.getFileSystem(sc.hadoopConfiguration()), flatBase));
      for (Target t : targets) {
        TextDataGenerator.generate(t.fs(), new Path(t.base(), "input"), spec);
      }
      int rounds = a.getInt("rounds");
      int warmup = a.getInt("warmup");
      for (int r = 0; r < warmup + rounds; r++) {
        for (ShimWorkload w : workloads) {
          // Alternate which side goes first, so neither always runs on a warmer cache.
          List<Target> order = r % 2 == 0 ? targets : List.of(targets.get(1), targets.get(0));
          for (Target t : order) {
            Run result = runOnce(sc, w, t, r, committer, facts);
            System.out.printf(Locale.ROOT, "%s %s %s: %.2f s %s%n",
                r < warmup ? "warmup" : "round " + (r - warmup + 1), w.name(), t.name(),
                result.seconds(), result.check());
            if (r >= warmup) {
              runs.add(result);
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
    }
    String load = String.format(Locale.ROOT, "%.1f at the start, %.1f at the end",
        loadBefore, loadAverage());
    String markdown = ShimReport.markdown(a, spec, facts, workloads, runs, dirOps,
        flatRootNames, Instant.now(), load);
    System.out.println(markdown);
    java.nio.file.Path report = java.nio.file.Path.of(a.get("report"));
    Files.createDirectories(report.toAbsolutePath().getParent());
    Files.writeString(report, markdown);
    List<String> wrong = runs.stream().filter(x -> !Workload.OK.equals(x.check()))
        .map(x -> x.workload() + "/" + x.target() + ": " + x.check()).toList();
    if (!wrong.isEmpty()) {
      throw new IllegalStateException("wrong output: " + wrong);
    }
  }

  private static Run runOnce(JavaSparkContext sc, ShimWorkload w, Target t, int round,
      Committer committer, ShimWorkload.InputFacts facts) throws IOException {
    Path output = new Path(t.base(), w.name() + "-" + round);
    committer.configure(sc.hadoopConfiguration(), output);
    StorageCounters before = counters(t.fs());
    long t0 = System.nanoTime();
    w.run(sc, new Path(t.base(), "input"), output, committer);
    double seconds = (System.nanoTime() - t0) / 1e9;
    StorageCounters calls = counters(t.fs()).minus(before);
    String check = w.check(t.fs(), output, facts);
    t.fs().delete(output, true);
    return new Run(w.name(), t.name(), seconds, calls, check);
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

  private static ShimWorkload.InputFacts facts(TextDataGenerator.Spec spec) {
    long lines = 0;
    long matches = 0;
    for (int i = 0; i < spec.files(); i++) {
      for (Iterator<String> it = TextDataGenerator.lines(spec, i); it.hasNext(); ) {
        lines++;
        if (it.next().contains(PATTERN)) {
          matches++;
        }
      }
    }
    return new ShimWorkload.InputFacts(lines, matches, PATTERN, SORT_PARTITIONS);
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
