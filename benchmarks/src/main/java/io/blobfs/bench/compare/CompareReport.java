package io.blobfs.bench.compare;

import io.blobfs.bench.run.Workload;
import io.blobfs.bench.trace.Call;
import io.blobfs.bench.run.WorkloadBench;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.function.ToDoubleFunction;
import org.knowm.xchart.BitmapEncoder;
import org.knowm.xchart.CategoryChart;
import org.knowm.xchart.CategoryChartBuilder;
import org.knowm.xchart.style.Styler;

/**
 * The report of {@link CompareBench}: per workload and store the median of the rounds and
 * their spread (min-max) of read and write bandwidth and completion time, ratios to HDFS
 * and to CephFS, the paper's claims against what was measured, and grouped-bar charts like the
 * paper's Figures 12-14 plus the relative improvement over each baseline (XChart, as
 * {@code CallReport}'s Figure 3).
 */
public final class CompareReport {
  /** The paper's figures (section 8.4) this report is held against. */
  static final double PAPER_READ_TYR = 1.28;
  static final double PAPER_READ_RADOS = 1.32;
  static final double PAPER_FASTER_THAN_HDFS = 0.22;
  static final double PAPER_FASTER_THAN_CEPHFS = 0.07;

  /** One measured run. */
  public record Run(int round, WorkloadBench.Result result) {}

  /** A measure of a run, and how to name and show it. */
  record Measure(String name, String unit, ToDoubleFunction<WorkloadBench.Result> value,
      boolean lowerIsBetter, String file, String figure) {}

  static final Measure READ = new Measure("read bandwidth", "MB/s",
      r -> perSecond(r.bytesRead(), r.calls().first(Call.READ_NANOS)), false, "read",
      "Figure 12");
  static final Measure WRITE = new Measure("write bandwidth", "MB/s",
      r -> perSecond(r.bytesWritten(), r.calls().first(Call.WRITE_NANOS)), false, "write",
      "Figure 13");
  static final Measure TIME = new Measure("completion time", "s",
      WorkloadBench.Result::seconds, true, "time", "Figure 14");
  static final List<Measure> MEASURES = List.of(READ, WRITE, TIME);

  /** MB (10^6 bytes) per second of time spent in the calls; NaN when nothing was timed. */
  static double perSecond(long bytes, long nanos) {
    return bytes < 0 || nanos <= 0 ? Double.NaN : bytes / 1e6 / (nanos / 1e9);
  }

  private final List<String> stores;
  private final List<Workload> workloads;
  private final List<Run> runs;

  public CompareReport(List<String> stores, List<Workload> workloads, List<Run> runs) {
    this.stores = List.copyOf(stores);
    this.workloads = List.copyOf(workloads);
    this.runs = List.copyOf(runs);
  }

  /** The values of {@code m} over the rounds of one workload on one store. */
  List<Double> values(Measure m, Workload w, String store) {
    List<Double> v = new ArrayList<>();
    for (Run r : runs) {
      if (r.result().workload() == w && r.result().store().equals(store)) {
        v.add(m.value().applyAsDouble(r.result()));
      }
    }
    return v;
  }

  double median(Measure m, Workload w, String store) {
    return median(values(m, w, store));
  }

  static double median(List<Double> v) {
    if (v.isEmpty()) {
      return Double.NaN;
    }
    List<Double> s = new ArrayList<>(v);
    s.sort(null);
    int n = s.size();
    return n % 2 == 1 ? s.get(n / 2) : (s.get(n / 2 - 1) + s.get(n / 2)) / 2;
  }

  /** The geometric mean over the workloads of store/other medians of {@code m}. */
  double geomeanRatio(Measure m, String store, String other) {
    double logSum = 0;
    int n = 0;
    for (Workload w : workloads) {
      double a = median(m, w, store);
      double b = median(m, w, other);
      if (a > 0 && b > 0) {
        logSum += Math.log(a / b);
        n++;
      }
    }
    return n == 0 ? Double.NaN : Math.exp(logSum / n);
  }

