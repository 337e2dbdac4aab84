package io.blobfs.bench;

import io.blobfs.bench.run.CallReport;
import io.blobfs.bench.run.SparkSubmitRunner;
import io.blobfs.bench.run.StoreTarget;
import io.blobfs.bench.run.Workload;
import io.blobfs.bench.run.WorkloadBench;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import org.apache.spark.package$;

/**
 * The main job: the paper's five Spark workloads (Sort, Grep, Decision Tree, Connected
 * Components, Tokenizer), each submitted through SparkSubmit as a user would, on each chosen
 * back end, every output checked against the same workload's output on file:// and against
 * its generator; prints progress, then one table of times, bandwidths, storage calls and
 * Table 2's directory operations, and writes {@code main-job.md} (a table per workload) and
 * {@code storage-calls-STORE.png} (Figure 3) to {@code --results}.
 *
 * <pre>
 *   mvn -pl benchmarks exec:exec@main-job -Dbench.args="--size 64m --stores embedded,file"
 * </pre>
 *
 * Options (defaults in brackets): {@code --size} bytes of text input, the other inputs
 * being fractions of it [8m]; {@code --seed} [1]; {@code --stores} any of
 * embedded,memory,file,hdfs,tyr,rados,cephfs, or tyr-nogather/embedded-nogather (the same
 * stores with fs.blob.write.gather.size=0) [embedded,file] (file:// always runs first: it is the
 * reference); {@code --workloads} [all]; {@code --master} [local[2]]; {@code --warm-up} one untimed
 * submission first [true]; {@code --markers}
 * fs.blob.directory.markers none/keep [none]; {@code --data-dir} the embedded Týr node's log
 * [target/main-job-tyr]; {@code --work-dir} file:// runs and the application jar
 * [target/main-job-work]; {@code --results} [target/main-job]; for the stores that need a
 * service (scripts/main-job.sh starts each through its script and exports these):
 * {@code --hdfs-uri} [$HDFS_URI], {@code --tyr-address} [$TYR_ADDRESS], {@code --rados-pool}
 * [$BLOBFS_CEPH_POOL], {@code --ceph-conf} [$CEPH_CONF], {@code --ceph-keyring}
 * [$BLOBFS_CEPH_CLIENT_KEYRING] with {@code --ceph-client} [blobfs], {@code --cephfs-dir}
 * [$CEPHFS_MOUNT]; {@code --stripe-size} of blob:// on Týr and RADOS [64m, the paper's].
 * Throws (exit status non-zero) if any output is wrong.
 */
public final class MainJob {
  private MainJob() {}

  public static Map<String, String> defaults() {
    Map<String, String> d = new LinkedHashMap<>();
    d.put("size", "8m");
    d.put("seed", "1");
    d.put("stores", "embedded,file");
    d.put("workloads", "all");
    d.put("master", "local[2]");
    d.put("warm-up", "true");
    d.put("markers", "none");
    d.put("data-dir", "target/main-job-tyr");
    d.put("work-dir", "target/main-job-work");
    d.put("results", "target/main-job");
    d.put("hdfs-uri", envOr("HDFS_URI", ""));
    d.put("tyr-address", envOr("TYR_ADDRESS", ""));
    d.put("rados-pool", envOr("BLOBFS_CEPH_POOL", ""));
    d.put("ceph-conf", envOr("CEPH_CONF", "/etc/ceph/ceph.conf"));
    d.put("ceph-keyring", envOr("BLOBFS_CEPH_CLIENT_KEYRING", ""));
    d.put("ceph-client", "blobfs");
    d.put("cephfs-dir", envOr("CEPHFS_MOUNT", ""));
    d.put("stripe-size", "64m");
    return d;
  }

  public static void main(String[] args) throws Exception {
    run(args, System.out);
  }

  /**
   * Runs everything, prints progress and the report to {@code out}, returns the results.
   *
   * @throws IllegalStateException after printing, if an output was wrong
   */
  public static List<WorkloadBench.Result> run(String[] args, PrintStream out)
      throws IOException {
    Args a = Args.parse(args, defaults());
    String run = "run-" + System.currentTimeMillis();
    List<StoreTarget> stores = stores(a, run);
    Path work = Path.of(a.get("work-dir")).toAbsolutePath();
    WorkloadBench.Options options = new WorkloadBench.Options(a.getBytes("size"),
        a.getLong("seed"), a.get("master"), Workload.parseList(a.get("workloads")),
        sparkConf(), SparkSubmitRunner.appJar(work), a.get("warm-up").equals("true"));

    out.printf(Locale.ROOT, "BlobFS main job: Spark %s, master %s, %d workloads on %s, "
        + "text input %s (seed %d); each workload is a spark-submit of its own application%n",
        package$.MODULE$.SPARK_VERSION(), options.master(), options.workloads().size(),
        stores.stream().map(s -> s.name() + " (" + s.base() + ")").toList(), a.get("size"),
        options.seed());
    long t0 = System.nanoTime();
    List<WorkloadBench.Result> results =
        new WorkloadBench(options, line -> out.println(line)).run(stores);
    out.printf(Locale.ROOT, "%nall runs took %.1f s; MB/s = bytes over the job's wall time; "
        + "calls: paper section 6, then Table 2's directory operations (see "
        + "benchmarks/README.md for where each count comes from)%n%n",
        (System.nanoTime() - t0) / 1e9);
    CallReport.printTable(results, out);

    Path dir = Path.of(a.get("results")).toAbsolutePath();
    Files.createDirectories(dir);
    Files.writeString(dir.resolve("main-job.md"), "# Main job: storage calls per workload\n\n"
        + CallReport.markdown(results), StandardCharsets.UTF_8);
    for (StoreTarget s : stores) {
      CallReport.chart(results, s.name(), dir.resolve("storage-calls-" + s.name() + ".png"));
    }
    out.println();
    out.println("tables per workload: " + dir.resolve("main-job.md") + "; charts: "
        + dir + "/storage-calls-*.png");

    List<String> failed = results.stream().filter(r -> !r.ok())
        .map(r -> r.store() + "/" + r.workload().id() + ": " + r.check()).toList();
    if (!failed.isEmpty()) {
      throw new IllegalStateException("wrong output: " + failed);
    }
    return results;
  }

