package io.blobfs.bench.rados;

import io.blobfs.bench.Reports;
import io.blobfs.namespace.FileRecord;
import io.blobfs.store.BlobStore;
import io.blobfs.store.BlobStores;
import io.blobfs.store.Futures;
import io.blobfs.store.StoreOptions;
import java.io.FileNotFoundException;
import java.io.IOException;
import java.net.URI;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.LocalDate;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.LocatedFileStatus;
import org.apache.hadoop.fs.RemoteIterator;
import org.knowm.xchart.CategoryChart;
import org.knowm.xchart.CategoryChartBuilder;

/**
 * What one metadata call costs through blob:// on RADOS against how many <em>indexed
 * names</em> the pool holds, with the name index ({@code index=omap}) and in the paper's
 * pure-scan mode ({@code index=scan}) side by side: {@code getFileStatus} of a file, of a
 * directory and of a missing path, {@code create}+{@code close} of an empty file,
 * {@code listStatus} of a 100-file directory, {@code listFiles(recursive)} of a 100-file
 * subtree.
 *
 * <p>One pool per size. Its names are real file records ({@code n/fill/dNNNN/fNNNN}, empty
 * files, 1,000 per directory) in base namespace {@value #NAMES}: written with AIO by a
 * pure-scan store (no index yet), then indexed by the project's own command
 * ({@code RadosIndexTool build}, in a child JVM as scripts/rados-index.sh runs it), whose
 * time is the first-open build cost of an existing pool. The indexed client works in that
 * namespace, so its shards hold every name. A pure-scan client is refused on an indexed
 * namespace, so it works in a namespace of its own beside it: its scans still walk every
 * object of the pool (RADOS lists a namespace by walking the pool's placement groups),
 * which is what pure-scan mode costs at that pool size.
 *
 * <p>Every repetition runs every pool and mode in turn, so cells are measured interleaved;
 * pure scan on pools of {@link #FEW_SAMPLES_FROM} names or more runs only in the first
 * {@code SCAN_REPS} repetitions (seconds per call).
 *
 * <p>Usage: {@code RadosMetadataCost REPORT_DIR REPS SCAN_REPS POOL=NAMES...}; needs the
 * environment of scripts/ceph/cluster.sh with the admin keyring (the pools are not
 * client.blobfs's).
 */
public final class RadosMetadataCost {
  private RadosMetadataCost() {}

  private static final String[] OPS = {"getFileStatus file", "getFileStatus dir",
      "getFileStatus missing", "create+close", "listStatus 100",
      "listFiles recursive, 100 in 5 dirs", "create+close, create.performance"};
  private static final int PERF_OP = 6;
  private static final String[] MODES = {"omap", "scan"};
  /** The base namespace of the indexed names. */
  static final String NAMES = "names";
  static final int FILES_PER_DIR = 1000;
  static final long FEW_SAMPLES_FROM = 500_000;

