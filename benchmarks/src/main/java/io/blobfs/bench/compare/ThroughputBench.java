package io.blobfs.bench.compare;

import io.blobfs.bench.Args;
import io.blobfs.bench.MainJob;
import io.blobfs.bench.run.SparkSubmitRunner;
import io.blobfs.bench.run.StoreTarget;
import io.blobfs.bench.workloads.Throughput;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import org.apache.hadoop.fs.FileSystem;
import org.knowm.xchart.BitmapEncoder;
import org.knowm.xchart.CategoryChart;
import org.knowm.xchart.CategoryChartBuilder;
import org.knowm.xchart.style.Styler;

/**
 * Issue 11's Spark job beside TestDFSIO: {@link Throughput} (N files of S bytes written by
 * parallel tasks, then read back and compared) spark-submitted on each store, the stores
 * interleaved and their order turning each round; MB/s (10^6 bytes) of each phase's Spark job
 * with its spread, and ratios to HDFS. Stores are {@link MainJob}'s: {@code tyr} is blob:// on
 * a Týr server process and {@code embedded} blob:// on a Týr node in the job's JVM
 * (TestDFSIO's tyr-server and tyr-embedded).
 *
 * <p>Run through {@code scripts/bench-compare.sh --throughput}. Options: MainJob's, plus
 * {@code --files} [4], {@code --file-size} [256m], {@code --rounds} [3], {@code --report-dir}
 * [benchmarks/reports], {@code --name} [compare-throughput].
 */
public final class ThroughputBench {
  private ThroughputBench() {}

  record Run(String store, int round, long writeBytes, long writeNanos, long readBytes,
      long readNanos) {
    double writeMbps() {
      return writeBytes / 1e6 / (writeNanos / 1e9);
    }

    double readMbps() {
      return readBytes / 1e6 / (readNanos / 1e9);
    }
  }

  static Map<String, String> defaults() {
    Map<String, String> d = MainJob.defaults();
    d.put("stores", "hdfs,tyr,embedded,rados,file");
    d.put("files", "4");
    d.put("file-size", "256m");
    d.put("rounds", "3");
    d.put("report-dir", "benchmarks/reports");
    d.put("name", "compare-throughput");
    d.put("work-dir", "benchmarks/target/throughput-work");
    d.put("data-dir", "benchmarks/target/throughput-tyr");
    return d;
  }

  public static void main(String[] argv) throws Exception {
    Args a = Args.parse(argv, defaults());
    int rounds = a.getInt("rounds");
    int files = a.getInt("files");
    long size = a.getBytes("file-size");
    String run = "throughput-" + System.currentTimeMillis();
    List<StoreTarget> stores = MainJob.stores(a, run);
    Path work = Path.of(a.get("work-dir")).toAbsolutePath();
    Files.createDirectories(work);
    Path jar = SparkSubmitRunner.appJar(work);
    Map<String, String> spark = MainJob.sparkConf();
    spark.put("spark.hadoop.dfs.replication", "1");
    spark.put("spark.hadoop.dfs.blocksize", Long.toString(64L << 20));
    String loadStart = CompareBench.loadAverage();
    Instant started = Instant.now();
    List<Run> runs = new ArrayList<>();
    List<String> roundLoads = new ArrayList<>();
    for (int r = 0; r < rounds; r++) {
      List<StoreTarget> order = new ArrayList<>(stores);
      Collections.rotate(order, -r);
      for (StoreTarget s : order) {
        Run x = runOnce(s, r + 1, files, size, spark, a.get("master"), jar, work);
        runs.add(x);
        System.out.printf(Locale.ROOT, "round %d %-9s write %7.1f MB/s  read %7.1f MB/s%n",
            r + 1, s.name(), x.writeMbps(), x.readMbps());
      }
      roundLoads.add(CompareBench.loadAverage());
    }
    String md = markdown(stores, runs, files, size, a, started, loadStart, roundLoads);
    Path dir = Path.of(a.get("report-dir")).toAbsolutePath();
    Files.createDirectories(dir);
    Files.writeString(dir.resolve(a.get("name") + ".md"), md);
    chart(stores, runs, dir.resolve(a.get("name")));
    System.out.println(md);
  }

  private static Run runOnce(StoreTarget s, int round, int files, long size,
      Map<String, String> spark, String master, Path jar, Path work) throws Exception {
    org.apache.hadoop.fs.Path dir = new org.apache.hadoop.fs.Path(s.base(), "r" + round);
    Path result = work.resolve("result-" + s.name() + "-" + round);
    Files.deleteIfExists(result);
    Map<String, String> conf = new LinkedHashMap<>(spark);
    conf.putAll(s.sparkConf());
    conf.put("spark.app.name", "throughput@" + s.name());
    try {
      SparkSubmitRunner.submit(SparkSubmitRunner.arguments(master, conf,
          Throughput.class.getName(), jar, List.of(dir.toString(), Integer.toString(files),
              Long.toString(size), result.toString())));
    } finally {
      FileSystem fs = dir.getFileSystem(s.configuration());
      fs.delete(s.base(), true);
    }
    long[] w = null;
    long[] rd = null;
    for (String line : Files.readAllLines(result, StandardCharsets.UTF_8)) {
      String[] f = line.split(" ");
      long[] v = {Long.parseLong(f[1]), Long.parseLong(f[2])};
      if (f[0].equals("write")) {
        w = v;
      } else if (f[0].equals("read")) {
        rd = v;
      }
    }
    if (w == null || rd == null || w[0] != files * size || rd[0] != files * size) {
      throw new IllegalStateException("throughput job on " + s.name() + " left no full result "
          + "in " + result);
    }
    return new Run(s.name(), round, w[0], w[1], rd[0], rd[1]);
  }

