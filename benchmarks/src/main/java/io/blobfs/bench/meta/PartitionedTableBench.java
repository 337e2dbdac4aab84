package io.blobfs.bench.meta;

import static org.apache.spark.sql.functions.col;

import io.blobfs.bench.Args;
import io.blobfs.bench.StorageCounters;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.LocalDate;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileSystem;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;

/**
 * Metadata-heavy Spark work on RADOS, name index against pure scan (issue 14): a Spark SQL
 * write of a table partitioned into many partitions ({@code df.write.partitionBy}, Parquet,
 * through Spark's default commit protocol, Hadoop's {@code FileOutputCommitter} algorithm 1),
 * then two reads back: a filter on the partition column (Spark lists every partition
 * directory to prune) and a count of every row. Each pool is one of those
 * {@code scripts/bench-rados-index.sh} filled (its names indexed in base namespace
 * {@code names}); the indexed client writes among them, the pure-scan client in a
 * namespace of its own beside them (a scan still walks the whole pool). Cells are
 * interleaved per repetition, the modes' order flipped each time.
 *
 * <p>Usage: {@code PartitionedTableBench --pools P1,P2 --partitions 500 --rows 50000
 * --reps 3 --scan-reps 3 --report benchmarks/reports [--modes omap,scan] [--between CMD]};
 * the environment of scripts/ceph/cluster.sh with the admin keyring. Each write prints
 * its RADOS calls' counts and times ({@code io.blobfs.rados.RadosCallTimes}); CMD runs
 * in bash before every cell, with REP, POOL and MODE set (benchmarks/reports/
 * rados-spark-repetitions.md used it for OSD counters and compactions).
 */
public final class PartitionedTableBench {
  private PartitionedTableBench() {}

  private static final String[] MODES = {"omap", "scan"};
  private static final String[] PHASES = {"write", "filter one partition", "count all"};