  /** What every submission gets: local, quiet, on the loopback address. */
  public static Map<String, String> sparkConf() {
    Map<String, String> c = new LinkedHashMap<>();
    c.put("spark.ui.enabled", "false");
    c.put("spark.log.level", "WARN");
    c.put("spark.driver.host", "127.0.0.1");
    c.put("spark.driver.bindAddress", "127.0.0.1");
    return c;
  }

  /** The chosen back ends, file:// first as the reference; a missing requirement fails. */
  public static List<StoreTarget> stores(Args a, String run) {
    List<String> names = new ArrayList<>(StoreTarget.parseList(a.get("stores")));
    names.remove("file");
    names.add(0, "file");
    List<StoreTarget> out = new ArrayList<>();
    for (String n : names) {
      out.add(switch (n) {
        case "file" -> StoreTarget.local("file",
            Path.of(a.get("work-dir"), "file-store", run));
        case "embedded" -> StoreTarget.blob("embedded", "main", run, Map.of("type", "tyr",
            "embedded-dir", Path.of(a.get("data-dir")).toAbsolutePath().toString()),
            a.get("markers"));
        case "memory" -> StoreTarget.blob("memory", "mem", run, Map.of("type", "memory"),
            a.get("markers"));
        case "hdfs" -> StoreTarget.hdfs(required(a, "hdfs-uri", n), run);
        case "tyr" -> StoreTarget.blob("tyr", "tyr", run, Map.of("type", "tyr",
            "address", required(a, "tyr-address", n), "stripe.size", a.get("stripe-size")),
            a.get("markers"));
        // The same stores with small writes handed through one by one, as before
        // fs.blob.write.gather.size: a before/after in one run. Their own profile names,
        // since Hadoop caches one file system per scheme and authority, and their own run
        // directory, since tyr-nogather shares tyr's server.
        case "tyr-nogather" -> StoreTarget.blob(n, "tyrng", run + "-ng", Map.of("type", "tyr",
            "address", required(a, "tyr-address", n), "stripe.size", a.get("stripe-size"),
            "write.gather.size", "0"), a.get("markers"));
        case "embedded-nogather" -> StoreTarget.blob(n, "mainng", run + "-ng",
            Map.of("type", "tyr", "write.gather.size", "0", "embedded-dir",
                Path.of(a.get("data-dir") + "-nogather").toAbsolutePath().toString()),
            a.get("markers"));
        case "rados" -> StoreTarget.blob("rados", "rados", run, radosOptions(a),
            a.get("markers"));
        case "cephfs" -> StoreTarget.local("cephfs",
            Path.of(required(a, "cephfs-dir", n), "blobfs-main-job", run));
        default -> throw new IllegalArgumentException("unknown store " + n);
      });
    }
    return out;
  }

  /** The pool, conf and (with cephx) client and keyring, striped as {@code --stripe-size}. */
  private static Map<String, String> radosOptions(Args a) {
    Map<String, String> o = new LinkedHashMap<>();
    o.put("type", "rados");
    o.put("pool", required(a, "rados-pool", "rados"));
    o.put("conf", a.get("ceph-conf"));
    if (!a.get("ceph-keyring").isBlank()) {
      o.put("client-id", a.get("ceph-client"));
      o.put("keyring", a.get("ceph-keyring"));
    }
    o.put("stripe.size", a.get("stripe-size"));
    return o;
  }

  private static String required(Args a, String option, String store) {
    String v = a.get(option);
    if (v.isBlank()) {
      throw new IllegalArgumentException("--stores " + store + " needs --" + option + "; "
          + store + " needs " + StoreTarget.KNOWN.get(store));
    }
    return v;
  }

  private static String envOr(String name, String fallback) {
    String v = System.getenv(name);
    return v == null ? fallback : v;
  }
}