  private static List<Double> of(List<Run> runs, String store, boolean write) {
    return runs.stream().filter(r -> r.store().equals(store))
        .map(r -> write ? r.writeMbps() : r.readMbps()).toList();
  }

  static String markdown(List<StoreTarget> stores, List<Run> runs, int files, long size,
      Args a, Instant started, String loadStart, List<String> roundLoads) {
    StringBuilder md = new StringBuilder();
    md.append("# Spark throughput job beside TestDFSIO (issue 11)\n\n");
    md.append(String.format(Locale.ROOT, "Run %s: %d files of %,d bytes, one Spark task per "
        + "file, application writes and reads of %,d bytes (TestDFSIO's default "
        + "`-bufferSize`), every byte read compared with what was written; master %s on %d "
        + "cores; %s rounds, the stores' order turning each round. MB/s = 10^6 bytes over "
        + "the phase's Spark job (submission to last task), the Spark context's start left "
        + "out. Load average (1, 5, 15 min) at the start: %s; after each round: %s.%n%n",
        started, files, size, Throughput.BUFFER, a.get("master"),
        Runtime.getRuntime().availableProcessors(), a.get("rounds"), loadStart,
        String.join("; ", roundLoads)));
    for (StoreTarget s : stores) {
      md.append("- **").append(s.name()).append("**: ")
          .append(CompareReport.describe(s.name())).append('\n');
    }
    boolean hdfs = stores.stream().anyMatch(s -> s.name().equals("hdfs"));
    md.append("\n| store | write MB/s median (min-max) | read MB/s median (min-max) |");
    if (hdfs) {
      md.append(" write / hdfs | read / hdfs |");
    }
    md.append("\n|---|---:|---:|").append(hdfs ? "---:|---:|" : "").append('\n');
    for (StoreTarget s : stores) {
      List<Double> w = of(runs, s.name(), true);
      List<Double> r = of(runs, s.name(), false);
      md.append(String.format(Locale.ROOT, "| %s | %s | %s |", s.name(), spread(w), spread(r)));
      if (hdfs) {
        md.append(' ').append(CompareReport.ratio(CompareReport.median(w)
            / CompareReport.median(of(runs, "hdfs", true)))).append(" | ")
            .append(CompareReport.ratio(CompareReport.median(r)
                / CompareReport.median(of(runs, "hdfs", false)))).append(" |");
      }
      md.append('\n');
    }
    md.append("\n![throughput](").append(a.get("name")).append(".png)\n\n## Every run\n\n"
        + "| round | store | write MB/s | read MB/s |\n|---:|---|---:|---:|\n");
    for (Run r : runs) {
      md.append(String.format(Locale.ROOT, "| %d | %s | %.1f | %.1f |%n", r.round(),
          r.store(), r.writeMbps(), r.readMbps()));
    }
    md.append("\n## Reproduce\n\n```\nscripts/bench-compare.sh --throughput --files ")
        .append(files).append(" --file-size ").append(a.get("file-size")).append(" --rounds ")
        .append(a.get("rounds")).append(" --stores ").append(a.get("stores")).append("\n```\n");
    return md.toString();
  }

  private static String spread(List<Double> v) {
    return String.format(Locale.ROOT, "%.0f (%.0f-%.0f)", CompareReport.median(v),
        v.stream().mapToDouble(x -> x).min().orElse(Double.NaN),
        v.stream().mapToDouble(x -> x).max().orElse(Double.NaN));
  }

  private static void chart(List<StoreTarget> stores, List<Run> runs, Path png)
      throws Exception {
    CategoryChart chart = new CategoryChartBuilder().width(860).height(460)
        .title("Spark throughput job: median MB/s per store")
        .xAxisTitle("phase").yAxisTitle("MB/s").build();
    chart.getStyler().setLegendPosition(Styler.LegendPosition.OutsideE);
    for (StoreTarget s : stores) {
      chart.addSeries(s.name(), List.of("write", "read"),
          List.of(CompareReport.median(of(runs, s.name(), true)),
              CompareReport.median(of(runs, s.name(), false))));
    }
    BitmapEncoder.saveBitmap(chart, png.toString(), BitmapEncoder.BitmapFormat.PNG);
  }
}