  public static void main(String[] args) throws Exception {
    Path reportDir = Path.of(args[0]);
    int reps = Integer.parseInt(args[1]);
    int scanReps = Integer.parseInt(args[2]);
    Map<String, Long> pools = new LinkedHashMap<>();
    for (int i = 3; i < args.length; i++) {
      String[] pc = args[i].split("=");
      pools.put(pc[0], Long.parseLong(pc[1]));
    }
    String run = "b" + ProcessHandle.current().pid();
    Map<String, Fill> fills = new LinkedHashMap<>();
    for (Map.Entry<String, Long> p : pools.entrySet()) {
      fills.put(p.getKey(), fill(p.getKey(), p.getValue()));
    }
    Map<String, Long> objects = new LinkedHashMap<>();
    for (String pool : pools.keySet()) {
      objects.put(pool, objects(pool));
    }
    // cell (pool, mode, op) -> micros per repetition that ran it
    Map<String, List<Long>> micros = new HashMap<>();
    Map<String, FileSystem> fss = new LinkedHashMap<>();
    String loadBefore = loadAverage();
    try {
      for (String pool : pools.keySet()) {
        for (String mode : MODES) {
          URI uri = URI.create("blob://" + store(pool, mode) + "/");
          // The set-up skips create's probes, which would scan a large pool 200 times in
          // pure-scan mode; the measured instance keeps the defaults.
          Configuration setupConf = conf(pool, mode, run);
          setupConf.setBoolean("fs.blob.create.performance", true);
          FileSystem setup = FileSystem.newInstance(uri, setupConf);
          for (int i = 0; i < 100; i++) {
            setup.create(path(run, "dir/f" + i)).close();
            setup.create(path(run, "tree/s" + (i % 5) + "/f" + i)).close();
          }
          setup.create(path(run, "file")).close();
          fss.put(pool + "/" + mode, FileSystem.newInstance(uri, conf(pool, mode, run)));
          // Also measured: what create.performance still saves.
          fss.put(pool + "/" + mode + "/perf", setup);
        }
      }
      // One pass not measured, index only: connections, JIT, and the entries' first
      // reader (an entry the build made is checked against its object once).
      for (String pool : pools.keySet()) {
        for (int op = 0; op < OPS.length; op++) {
          run(fss.get(pool + "/omap" + (op == PERF_OP ? "/perf" : "")), op, run, -1);
        }
      }
      for (int r = 0; r < reps; r++) {
        // Each repetition starts at another pool and flips the modes' order: a call right
        // after seconds of pure-scan work (the OSD still busy, the JVM collecting) is
        // slower, and no cell should always be the one that comes next.
        List<String> order = new ArrayList<>(pools.keySet());
        Collections.rotate(order, r);
        List<String> modes = new ArrayList<>(List.of(MODES));
        if (r % 2 == 1) {
          Collections.reverse(modes);
        }
        for (String pool : order) {
          for (String mode : modes) {
            if (mode.equals("scan") && pools.get(pool) >= FEW_SAMPLES_FROM && r >= scanReps) {
              continue;
            }
            for (int op = 0; op < OPS.length; op++) {
              FileSystem fs = fss.get(pool + "/" + mode + (op == PERF_OP ? "/perf" : ""));
              long t0 = System.nanoTime();
              run(fs, op, run, r);
              long us = (System.nanoTime() - t0) / 1000;
              micros.computeIfAbsent(pool + "/" + mode + "/" + op, k -> new ArrayList<>())
                  .add(us);
            }
          }
        }
        System.out.printf(Locale.ROOT, "repetition %d of %d done, load %s%n", r + 1, reps,
            loadAverage());
      }
    } finally {
      for (FileSystem fs : fss.values()) {
        fs.close(); // the pools are the benchmark's own, its names stay
      }
    }
    String loadAfter = loadAverage();
    report(reportDir, pools, fills, objects, micros, reps, scanReps, loadBefore, loadAfter);
  }

  /** The benchmark's own names, under a directory of this run. */
  private static org.apache.hadoop.fs.Path path(String run, String rel) {
    return new org.apache.hadoop.fs.Path("/" + run + "/" + rel);
  }

  private static void run(FileSystem fs, int op, String run, int rep) throws IOException {
    String tag = rep < 0 ? "w" : Integer.toString(rep);
    switch (op) {
      case 0 -> check(fs.getFileStatus(path(run, "file")).isFile());
      case 1 -> check(fs.getFileStatus(path(run, "dir")).isDirectory());
      case 2 -> {
        try {
          fs.getFileStatus(path(run, "missing"));
          throw new IllegalStateException("missing exists");
        } catch (FileNotFoundException expected) {
          // the answer measured
        }
      }
      case 3 -> fs.create(path(run, "new/n" + tag)).close();
      case 4 -> check(fs.listStatus(path(run, "dir")).length == 100);
      case 5 -> {
        RemoteIterator<LocatedFileStatus> it = fs.listFiles(path(run, "tree"), true);
        int n = 0;
        while (it.hasNext()) {
          it.next();
          n++;
        }
        check(n == 100);
      }
      case PERF_OP -> fs.create(path(run, "newp/n" + tag)).close();
      default -> throw new IllegalArgumentException("op " + op);
    }
  }

  private static void check(boolean ok) {
    if (!ok) {
      throw new IllegalStateException("wrong answer");
    }
  }

  private static String store(String pool, String mode) {
    return (pool + "-" + mode).replaceAll("[^A-Za-z0-9-]", "-");
  }

  private static Map<String, String> options(String pool, String namespace, String mode) {
    Map<String, String> o = new HashMap<>();
    o.put("type", "rados");
    o.put("pool", pool);
    o.put("conf", ClusterEnv.required("CEPH_CONF"));
    o.put("client-id", "admin");
    o.put("keyring", ClusterEnv.required("CEPH_KEYRING"));
    o.put("namespace", namespace);
    o.put("index", mode);
    return o;
  }