  /** The largest completion-time gain of {@code store} over {@code other}: 1 - t/t_other. */
  double bestGain(String store, String other) {
    double best = Double.NEGATIVE_INFINITY;
    for (Workload w : workloads) {
      best = Math.max(best, 1 - median(TIME, w, store) / median(TIME, w, other));
    }
    return best;
  }

  public String markdown(String setup, String name, String reproduce) {
    StringBuilder md = new StringBuilder();
    md.append("# BlobFS against HDFS and CephFS: five Spark workloads (paper section 8.4, "
        + "Figures 12-14)\n\n").append(setup).append("\n\n");
    md.append("Back ends (each started by `scripts/bench-compare.sh`):\n\n");
    for (String s : stores) {
      md.append("- **").append(s).append("**: ").append(describe(s)).append('\n');
    }
    md.append("\nEvery output was checked against file://'s and the generators' "
        + "(`Workload.check`); a wrong answer fails the run. ").append(checkSummary())
        .append("\n\nAs in the paper (section 8.1: \"the average data transferred per unit "
            + "of time for read and write requests\", measured in the adapter on the compute "
            + "nodes): read bandwidth = bytes the job read through the file system (Hadoop's "
            + "per-scheme statistics) over the time its callers spent inside read calls, "
            + "summed over threads (the tracer that wraps every store times each call); "
            + "write bandwidth likewise over the time inside write calls and the output "
            + "streams' close, which sends and publishes buffered data. Completion time = "
            + "spark-submit to exit, Spark's start included. Medians over the rounds, spread "
            + "min-max in brackets.\n\n");
    if (stores.contains("hdfs")) {
      paper(md);
    }
    for (Measure m : MEASURES) {
      table(md, m);
      md.append("\n![").append(m.name()).append("](").append(name).append('-')
          .append(m.file()).append(".png)\n\n");
    }
    if (!baselines().isEmpty() && !blobStores().isEmpty()) {
      md.append("## Relative improvement in completion time\n\n")
          .append("1 - t/t_baseline of the median completion times, per workload, as the "
              + "paper gives it beside Figure 14: above 0 the blob store finished first.\n\n")
          .append("![relative improvement](").append(name).append("-relative.png)\n\n");
    }
    md.append("## Every run\n\n| round | workload | store | s | MB read | MB written | "
        + "check |\n|---:|---|---|---:|---:|---:|---|\n");
    for (Run r : runs) {
      WorkloadBench.Result x = r.result();
      md.append(String.format(Locale.ROOT, "| %d | %s | %s | %.2f | %.1f | %.1f | %s |%n",
          r.round(), x.workload().id(), x.store(), x.seconds(), x.bytesRead() / 1e6,
          x.bytesWritten() / 1e6, x.check()));
    }
    md.append("\n## Reproduce\n\n```\n").append(reproduce).append("\n```\n");
    return md.toString();
  }

  private String checkSummary() {
    long ok = runs.stream().filter(r -> r.result().ok()).count();
    return ok == runs.size() ? "All " + runs.size() + " runs were right."
        : (runs.size() - ok) + " of " + runs.size() + " runs were WRONG (see the last table).";
  }

  private void paper(StringBuilder md) {
    md.append("## Against the paper\n\n");
    md.append("Ratios of medians; over all workloads a geometric mean; \"faster\" is "
        + "1 - t/t_other of the median completion times, best workload.\n\n");
    md.append("| claim (paper, 32 nodes) | paper | ");
    List<String> blob = stores.stream().filter(s -> s.equals("tyr") || s.equals("rados"))
        .toList();
    blob.forEach(s -> md.append(s).append(" | "));
    md.append("\n|---|---:|").append("---:|".repeat(blob.size())).append('\n');
    row(md, "read bandwidth over HDFS (geomean of workloads)", "Týr 1.28, RADOS 1.32", blob,
        s -> ratio(geomeanRatio(READ, s, "hdfs")));
    row(md, "write bandwidth over HDFS (geomean)", "higher", blob,
        s -> ratio(geomeanRatio(WRITE, s, "hdfs")));
    row(md, "completion time over HDFS (geomean; < 1 is faster)", "-", blob,
        s -> ratio(geomeanRatio(TIME, s, "hdfs")));
    row(md, "jobs faster than HDFS, best workload", "up to 22%", blob,
        s -> pct(bestGain(s, "hdfs")));
    if (stores.contains("cephfs")) {
      row(md, "completion time over CephFS (geomean)", "-", blob,
          s -> ratio(geomeanRatio(TIME, s, "cephfs")));
      row(md, "jobs faster than CephFS, best workload", "up to 7%", blob,
          s -> pct(bestGain(s, "cephfs")));
    }
    md.append('\n');
  }

