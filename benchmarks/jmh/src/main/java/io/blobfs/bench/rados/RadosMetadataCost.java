package io.blobfs.bench.rados;

import io.blobfs.bench.Reports;
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
import org.knowm.xchart.CategoryChart;
import org.knowm.xchart.CategoryChartBuilder;

/**
 * What one metadata call costs through blob:// on RADOS against how many other objects the
 * pool holds, with the name index ({@code index=omap}) and in the paper's pure-scan mode
 * ({@code index=scan}) side by side: {@code getFileStatus} of a file, of a directory and of
 * a missing path, {@code create}+{@code close} of an empty file, {@code listStatus} of a
 * 100-file directory. One pool per size, filled beforehand with 16-byte objects in a
 * namespace of their own (topped up here with AIO writes to the exact count); every
 * repetition runs every pool and mode in turn, so the cells are measured interleaved.
 *
 * <p>Usage: {@code RadosMetadataCost REPORT_DIR REPS POOL=COUNT...}; needs the environment
 * of scripts/ceph/cluster.sh with the admin keyring (the pools are not client.blobfs's).
 */
public final class RadosMetadataCost {
  private RadosMetadataCost() {}

  private static final String[] OPS = {"getFileStatus file", "getFileStatus dir",
      "getFileStatus missing", "create+close", "listStatus 100",
      "create+close, create.performance"};
  private static final String[] MODES = {"omap", "scan"};