  /** The indexed client works among the filled names; the pure-scan one beside them. */
  private static Configuration conf(String pool, String mode, String run) {
    Configuration c = new Configuration();
    c.set("fs.blob.impl", "io.blobfs.hadoop.BlobFileSystem");
    String namespace = mode.equals("omap") ? NAMES : "scan-" + run;
    options(pool, namespace, mode).forEach((k, v) ->
        c.set("fs.blob.store." + store(pool, mode) + "." + k, v));
    return c;
  }

  /** How a pool got its names: seconds to write the records and to build the index. */
  record Fill(long names, double writeSeconds, double buildSeconds, boolean now) {}

  /**
   * Gives the pool {@code names} file records under {@code /fill} in namespace
   * {@value #NAMES} with their index, unless that index exists already (a pool filled by an
   * earlier run: nothing measured then). Records are written with AIO by a pure-scan store,
   * then the project's build enters them.
   */
  private static Fill fill(String pool, long names) throws Exception {
    if (indexExists(pool)) {
      System.out.printf(Locale.ROOT, "pool %s: index exists, names kept from an earlier run%n",
          pool);
      String[] saved = rados(pool, "get", FILL_STATS, "-").trim().split(" ");
      return new Fill(names, Double.parseDouble(saved[0]), Double.parseDouble(saved[1]),
          false);
    }
    Map<String, String> o = options(pool, NAMES, "scan");
    o.remove("type");
    long t0 = System.nanoTime();
    try (BlobStore s = BlobStores.provider("rados").open("filler",
        new StoreOptions("fs.blob.store.filler.", o))) {
      List<CompletableFuture<Void>> inFlight = new ArrayList<>();
      long mtime = System.currentTimeMillis();
      for (long i = 0; i < names; i++) {
        String key = String.format(Locale.ROOT, "n/fill/d%04d/f%04d", i / FILES_PER_DIR,
            i % FILES_PER_DIR);
        ByteBuffer record = FileRecord.inline("fill" + Long.toString(i, 36), new byte[0],
            mtime, 4 << 20).encode();
        inFlight.add(s.write(key, 0, record));
        if (inFlight.size() == 256) {
          for (CompletableFuture<Void> f : inFlight) {
            Futures.await(f);
          }
          inFlight.clear();
        }
        if (i % 100_000 == 99_999) {
          System.out.printf(Locale.ROOT, "pool %s: %,d records written, load %s%n", pool,
              i + 1, loadAverage());
        }
      }
      for (CompletableFuture<Void> f : inFlight) {
        Futures.await(f);
      }
    }
    double write = (System.nanoTime() - t0) / 1e9;
    long t1 = System.nanoTime();
    Process p = new ProcessBuilder(Path.of(System.getProperty("java.home"), "bin", "java")
        .toString(), "-Xmx2g", "-cp", System.getProperty("java.class.path"),
        "io.blobfs.rados.RadosIndexTool", "build", "--pool", pool, "--namespace", NAMES,
        "--conf", ClusterEnv.required("CEPH_CONF"), "--client-id", "admin",
        "--keyring", ClusterEnv.required("CEPH_KEYRING")).inheritIO().start();
    if (p.waitFor() != 0) {
      throw new IOException("index build of pool " + pool + " failed");
    }
    double build = (System.nanoTime() - t1) / 1e9;
    System.out.printf(Locale.ROOT, "pool %s: %,d records in %.1f s, index built in %.1f s%n",
        pool, names, write, build);
    // Kept in the pool, so a later run on it reports how it was filled.
    Path stats = Files.createTempFile("fill-stats", ".txt");
    Files.writeString(stats, String.format(Locale.ROOT, "%.1f %.1f%n", write, build));
    rados(pool, "put", FILL_STATS, stats.toString());
    Files.delete(stats);
    return new Fill(names, write, build, true);
  }

  /** The object (namespace {@code bench}) holding a pool's fill timings. */
  static final String FILL_STATS = "fill-stats";