  public static void main(String[] argv) throws Exception {
    Args args = Args.parse(argv, Map.of("pools", "blobfs-n1k,blobfs-n100k", "partitions",
        "500", "rows", "50000", "reps", "3", "scan-reps", "3", "report",
        "benchmarks/reports", "between", "", "modes", "omap,scan"));
    List<String> pools = List.of(args.get("pools").split(","));
    int partitions = args.getInt("partitions");
    int rows = args.getInt("rows");
    int reps = args.getInt("reps");
    int scanReps = args.getInt("scan-reps");
    String run = "sql" + ProcessHandle.current().pid();
    SparkSession spark = SparkSession.builder().master("local[2]")
        .appName("blobfs-partitioned-table").config("spark.ui.enabled", "false")
        .config("spark.driver.host", "127.0.0.1").config("spark.driver.bindAddress",
            "127.0.0.1").config("spark.sql.shuffle.partitions", "4").getOrCreate();
    Configuration hc = spark.sparkContext().hadoopConfiguration();
    hc.set("fs.blob.impl", "io.blobfs.hadoop.BlobFileSystem");
    for (String pool : pools) {
      for (String mode : MODES) {
        String ns = mode.equals("omap") ? "names" : "sqlscan-" + run;
        Map<String, String> o = Map.of("type", "rados", "pool", pool, "conf",
            env("CEPH_CONF"), "client-id", "admin", "keyring", env("CEPH_KEYRING"),
            "namespace", ns, "index", mode);
        o.forEach((k, v) -> hc.set("fs.blob.store." + store(pool, mode) + "." + k, v));
      }
    }
    // Rows spread over the partitions; four tasks, each writing the partitions hashed to it,
    // so each partition directory gets one file.
    Dataset<Row> df = spark.range(rows).selectExpr("id", "cast(id % " + partitions
        + " as int) as part", "concat('value-', id) as v").repartition(4, col("part"));
    Map<String, List<Double>> seconds = new HashMap<>();
    Map<String, Map<String, Long>> calls = new HashMap<>();
    String loadBefore = loadAverage();
    List<String> modesRun = List.of(args.get("modes").split(","));
    for (int r = 0; r < reps; r++) {
      List<String> modes = new ArrayList<>(List.of(MODES));
      if (r % 2 == 1) {
        Collections.reverse(modes);
      }
      for (String pool : pools) {
        for (String mode : modes) {
          if (mode.equals("scan") && r >= scanReps) {
            continue;
          }
          if (!modesRun.contains(mode)) {
            continue;
          }
          between(args.get("between"), r + 1, pool, mode);
          String table = "blob://" + store(pool, mode) + "/" + run + "/r" + r + "/table";
          FileSystem fs = new org.apache.hadoop.fs.Path(table).getFileSystem(hc);
          StorageCounters before = StorageCounters.of(fs);
          Map<String, long[]> radosBefore = radosCalls();
          long t0 = System.nanoTime();
          df.write().partitionBy("part").parquet(table);
          long t1 = System.nanoTime();
          StorageCounters used = StorageCounters.of(fs).minus(before);
          // Which RADOS call a slower write spent its time in (issue 14).
          System.out.printf(Locale.ROOT, "rep %d %s %s write calls: %s%n", r + 1, pool, mode,
              radosDelta(radosBefore, radosCalls()));
          long one = spark.read().parquet(table).filter(col("part").equalTo(7)).count();
          long t2 = System.nanoTime();
          long all = spark.read().parquet(table).count();
          long t3 = System.nanoTime();
          long expectOne = rows / partitions + (7 < rows % partitions ? 1 : 0);
          if (one != expectOne || all != rows) {
            throw new IllegalStateException(table + ": read back " + one + " rows of part 7 ("
                + expectOne + " written) and " + all + " in all (" + rows + " written)");
          }
          String cell = pool + "/" + mode;
          add(seconds, cell + "/0", (t1 - t0) / 1e9);
          add(seconds, cell + "/1", (t2 - t1) / 1e9);
          add(seconds, cell + "/2", (t3 - t2) / 1e9);
          calls.putIfAbsent(cell, counts(used));
          System.out.printf(Locale.ROOT, "rep %d %s %s: write %.1f s, filter %.1f s, count"
              + " %.1f s, load %s%n", r + 1, pool, mode, (t1 - t0) / 1e9, (t2 - t1) / 1e9,
              (t3 - t2) / 1e9, loadAverage());
          // Written after every cell: a pure-scan write on a large pool can take half an
          // hour, and a run cut off keeps what it measured.
          report(Path.of(args.get("report")), pools, partitions, rows, r + 1, reps, scanReps,
              seconds, calls, loadBefore, loadAverage());
        }
      }
    }
    spark.stop();
  }

  /**
   * Runs the {@code --between} shell command, if any, before a cell (with REP, POOL and
   * MODE in its environment): a hook for what an experiment does between jobs, such as a
   * snapshot of the OSD's counters or a compaction.
   */
  private static void between(String command, int rep, String pool, String mode)
      throws IOException, InterruptedException {
    if (command.isBlank()) {
      return;
    }
    ProcessBuilder pb = new ProcessBuilder("bash", "-c", command).inheritIO();
    pb.environment().put("REP", Integer.toString(rep));
    pb.environment().put("POOL", pool);
    pb.environment().put("MODE", mode);
    int rc = pb.start().waitFor();
    if (rc != 0) {
      throw new IOException("--between command exited with " + rc + ": " + command);
    }
  }

  /**
   * io.blobfs.rados.RadosCallTimes#snapshot of the bundle on the class path: reached by
   * reflection, as the benchmarks name BlobFS only in configuration (runtime scope).
   */
  @SuppressWarnings("unchecked")
  private static Map<String, long[]> radosCalls() throws ReflectiveOperationException {
    return (Map<String, long[]>) Class.forName("io.blobfs.rados.RadosCallTimes")
        .getMethod("snapshot").invoke(null);
  }

  private static String radosDelta(Map<String, long[]> before, Map<String, long[]> after)
      throws ReflectiveOperationException {
    return (String) Class.forName("io.blobfs.rados.RadosCallTimes")
        .getMethod("delta", Map.class, Map.class).invoke(null, before, after);
  }

  private static void add(Map<String, List<Double>> m, String k, double v) {
    m.computeIfAbsent(k, x -> new ArrayList<>()).add(v);
  }