  private static void row(StringBuilder md, String claim, String paper, List<String> stores,
      java.util.function.Function<String, String> cell) {
    md.append("| ").append(claim).append(" | ").append(paper).append(" | ");
    stores.forEach(s -> md.append(cell.apply(s)).append(" | "));
    md.append('\n');
  }

  private void table(StringBuilder md, Measure m) {
    md.append("## ").append(capital(m.name())).append(" (").append(m.unit()).append(", ")
        .append(m.figure()).append(")\n\n| workload |");
    stores.forEach(s -> md.append(' ').append(s).append(" |"));
    boolean hdfs = stores.contains("hdfs");
    boolean cephfs = stores.contains("cephfs");
    List<String> others = stores.stream().filter(s -> !s.equals("hdfs")).toList();
    if (hdfs) {
      others.forEach(s -> md.append(' ').append(s).append("/hdfs |"));
    }
    List<String> vsCeph = stores.stream().filter(s -> s.equals("tyr") || s.equals("rados"))
        .toList();
    if (cephfs) {
      vsCeph.forEach(s -> md.append(' ').append(s).append("/cephfs |"));
    }
    md.append("\n|---|").append("---:|".repeat(stores.size()
        + (hdfs ? others.size() : 0) + (cephfs ? vsCeph.size() : 0))).append('\n');
    for (Workload w : workloads) {
      md.append("| ").append(w.id()).append(" |");
      for (String s : stores) {
        List<Double> v = values(m, w, s);
        md.append(String.format(Locale.ROOT, " %s (%s-%s) |", num(median(v)),
            num(v.stream().mapToDouble(x -> x).min().orElse(Double.NaN)),
            num(v.stream().mapToDouble(x -> x).max().orElse(Double.NaN))));
      }
      if (hdfs) {
        others.forEach(s -> md.append(' ')
            .append(ratio(median(m, w, s) / median(m, w, "hdfs"))).append(" |"));
      }
      if (cephfs) {
        vsCeph.forEach(s -> md.append(' ')
            .append(ratio(median(m, w, s) / median(m, w, "cephfs"))).append(" |"));
      }
      md.append('\n');
    }
    if (hdfs) {
      md.append("| geomean |").append(" |".repeat(stores.size()));
      others.forEach(s -> md.append(' ').append(ratio(geomeanRatio(m, s, "hdfs"))).append(" |"));
      if (cephfs) {
        vsCeph.forEach(s -> md.append(' ').append(ratio(geomeanRatio(m, s, "cephfs")))
            .append(" |"));
      }
      md.append('\n');
    }
    md.append('\n').append(m.lowerIsBetter() ? "Ratios below 1 are faster.\n"
        : "Ratios above 1 are more bandwidth.\n");
  }