  /** Runs {@code rados -p POOL -N bench VERB OBJECT FILE}; returns its output. */
  private static String rados(String pool, String verb, String object, String file)
      throws IOException, InterruptedException {
    Process p = new ProcessBuilder("timeout", "60", "rados", "-c",
        ClusterEnv.required("CEPH_CONF"), "--keyring", ClusterEnv.required("CEPH_KEYRING"),
        "-p", pool, "-N", "bench", verb, object, file).start();
    String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    String err = new String(p.getErrorStream().readAllBytes(), StandardCharsets.UTF_8);
    if (p.waitFor() != 0) {
      throw new IOException("rados " + verb + " " + object + " failed: " + err);
    }
    return out;
  }

  /** Whether the pool's {@value #NAMES} namespace has an index description. */
  private static boolean indexExists(String pool) throws IOException, InterruptedException {
    Process p = new ProcessBuilder("timeout", "60", "rados", "-c",
        ClusterEnv.required("CEPH_CONF"), "--keyring", ClusterEnv.required("CEPH_KEYRING"),
        "-p", pool, "-N", NAMES + "/index", "stat", "meta").redirectErrorStream(true).start();
    String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    int rc = p.waitFor();
    if (rc != 0 && !out.contains("No such file")) {
      throw new IOException("rados stat failed: " + out);
    }
    return rc == 0;
  }

  /** The pool's object count from {@code ceph df}. */
  static long objects(String pool) throws IOException, InterruptedException {
    Process p = new ProcessBuilder("timeout", "60", "ceph", "-c",
        ClusterEnv.required("CEPH_CONF"), "--keyring", ClusterEnv.required("CEPH_KEYRING"),
        "df", "-f", "json").redirectErrorStream(true).start();
    String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    if (p.waitFor() != 0) {
      throw new IOException("ceph df failed: " + out);
    }
    Matcher m = Pattern.compile("\"name\":\"" + Pattern.quote(pool)
        + "\",\"id\":\\d+,\"stats\":\\{[^}]*?\"objects\":(\\d+)").matcher(out);
    if (!m.find()) {
      throw new IOException("pool " + pool + " not in ceph df: " + out);
    }
    return Long.parseLong(m.group(1));
  }

  static String loadAverage() {
    try {
      String[] f = Files.readString(Path.of("/proc/loadavg")).split(" ");
      return f[0] + " " + f[1] + " " + f[2];
    } catch (IOException e) {
      return "?";
    }
  }

