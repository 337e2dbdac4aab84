package io.blobfs.bench.compare;

import io.blobfs.bench.Args;
import io.blobfs.bench.MainJob;
import io.blobfs.bench.run.RunProfiler;
import io.blobfs.bench.run.SparkSubmitRunner;
import io.blobfs.bench.run.StoreTarget;
import io.blobfs.bench.run.Workload;
import io.blobfs.bench.run.WorkloadBench;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * The paper's comparison (section 8.4, Figures 12-14): the five workloads on HDFS, blob:// on
 * a Týr server process and on RADOS, CephFS (ceph-fuse, reached as file://) and file://,
 * each spark-submitted as {@link MainJob} submits them, over several rounds. Inputs are
 * generated once per store; in each round every workload runs on every store, the stores
 * interleaved and their order turned by one each round, so that neither machine noise nor
 * a warm cache always favours the same store. Every output is checked against file://'s
 * (round 1 runs file:// first, which makes its outputs the reference); a wrong answer fails
 * the run after the report is written. Before the rounds each workload runs once, untimed,
 * on file:// ({@code --warm-up false} skips it).
 *
 * <p>Run through {@code scripts/bench-compare.sh}, which starts the services and exports
 * their settings. Options are {@link MainJob}'s (the stores' settings, {@code --size},
 * {@code --workloads}, {@code --master}, ...) plus {@code --rounds} [3], {@code --report-dir}
 * [benchmarks/reports] and {@code --name} [compare]; {@code --stores} defaults to
 * hdfs,tyr,rados,cephfs,file. {@code --profile DIR} records each timed run with JFR and
 * Spark's event log into DIR ({@link RunProfiler}), and with {@code --profile-pids
 * name:pid,...} the CPU time of those service processes per run.
 */
public final class CompareBench {
  private CompareBench() {}

  static Map<String, String> defaults() {
    Map<String, String> d = MainJob.defaults();
    d.put("stores", "hdfs,tyr,rados,cephfs,file");
    d.put("size", "64m");
    d.put("rounds", "3");
    d.put("report-dir", "benchmarks/reports");
    d.put("name", "compare");
    d.put("profile", "");
    d.put("profile-pids", "");
    d.put("work-dir", "benchmarks/target/compare-work");
    d.put("data-dir", "benchmarks/target/compare-tyr");
    return d;
  }

  public static void main(String[] argv) throws Exception {
    Args a = Args.parse(argv, defaults());
    int rounds = a.getInt("rounds");
    if (rounds < 1) {
      throw new IllegalArgumentException("--rounds must be at least 1");
    }
    String run = "compare-" + System.currentTimeMillis();
    List<StoreTarget> stores = MainJob.stores(a, run);
    Path work = Path.of(a.get("work-dir")).toAbsolutePath();
    List<Workload> workloads = Workload.parseList(a.get("workloads"));
    Map<String, String> spark = MainJob.sparkConf();
    // One DataNode: replication is the client's choice in HDFS (the daemons' own is 1 too).
    spark.put("spark.hadoop.dfs.replication", "1");
    spark.put("spark.hadoop.dfs.blocksize", Long.toString(64L << 20));
    WorkloadBench.Options options = new WorkloadBench.Options(a.getBytes("size"),
        a.getLong("seed"), a.get("master"), workloads, spark, SparkSubmitRunner.appJar(work),
        a.get("warm-up").equals("true"));

    String loadStart = loadAverage();
    Instant started = Instant.now();
    System.out.printf(Locale.ROOT, "comparison: %d workloads x %s, %d rounds, text input %s; "
        + "load average %s%n", workloads.size(), stores.stream().map(StoreTarget::name).toList(),
        rounds, a.get("size"), loadStart);
    WorkloadBench bench = new WorkloadBench(options, System.out::println);
    if (!a.get("profile").isEmpty()) {
      bench.profile(new RunProfiler(Path.of(a.get("profile")),
          RunProfiler.parsePids(a.get("profile-pids"))));
    }
    List<CompareReport.Run> runs = new ArrayList<>();
    List<String> roundLoads = new ArrayList<>();
    WorkloadBench.Prepared prepared = bench.prepare(stores);
    try {
      // Each workload once, untimed, on the reference: the first timed run of a workload
      // would otherwise pay for loading and compiling its code (MLlib, GraphX) alone.
      if (a.get("warm-up").equals("true")) {
        bench.warmUp(prepared, stores.get(0), workloads);
      }
      int total = rounds * workloads.size() * stores.size();
      for (int r = 0; r < rounds; r++) {
        List<StoreTarget> order = new ArrayList<>(stores);
        Collections.rotate(order, -r);
        System.out.printf(Locale.ROOT, "round %d of %d, order %s, load average %s%n", r + 1,
            rounds, order.stream().map(StoreTarget::name).toList(), loadAverage());
        for (WorkloadBench.Result res : bench.round(prepared, order, r + 1, total, true)) {
          runs.add(new CompareReport.Run(r + 1, res));
        }
        roundLoads.add(loadAverage());
      }
    } finally {
      bench.cleanUp(prepared);
    }
    CompareReport report = new CompareReport(stores.stream().map(StoreTarget::name).toList(),
        workloads, runs);
    String setup = String.format(Locale.ROOT, "Run %s, %d rounds, text input %s (seed %s; "
        + "the other inputs are fractions of it, see `Dataset`), master %s, %d cores "
        + "(`nproc`). Load average (1, 5, 15 min) at the start: %s; after each round: %s. "
        + "The machine is shared with other work: every figure below is measured side by "
        + "side in this one run.", started, rounds, a.get("size"), a.get("seed"),
        a.get("master"), Runtime.getRuntime().availableProcessors(), loadStart,
        String.join("; ", roundLoads));
    Path dir = Path.of(a.get("report-dir")).toAbsolutePath();
    Files.createDirectories(dir);
    String md = report.markdown(setup, a.get("name"), reproduce(a));
    Files.writeString(dir.resolve(a.get("name") + ".md"), md);
    report.charts(dir, a.get("name"));
    System.out.println(md);

    List<String> wrong = runs.stream().filter(x -> !x.result().ok())
        .map(x -> "round " + x.round() + " " + x.result().store() + "/"
            + x.result().workload().id() + ": " + x.result().check()).toList();
    if (!wrong.isEmpty()) {
      throw new IllegalStateException("wrong output: " + wrong);
    }
  }

  private static String reproduce(Args a) {
    return "scripts/bench-compare.sh --size " + a.get("size") + " --rounds " + a.get("rounds")
        + " --workloads " + a.get("workloads") + " --stores " + a.get("stores");
  }

  /** /proc/loadavg's three averages: the machine is shared, and every figure says so. */
  static String loadAverage() {
    try {
      String[] f = Files.readString(Path.of("/proc/loadavg")).trim().split("\\s+");
      return f[0] + " " + f[1] + " " + f[2];
    } catch (IOException e) {
      return String.format(Locale.ROOT, "%.2f", java.lang.management.ManagementFactory
          .getOperatingSystemMXBean().getSystemLoadAverage());
    }
  }
}