  /** Figures 12-14: a group of bars per workload, a bar per store, the median of the rounds. */
  public void charts(Path dir, String name) throws IOException {
    for (Measure m : MEASURES) {
      CategoryChart chart = new CategoryChartBuilder().width(900).height(480)
          .title(capital(m.name()) + " per workload (median of the rounds; " + m.figure()
              + ")")
          .xAxisTitle("workload").yAxisTitle(m.name() + ", " + m.unit()).build();
      chart.getStyler().setLegendPosition(Styler.LegendPosition.OutsideE);
      List<String> names = workloads.stream().map(Workload::id).toList();
      for (String s : stores) {
        List<Double> y = new ArrayList<>();
        for (Workload w : workloads) {
          double v = median(m, w, s);
          y.add(Double.isFinite(v) ? v : 0.0);
        }
        chart.addSeries(s, names, y);
      }
      Files.createDirectories(dir);
      BitmapEncoder.saveBitmap(chart, dir.resolve(name + "-" + m.file()).toString(),
          BitmapEncoder.BitmapFormat.PNG);
    }
    if (!baselines().isEmpty() && !blobStores().isEmpty()) {
      relativeChart(dir, name);
    }
  }

  /**
   * The relative improvement in completion time (1 - t/t_baseline of the medians) of each
   * blob store over each baseline, a group of bars per workload: the paper's "up to 22%
   * faster than HDFS and 7% faster than CephFS", workload by workload.
   */
  private void relativeChart(Path dir, String name) throws IOException {
    CategoryChart chart = new CategoryChartBuilder().width(900).height(480)
        .title("Completion time improvement over the baselines (1 - t/t_baseline, medians)")
        .xAxisTitle("workload").yAxisTitle("improvement, %").build();
    chart.getStyler().setLegendPosition(Styler.LegendPosition.OutsideE);
    List<String> names = workloads.stream().map(Workload::id).toList();
    for (String base : baselines()) {
      for (String s : blobStores()) {
        chart.addSeries(s + " over " + base, names, relativeImprovement(s, base));
      }
    }
    BitmapEncoder.saveBitmap(chart, dir.resolve(name + "-relative").toString(),
        BitmapEncoder.BitmapFormat.PNG);
  }

  /** Per workload, 100 (1 - t/t_base) of the median completion times; 0 where unmeasured. */
  List<Double> relativeImprovement(String store, String base) {
    List<Double> y = new ArrayList<>();
    for (Workload w : workloads) {
      double v = 100 * (1 - median(TIME, w, store) / median(TIME, w, base));
      y.add(Double.isFinite(v) ? v : 0.0);
    }
    return y;
  }

  private List<String> baselines() {
    return stores.stream().filter(s -> s.equals("hdfs") || s.equals("cephfs")).toList();
  }

  private List<String> blobStores() {
    return stores.stream().filter(s -> s.equals("tyr") || s.equals("rados")
        || s.equals("embedded")).toList();
  }

  static String describe(String store) {
    return switch (store) {
      case "hdfs" -> "HDFS, a NameNode and a DataNode as separate processes "
          + "(`scripts/hdfs/hdfs.sh`), replication 1, 64 MiB blocks";
      case "tyr" -> "blob:// on a Týr server process on this host (its log synced every "
          + "100 ms), 64 MiB stripes";
      case "rados" -> "blob:// on RADOS (`scripts/ceph/cluster.sh`: one bluestore OSD, "
          + "pool size 1), 64 MiB stripes";
      case "cephfs" -> "CephFS on the same Ceph cluster (`scripts/ceph/cephfs.sh`: one MDS, "
          + "pools of size 1, mounted with ceph-fuse), reached as file://";
      case "file" -> "file:// on the local disk: this machine's reference";
      case "embedded" -> "blob:// on a Týr node embedded in the job's JVM";
      case "memory" -> "blob:// on BlobFS's in-memory store";
      default -> store;
    };
  }

  private static String capital(String s) {
    return Character.toUpperCase(s.charAt(0)) + s.substring(1);
  }

  private static String num(double v) {
    return !Double.isFinite(v) ? "-" : v >= 100 ? String.format(Locale.ROOT, "%.0f", v)
        : String.format(Locale.ROOT, "%.2f", v);
  }

  static String ratio(double v) {
    return Double.isFinite(v) ? String.format(Locale.ROOT, "%.2f", v) : "-";
  }

  static String pct(double v) {
    return Double.isFinite(v) ? String.format(Locale.ROOT, "%+.0f%%", 100 * v) : "-";
  }
}