  static double median(List<Long> v) {
    long[] s = v.stream().mapToLong(Long::longValue).sorted().toArray();
    return s.length % 2 == 1 ? s[s.length / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2.0;
  }

  private static void report(Path dir, Map<String, Long> pools, Map<String, Fill> fills,
      Map<String, Long> objects, Map<String, List<Long>> micros, int reps, int scanReps,
      String loadBefore, String loadAfter) throws IOException {
    List<String> poolList = new ArrayList<>(pools.keySet());
    String first = poolList.get(0);
    String last = poolList.get(poolList.size() - 1);
    StringBuilder md = new StringBuilder("# Metadata cost against the number of indexed "
        + "names (RADOS): name index against pure scan\n\n");
    md.append(String.format(Locale.ROOT, "Run %s on the project's single-OSD cluster (pools "
        + "of 32 PGs, size 1), through blob:// with default settings "
        + "(`fs.blob.create.performance=false`; the last row sets it `true`), by "
        + "`scripts/bench-rados-index.sh`. Each pool holds the given number of real names: "
        + "file records `n/fill/dNNNN/fNNNN` (empty files, %,d per directory) with their "
        + "entries in the pool's name index (8 shards, so about an eighth of the names per "
        + "shard object). The indexed client works among them; a pure-scan client is "
        + "refused on an indexed namespace, so it works in a namespace of its own in the "
        + "same pool, where each of its scans still walks every object of the pool. Median "
        + "(in brackets the fastest and the slowest), milliseconds per call, of %d "
        + "repetitions; pure scan on pools of %,d names or more only in the first %d (it "
        + "takes seconds per call). Every repetition runs every pool and mode in turn "
        + "(interleaved), starting at another pool each time and flipping the modes' order, "
        + "after one unmeasured pass of the indexed cells. Load average (1/5/15 min) at the "
        + "start of the measurements %s, at the end %s (2 cores, shared with other work)."
        + "%n%n", LocalDate.now(), FILES_PER_DIR, reps, FEW_SAMPLES_FROM, scanReps,
        loadBefore, loadAfter));
    md.append("| call | mode |");
    for (String p : poolList) {
      md.append(String.format(Locale.ROOT, " %,d names |", pools.get(p)));
    }
    md.append(" largest / smallest |\n|---|---|");
    md.append("---:|".repeat(poolList.size() + 1)).append('\n');
    CategoryChart chart = new CategoryChartBuilder().width(900).height(500)
        .title("Metadata call through blob:// on RADOS against indexed names (median ms)")
        .xAxisTitle("names in the pool (indexed)").yAxisTitle("ms per call (log scale)")
        .build();
    // Lines, not bars: xchart draws bars from zero, which a logarithmic axis cannot show.
    chart.getStyler().setDefaultSeriesRenderStyle(
        org.knowm.xchart.CategorySeries.CategorySeriesRenderStyle.Line);
    chart.getStyler().setYAxisLogarithmic(true);
    List<String> cats = poolList.stream().map(p -> String.format(Locale.ROOT, "%,d",
        pools.get(p))).toList();
    for (int op = 0; op < OPS.length; op++) {
      for (String mode : MODES) {
        md.append("| ").append(OPS[op]).append(" | ").append(mode.equals("omap")
            ? "index" : "pure scan").append(" |");
        List<Double> ms = new ArrayList<>();
        for (String p : poolList) {
          List<Long> cell = micros.get(p + "/" + mode + "/" + op);
          double v = median(cell) / 1000.0;
          ms.add(v);
          md.append(String.format(Locale.ROOT, " %.2f (%.2f-%.2f, n=%d) |", v,
              Collections.min(cell) / 1000.0, Collections.max(cell) / 1000.0, cell.size()));
        }
        double ratio = median(micros.get(last + "/" + mode + "/" + op))
            / median(micros.get(first + "/" + mode + "/" + op));
        md.append(String.format(Locale.ROOT, " %.2fx |%n", ratio));
        chart.addSeries((mode.equals("omap") ? "index: " : "scan: ") + OPS[op], cats, ms);
      }
    }
    md.append("\nObjects in each pool then (`ceph df`: the records, the index's shard "
        + "objects and description, the benchmark's own names of this and earlier runs): ");
    List<String> counts = new ArrayList<>();
    for (String p : poolList) {
      counts.add(String.format(Locale.ROOT, "%,d names: %,d objects", pools.get(p),
          objects.get(p)));
    }
    md.append(String.join("; ", counts)).append(".\n\n");
    md.append("**Filling and the first-open build cost.** The records were written with "
        + "AIO (256 in flight) by a pure-scan store, then the project's index build "
        + "(`RadosIndexTool build`, as `scripts/rados-index.sh build` runs it) entered them: "
        + "it lists the pool's names and sets their entries in batches of 500 per shard "
        + "write, as adding marks, which the first reader of each checks against its object "
        + "and commits. ");
    for (String p : poolList) {
      Fill f = fills.get(p);
      md.append(f.now() ? String.format(Locale.ROOT, "%,d names: records written in %.1f s"
          + " (%,.0f/s), build %.1f s (%,.0f names/s). ", f.names(), f.writeSeconds(),
          f.names() / f.writeSeconds(), f.buildSeconds(), f.names() / f.buildSeconds())
          : String.format(Locale.ROOT, "%,d names (filled by an earlier run on this "
              + "pool, its timings kept in the pool): records written in %.1f s (%,.0f/s), "
              + "build %.1f s (%,.0f names/s). ", f.names(), f.writeSeconds(),
              f.names() / f.writeSeconds(), f.buildSeconds(), f.names() / f.buildSeconds()));
    }
    md.append("\n\nTarget (issue 14): with the index, every call at the largest pool within "
        + "1.5x of its cost at the smallest, and `getFileStatus` a few milliseconds at any "
        + "size. `getFileStatus` of a file is one record read in both modes (the index is "
        + "not asked), so its spread is the control: what the machine's load and the OSD's "
        + "larger metadata at a larger pool cost any single call.\n");
    md.append("\nMetadata-heavy Spark work on the same pools (a Spark SQL table of many "
        + "partitions, index against pure scan): [rados-spark-partitions.md]"
        + "(rados-spark-partitions.md), by `scripts/bench-rados-spark.sh`.\n");
    Reports.write(dir, "rados-metadata", md, chart);
  }
}