  public static void main(String[] args) throws Exception {
    Path reportDir = Path.of(args[0]);
    int reps = Integer.parseInt(args[1]);
    Map<String, Long> pools = new LinkedHashMap<>();
    for (int i = 2; i < args.length; i++) {
      String[] pc = args[i].split("=");
      pools.put(pc[0], Long.parseLong(pc[1]));
    }
    String run = "meta-" + ProcessHandle.current().pid();
    Map<String, Long> actual = new LinkedHashMap<>();
    for (Map.Entry<String, Long> p : pools.entrySet()) {
      actual.put(p.getKey(), fill(p.getKey(), p.getValue()));
    }
    // cell (pool, mode, op) -> micros per repetition
    Map<String, long[]> micros = new HashMap<>();
    Map<String, FileSystem> fss = new LinkedHashMap<>();
    String loadBefore = loadAverage();
    try {
      for (String pool : pools.keySet()) {
        for (String mode : MODES) {
          URI uri = URI.create("blob://" + store(pool, mode) + "/");
          // The set-up skips create's probes, which would scan a large pool 101 times in
          // pure-scan mode; the measured instance keeps the defaults.
          Configuration setupConf = conf(pool, mode, run);
          setupConf.setBoolean("fs.blob.create.performance", true);
          FileSystem setup = FileSystem.newInstance(uri, setupConf);
          org.apache.hadoop.fs.Path dir = new org.apache.hadoop.fs.Path("/dir");
          for (int i = 0; i < 100; i++) {
            setup.create(new org.apache.hadoop.fs.Path(dir, "f" + i)).close();
          }
          setup.create(new org.apache.hadoop.fs.Path("/file")).close();
          fss.put(pool + "/" + mode, FileSystem.newInstance(uri, conf(pool, mode, run)));
          // Also measured: what create.performance still saves.
          fss.put(pool + "/" + mode + "/perf", setup);
        }
      }
      for (int r = 0; r < reps; r++) {
        // Each repetition starts at another pool and flips the modes' order: a call right
        // after seconds of pure-scan work (the OSD still busy, the JVM collecting) is
        // slower, and no cell should always be the one that comes next.
        List<String> order = new ArrayList<>(pools.keySet());
        java.util.Collections.rotate(order, r);
        List<String> modes = new ArrayList<>(List.of(MODES));
        if (r % 2 == 1) {
          java.util.Collections.reverse(modes);
        }
        for (String pool : order) {
          for (String mode : modes) {
            FileSystem fs = fss.get(pool + "/" + mode);
            FileSystem perf = fss.get(pool + "/" + mode + "/perf");
            for (int op = 0; op < OPS.length; op++) {
              long t0 = System.nanoTime();
              run(op == 5 ? perf : fs, op, r);
              long us = (System.nanoTime() - t0) / 1000;
              micros.computeIfAbsent(pool + "/" + mode + "/" + op, k -> new long[reps])[r] = us;
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
    report(reportDir, pools.keySet(), actual, micros, reps, loadBefore, loadAfter);
  }

  private static void run(FileSystem fs, int op, int rep) throws IOException {
    switch (op) {
      case 0 -> check(fs.getFileStatus(new org.apache.hadoop.fs.Path("/file")).isFile());
      case 1 -> check(fs.getFileStatus(new org.apache.hadoop.fs.Path("/dir")).isDirectory());
      case 2 -> {
        try {
          fs.getFileStatus(new org.apache.hadoop.fs.Path("/missing"));
          throw new IllegalStateException("/missing exists");
        } catch (FileNotFoundException expected) {
          // the answer measured
        }
      }
      case 3 -> fs.create(new org.apache.hadoop.fs.Path("/new/n" + rep)).close();
      case 4 -> check(fs.listStatus(new org.apache.hadoop.fs.Path("/dir")).length == 100);
      case 5 -> fs.create(new org.apache.hadoop.fs.Path("/newp/n" + rep)).close();
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

  private static Configuration conf(String pool, String mode, String run) {
    Configuration c = new Configuration();
    c.set("fs.blob.impl", "io.blobfs.hadoop.BlobFileSystem");
    options(pool, run + "-" + mode, mode).forEach((k, v) ->
        c.set("fs.blob.store." + store(pool, mode) + "." + k, v));
    return c;
  }

  /** What the fill measures and what it does not (the report says it). */
  static final String NOT_INDEXED =
      "What grew is the pool, not the index: the other objects are data keys (`d/...`),"
      + " which are never indexed, so the index held only the benchmark's own few hundred"
      + " names at every size. These are 1M objects in the pool, not 1M indexed names; "
      + "what a shard holding hundreds of thousands of entries costs a scan is not "
      + "measured here (the OSD seeks its sorted omap to the prefix, so it should grow "
      + "with the log of the entries, not their count, but that is a claim, not a "
      + "figure).";

  /**
   * Tops the pool up to {@code target} objects with 16-byte AIO writes in a namespace of
   * their own (data keys, never indexed); returns the count it holds then.
   */
  private static long fill(String pool, long target) throws Exception {
    long have = objects(pool);
    if (have >= target) {
      return have;
    }
    Map<String, String> o = options(pool, "filler", "scan");
    o.remove("type");
    try (BlobStore s = BlobStores.provider("rados").open("filler",
        new StoreOptions("fs.blob.store.filler.", o))) {
      String batch = Long.toString(System.nanoTime(), 36);
      long need = target - have;
      ByteBuffer content = ByteBuffer.wrap("0123456789abcdef".getBytes(StandardCharsets.UTF_8));
      List<CompletableFuture<Void>> inFlight = new ArrayList<>();
      for (long i = 0; i < need; i++) {
        inFlight.add(s.write("d/" + batch + "/" + i, 0, content.duplicate()));
        if (inFlight.size() == 256) {
          for (CompletableFuture<Void> f : inFlight) {
            Futures.await(f);
          }
          inFlight.clear();
        }
      }
      for (CompletableFuture<Void> f : inFlight) {
        Futures.await(f);
      }
    }
    // The pool's statistics lag behind the writes by a few seconds.
    Thread.sleep(6000);
    long now = objects(pool);
    System.out.printf(Locale.ROOT, "pool %s: %d objects (target %d)%n", pool, now, target);
    return now;
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

  private static double median(long[] v) {
    long[] s = v.clone();
    Arrays.sort(s);
    return s.length % 2 == 1 ? s[s.length / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2.0;
  }

  private static void report(Path dir, Iterable<String> pools, Map<String, Long> actual,
      Map<String, long[]> micros, int reps, String loadBefore, String loadAfter)
      throws IOException {
    List<String> poolList = new ArrayList<>();
    pools.forEach(poolList::add);
    String first = poolList.get(0);
    String last = poolList.get(poolList.size() - 1);
    StringBuilder md = new StringBuilder("# Metadata cost against the pool's object count "
        + "(RADOS): name index against pure scan\n\n");
    md.append(String.format(Locale.ROOT, "Run %s on the project's single-OSD cluster (pools "
        + "of 32 PGs, size 1), through blob:// with default settings "
        + "(`fs.blob.create.performance=false`; the last row sets it `true`). Median of %d repetitions (in brackets the "
        + "fastest), milliseconds per call; every repetition runs every pool and mode in turn (interleaved), starting at another pool each time and flipping the modes' order. The other "
        + "objects are 16-byte data objects (`d/...` keys, which the index never holds) in a "
        + "RADOS namespace of their own. " + NOT_INDEXED + " Load average "
        + "(1/5/15 min) at the start of the measurements %s, at the end %s (2 cores, shared "
        + "with other work).%n%n", LocalDate.now(), reps, loadBefore, loadAfter));
    md.append("| call | mode |");
    for (String p : poolList) {
      md.append(String.format(Locale.ROOT, " %,d objects |", actual.get(p)));
    }
    md.append(" largest / smallest |\n|---|---|");
    md.append("---:|".repeat(poolList.size() + 1)).append('\n');
    CategoryChart chart = new CategoryChartBuilder().width(900).height(500)
        .title("Metadata call through blob:// on RADOS against pool size (median ms)")
        .xAxisTitle("objects in the pool").yAxisTitle("ms per call (log scale)").build();
    // Lines, not bars: xchart draws bars from zero, which a logarithmic axis cannot show.
    chart.getStyler().setDefaultSeriesRenderStyle(
        org.knowm.xchart.CategorySeries.CategorySeriesRenderStyle.Line);
    chart.getStyler().setYAxisLogarithmic(true);
    List<String> cats = poolList.stream().map(p -> String.format(Locale.ROOT, "%,d",
        actual.get(p))).toList();
    for (int op = 0; op < OPS.length; op++) {
      for (String mode : MODES) {
        md.append("| ").append(OPS[op]).append(" | ").append(mode.equals("omap")
            ? "index" : "pure scan").append(" |");
        List<Double> ms = new ArrayList<>();
        for (String p : poolList) {
          long[] cell = micros.get(p + "/" + mode + "/" + op);
          double v = median(cell) / 1000.0;
          ms.add(v);
          md.append(String.format(Locale.ROOT, " %.2f (%.2f) |", v,
              Arrays.stream(cell).min().getAsLong() / 1000.0));
        }
        double ratio = median(micros.get(last + "/" + mode + "/" + op))
            / median(micros.get(first + "/" + mode + "/" + op));
        md.append(String.format(Locale.ROOT, " %.2fx |%n", ratio));
        chart.addSeries((mode.equals("omap") ? "index: " : "scan: ") + OPS[op], cats, ms);
      }
    }
    md.append("\nTarget (issue 14): with the index, every call at the largest pool within "
        + "1.5x of its cost at the smallest, and `getFileStatus` a few milliseconds at any "
        + "size. `getFileStatus` of a file is one record read in both modes (the index is "
        + "not asked), so its spread is the control: what the machine's load and the OSD's "
        + "larger metadata at a larger pool cost any single call.\n");
    Reports.write(dir, "rados-metadata", md, chart);
  }
}
