package io.blobfs.e2e;

import static org.assertj.core.api.Assertions.assertThat;

import io.blobfs.bench.run.SparkSubmitRunner;
import io.blobfs.bench.run.StoreTarget;
import io.blobfs.bench.run.Workload;
import io.blobfs.bench.run.WorkloadBench;
import io.blobfs.tyr.cluster.TyrProcessCluster;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.UUID;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The proof of issue 13's locality: Spark standalone on three hosts (a Master, a Worker
 * inside each host's network namespace, {@code scripts/hosts/spark-cluster.sh}) runs Grep
 * and Sort (all five with {@code -Dblobfs.standalone.workloads=all}) on {@code blob://} over
 * a Týr cluster of three server processes on the same hosts (R = 2), each output checked
 * exact against the same workload's output on file:// (run in local mode here) and against
 * its input's generator; and the share of input tasks Spark ran NODE_LOCAL, read from
 * Spark's own event log, is at least 90%.
 *
 * <p>Where namespaces are unavailable the hosts are loopback addresses (said on stderr; under
 * CI=true hosts.sh fails instead): the outputs are still checked, but every member is then
 * "localhost" to the scheduler, so the locality share is printed and not asserted.
 */
class SparkStandaloneOnTyrClusterIT {
  /** 4 text files of 1 MiB, striped by 128 KiB: 8 splits each, 32 input tasks a job. */
  private static final long SIZE = 4L << 20;
  private static final int STRIPE = 128 << 10;
  private static final double MIN_NODE_LOCAL = 0.90;
  /**
   * Grep and Sort by default: each application on the cluster costs about 30-60 s here
   * (three executors start), so the other three are left to
   * {@code -Dblobfs.standalone.workloads=all} (or a list: tokenizer,decision-tree,...).
   */
  private static final List<Workload> WORKLOADS = Workload.parseList(
      System.getProperty("blobfs.standalone.workloads", "grep,sort"));

  @TempDir
  static Path dir;
  private static TyrProcessCluster tyr;
  private static SparkStandaloneCluster spark;

  @BeforeAll
  static void start() throws Exception {
    tyr = TyrProcessCluster.start(Files.createDirectories(dir.resolve("tyr")), 3, 128, 2);
    spark = SparkStandaloneCluster.up(3, dir);
    System.out.println("Týr on " + (tyr.onOwnHosts() ? "namespaces" : "loopback") + ": "
        + tyr.nodesOption() + "; Spark master " + spark.master());
  }

  @AfterAll
  static void stop() throws Exception {
    if (spark != null) {
      spark.down();
    }
    if (tyr != null) {
      tyr.close();
    }
  }

  @Test
  void workloadsOnTheStandaloneClusterAreExactAndReadTheirInputNodeLocal() throws Exception {
    Path events = Files.createDirectories(dir.resolve("events"));
    String run = "standalone-" + UUID.randomUUID().toString().substring(0, 8);
    List<StoreTarget> stores = List.of(
        StoreTarget.local("file", dir.resolve("file-store")),
        StoreTarget.blob("tyr", "tyrc", run, Map.of("type", "tyr",
            "nodes", tyr.nodesOption(), "stripe.size", Integer.toString(STRIPE)), "none"));
    Map<String, String> conf = spark.applicationConf(events);
    java.nio.file.Path jar = SparkSubmitRunner.appJar(dir.resolve("jar"));
    WorkloadBench bench = new WorkloadBench(new WorkloadBench.Options(SIZE, 7, spark.master(),
        WORKLOADS, conf, jar, false), System.out::println);
    // The file:// reference runs in local mode in this JVM: it is the same Spark and the
    // same code, and it spares the cluster three applications' executor start-ups.
    WorkloadBench local = new WorkloadBench(new WorkloadBench.Options(SIZE, 7, "local[2]",
        WORKLOADS, SparkStandaloneCluster.localConf(), jar, false), System.out::println);

    WorkloadBench.Prepared prepared = bench.prepare(stores);
    StoreTarget file = stores.get(0);
    StoreTarget blob = stores.get(1);
    List<WorkloadBench.Result> results = new ArrayList<>();
    for (Workload w : WORKLOADS) {
      org.apache.hadoop.fs.FileSystem fileFs = prepared.fileSystems().get(file);
      org.apache.hadoop.fs.Path ref = new org.apache.hadoop.fs.Path(
          prepared.bases().get(file), "out-" + w.id());
      WorkloadBench.Result r = local.runOne(file, fileFs, w,
          prepared.inputs().get(file).get(w.input()), ref);
      // The file:// output becomes the standalone bench's reference, checked against the
      // generator on the way.
      results.add(new WorkloadBench.Result(r.store(), w, r.seconds(), r.calls(),
          bench.check(w, fileFs, ref)));
      results.add(bench.runOne(blob, prepared.fileSystems().get(blob), w,
          prepared.inputs().get(blob).get(w.input()), new org.apache.hadoop.fs.Path(
              prepared.bases().get(blob), "out-" + w.id())));
      System.out.printf(Locale.ROOT, "%-12s file:// %6.1f s %s; blob:// on the standalone "
          + "cluster %6.1f s %s%n", w.id(), results.get(results.size() - 2).seconds(),
          results.get(results.size() - 2).check(), results.get(results.size() - 1).seconds(),
          results.get(results.size() - 1).check());
    }

    assertThat(results).hasSize(stores.size() * WORKLOADS.size());
    for (WorkloadBench.Result r : results) {
      assertThat(r.check()).as("check of %s on %s (file:// is the reference)",
          r.workload().id(), r.store()).isEqualTo(Workload.OK);
    }
    EventLogLocality.Share share = EventLogLocality.inputTasks(events);
    System.out.printf(Locale.ROOT, "NODE_LOCAL input tasks on blob:// (Týr, 3 nodes, R = 2): "
        + "%d of %d = %.1f%% (by locality %s; by host %s; applications %s)%n",
        share.nodeLocal(), share.total(), 100 * share.fraction(), share.byLocality(),
        share.byHost(), share.apps());
    // Only the blob:// runs log events (the file:// reference runs in local mode without).
    assertThat(share.apps()).as("applications in the event log").hasSize(WORKLOADS.size());
    assertThat(share.total()).as("input tasks in the event log")
        .isGreaterThanOrEqualTo(minInputTasks());
    assertThat(share.byHost().keySet()).as("hosts the input tasks ran on").hasSize(3);
    if (tyr.onOwnHosts()) {
      assertThat(share.fraction()).as("share of input tasks run NODE_LOCAL: %s", share)
          .isGreaterThanOrEqualTo(MIN_NODE_LOCAL);
    } else {
      System.err.println("loopback hosts: every Týr member is localhost to the scheduler, "
          + "so the NODE_LOCAL share above proves nothing and is not asserted");
    }
    bench.cleanUp(prepared);
  }

  /** A floor: one task per stripe-sized split of each workload's input (some read it twice). */
  private static int minInputTasks() {
    int n = 0;
    for (Workload w : WORKLOADS) {
      var spec = w.input().spec(SIZE, 7);
      n += spec.files() * (int) Math.max(1, spec.totalBytes() / spec.files() / STRIPE);
    }
    return n;
  }
}