  /** The file system calls a write made, by name (those a committer's work is made of). */
  private static Map<String, Long> counts(StorageCounters used) {
    Map<String, Long> out = new LinkedHashMap<>();
    for (String name : new String[] {"op_create", "op_rename", "op_list_status",
        "op_get_file_status", "op_mkdirs", "op_delete"}) {
      out.put(name, used.get(name));
    }
    return out;
  }

  private static String store(String pool, String mode) {
    return ("sql-" + pool + "-" + mode).replaceAll("[^A-Za-z0-9-]", "-");
  }

  private static String env(String name) {
    String v = System.getenv(name);
    if (v == null || v.isBlank()) {
      throw new IllegalStateException(name + " is not set: run scripts/bench-rados-spark.sh");
    }
    return v;
  }

  static String loadAverage() {
    try {
      String[] f = Files.readString(Path.of("/proc/loadavg")).split(" ");
      return f[0] + " " + f[1] + " " + f[2];
    } catch (IOException e) {
      return "?";
    }
  }

  private static double median(List<Double> v) {
    List<Double> s = new ArrayList<>(v);
    Collections.sort(s);
    int n = s.size();
    return n % 2 == 1 ? s.get(n / 2) : (s.get(n / 2 - 1) + s.get(n / 2)) / 2;
  }

  private static void report(Path dir, List<String> pools, int partitions, int rows,
      int reached, int reps, int scanReps, Map<String, List<Double>> seconds,
      Map<String, Map<String, Long>> calls, String loadBefore, String loadAfter)
      throws IOException {
    StringBuilder md = new StringBuilder("# Spark SQL: a table of many partitions on RADOS, "
        + "name index against pure scan\n\n");
    md.append(String.format(Locale.ROOT, "Run %s by `scripts/bench-rados-spark.sh` on the "
        + "project's single-OSD cluster, Spark local[2]: `df.write.partitionBy(\"part\")"
        + ".parquet(...)` of %,d rows into %,d partitions (4 tasks, one file per partition "
        + "directory; Spark's default commit protocol, Hadoop's `FileOutputCommitter`, "
        + "algorithm 1), then `spark.read.parquet(...).filter(part = 7).count()` (Spark lists "
        + "every partition directory to prune) and `.count()` of every row, both checked. "
        + "Pools are those of the metadata benchmark ([report](rados-metadata.md)): the "
        + "indexed client writes among their indexed names, the pure-scan client in a "
        + "namespace of its own in the same pool. Median seconds (fastest-slowest, samples) "
        + "of %d repetitions, pure scan in the first %d; the cells interleaved, the modes' "
        + "order flipped each repetition; written after each cell (this one in repetition %d;"
        + " a cell not reached shows a dash). Load average (1/5/15 min) at the start %s, at "
        + "the last cell %s (2 cores, shared with other work).%n%n", LocalDate.now(), rows,
        partitions, reps, Math.min(reps, scanReps), reached, loadBefore, loadAfter));
    md.append("| pool | phase | index | pure scan | pure scan / index |\n|---|---|---:|---:|---:|\n");
    for (String pool : pools) {
      for (int p = 0; p < PHASES.length; p++) {
        List<Double> idx = seconds.get(pool + "/omap/" + p);
        List<Double> scan = seconds.get(pool + "/scan/" + p);
        md.append(String.format(Locale.ROOT, "| %s | %s | %s | %s | %s |%n", pool,
            PHASES[p], cell(idx), cell(scan), idx == null || scan == null ? "-"
                : String.format(Locale.ROOT, "%.1fx", median(scan) / median(idx))));
      }
    }
    md.append("\nFile system calls of one write (the first repetition's), the same in both "
        + "modes: what differs is what each costs. ");
    List<String> lines = new ArrayList<>();
    for (String pool : pools) {
      if (calls.containsKey(pool + "/omap")) {
        lines.add(pool + " " + calls.get(pool + "/omap"));
      }
    }
    md.append(String.join("; ", lines)).append(".\n");
    Files.createDirectories(dir);
    Files.writeString(dir.resolve("rados-spark-partitions.md"), md, StandardCharsets.UTF_8);
  }

  private static String cell(List<Double> v) {
    if (v == null) {
      return "-";
    }
    return String.format(Locale.ROOT, "%.1f (%.1f-%.1f, n=%d)", median(v), Collections.min(v),
        Collections.max(v), v.size());
  }
}
