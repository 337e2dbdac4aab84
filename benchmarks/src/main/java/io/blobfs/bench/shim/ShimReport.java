package io.blobfs.bench.shim;

import io.blobfs.bench.Args;
import io.blobfs.bench.StorageCounters;
import org.knowm.xchart.BitmapEncoder;
import org.knowm.xchart.CategoryChart;
import org.knowm.xchart.CategoryChartBuilder;
import org.knowm.xchart.style.Styler;
import java.io.IOException;
import java.nio.file.Files;
import java.time.Instant;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/** The Markdown of {@link ShimExperiment}: Figures 4 and 5 as tables and charts, with the setup. */
final class ShimReport {
  private ShimReport() {}

  static String markdown(Args a, String inputs, List<ShimWorkload> workloads, List<ShimExperiment.Run> runs,
      Map<String, Map<Integer, Map<String, List<Long>>>> dirOps, Map<Integer, Long> rootNames,
      Instant when, String loadAverage, String chartName) {
    StringBuilder md = new StringBuilder();
    md.append("# Flat namespace over HDFS against HDFS (paper section 7, Figures 4 and 5)\n\n");
    md.append(String.format(Locale.ROOT, "Run %s on %d cores (`nproc`), Spark `%s`, HDFS from "
        + "`scripts/hdfs/hdfs.sh` (one NameNode and one DataNode on loopback, replication 1). "
        + "Inputs, generated once on each side: %s. Every output is checked against the "
        + "generator's expectations and the workload's first output on either side. "
        + "Committer: %s. %s measured runs of each workload on each side after %s warm-up "
        + "run(s), the side that goes first alternating. The machine was shared: load "
        + "average %s.%n%n", when, Runtime.getRuntime()
        .availableProcessors(), a.get("master"), inputs, a.get("committer"), a.get("rounds"), a.get("warmup"),
        loadAverage));
    md.append("- **hdfs**: `hdfs://` with its hierarchical namespace.\n");
    md.append("- **flat**: `flat://` (blobfs-hdfs-shim) over the same HDFS: every path one "
        + "file in `" + ShimExperiment.FLAT_ROOT + "`, mkdir dropped, listing, rmdir and "
        + "directory rename as scans of that directory (Table 3).\n\n");

    md.append("## Completion time (Figure 4)\n\n");
    md.append("![Figure 4](" + chartName + "-time.png)\n\n");
    md.append("| workload | hdfs mean s (min-max) | flat mean s (min-max) | flat / hdfs |\n");
    md.append("|---|---:|---:|---:|\n");
    for (ShimWorkload w : workloads) {
      double[] h = stats(runs, w.name(), "hdfs");
      double[] f = stats(runs, w.name(), "flat");
      md.append(String.format(Locale.ROOT, "| %s | %.2f (%.2f-%.2f) | %.2f (%.2f-%.2f) | %.3f |%n",
          w.name(), h[0], h[1], h[2], f[0], f[1], f[2], f[0] / h[0]));
    }

    md.append("\n## Directory operations per job\n\n");
    md.append("Per run of each workload (the last round): the calls Spark made on the file "
        + "system it was given (`op_*`; on hdfs HDFS's client counts, on flat the shim's), "
        + "their `getFileStatus` and `delete` counts including calls on files; then every "
        + "call that reached HDFS's client, on flat those the shim made below.\n\n");
    md.append("| workload | side |");
    ShimExperiment.DIR_CALLS.forEach(c -> md.append(' ').append(c).append(" |"));
    md.append(" HDFS client calls, all kinds |\n").append("|---|---|");
    ShimExperiment.DIR_CALLS.forEach(c -> md.append("---:|"));
    md.append("---:|\n");
    for (ShimWorkload w : workloads) {
      for (String side : List.of("hdfs", "flat")) {
        StorageCounters c = last(runs, w.name(), side).calls();
        String prefix = side.equals("hdfs") ? ShimExperiment.DFS_PREFIX : "";
        md.append("| ").append(w.name()).append(" | ").append(side).append(" |");
        ShimExperiment.DIR_CALLS.forEach(
            n -> md.append(' ').append(show(c.get(prefix + n))).append(" |"));
        long dfsCalls = c.asMap().entrySet().stream()
            .filter(e -> e.getKey().startsWith(ShimExperiment.DFS_PREFIX + "op_"))
            .mapToLong(Map.Entry::getValue).sum();
        md.append(' ').append(dfsCalls).append(" |\n");
      }
    }
    md.append("\n| workload |");
    ShimExperiment.FLAT_COUNTERS.forEach(c -> md.append(' ').append(c).append(" |"));
    md.append(" mean in-job latency, µs (mkdir / opendir / rmdir / dir rename / dir probe) |\n");
    md.append("|---|");
    ShimExperiment.FLAT_COUNTERS.forEach(c -> md.append("---:|"));
    md.append("---|\n");
    for (ShimWorkload w : workloads) {
      StorageCounters c = last(runs, w.name(), "flat").calls();
      md.append("| ").append(w.name()).append(" |");
      ShimExperiment.FLAT_COUNTERS.forEach(n -> md.append(' ').append(show(c.get(n))).append(" |"));
      StringBuilder lat = new StringBuilder();
      for (String op : List.of("flat_mkdir_dropped", "flat_opendir", "flat_rmdir",
          "flat_dir_rename", "flat_dir_probe")) {
        long n = c.get(op);
        long nanos = c.get(op + "_nanos");
        lat.append(lat.length() == 0 ? "" : " / ")
            .append(n > 0 ? String.format(Locale.ROOT, "%.0f", nanos / 1e3 / n) : "-");
      }
      md.append(' ').append(lat).append(" |\n");
    }

    md.append("\n## Directory operation latency (Figure 5)\n\n");
    md.append("Each call timed alone, " + a.get("dirop-reps") + " times, on a directory "
        + "holding 4 files, after the workloads, with extra empty files added to grow the "
        + "flat root (on hdfs they sit in a directory of their own). On flat:// mkdirs looks "
        + "up each level of the path (no scan); listStatus, rename and delete of a directory "
        + "read the whole flat root; getFileStatus of a directory stops at the first name "
        + "under it, which here sorts before the extra names. Median (90th percentile), "
        + "µs.\n\n");
    md.append("![Figure 5](" + chartName + "-dirops.png)\n\n");
    md.append("| operation | names in the flat root | hdfs | flat | flat / hdfs (median) |\n");
    md.append("|---|---:|---:|---:|---:|\n");
    for (Map.Entry<Integer, Long> level : rootNames.entrySet()) {
      for (String op : DirectoryOpBench.OPS) {
        List<Long> h = dirOps.get("hdfs").get(level.getKey()).get(op);
        List<Long> f = dirOps.get("flat").get(level.getKey()).get(op);
        long hm = DirectoryOpBench.percentile(h, 0.5);
        long fm = DirectoryOpBench.percentile(f, 0.5);
        md.append(String.format(Locale.ROOT, "| %s | %,d | %s (%s) | %s (%s) | %.1f |%n", op,
            level.getValue(), micros(hm), micros(DirectoryOpBench.percentile(h, 0.9)),
            micros(fm), micros(DirectoryOpBench.percentile(f, 0.9)), fm / (double) hm));
      }
    }

    md.append("\n## Reproduce\n\n");
    StringBuilder options = new StringBuilder();
    for (String k : List.of("size", "seed", "rounds", "warmup", "committer", "master",
        "workloads", "dirop-reps", "root-names")) {
      options.append(" --").append(k).append(' ').append(a.get(k));
    }
    md.append("```\nscripts/bench-hdfs-shim.sh" + options + "\n```\n\n");
    md.append("The workloads are the paper's five (`io.blobfs.bench.run.Workload`, the same "
        + "applications and output checks as `scripts/bench-compare.sh`); `--workloads` picks "
        + "some.\n");
    return md.toString();
  }

  /**
   * Figure 4 ({@code NAME-time.png}: mean completion time per workload, a bar per side) and
   * Figure 5 ({@code NAME-dirops.png}: median latency per directory operation, a bar per
   * side and flat-root size, log scale: the scans span orders of magnitude).
   */
  static void charts(java.nio.file.Path dir, String name, List<ShimWorkload> workloads,
      List<ShimExperiment.Run> runs,
      Map<String, Map<Integer, Map<String, List<Long>>>> dirOps, Map<Integer, Long> rootNames)
      throws IOException {
    Files.createDirectories(dir);
    CategoryChart time = new CategoryChartBuilder().width(900).height(480)
        .title("Completion time per workload (mean of the rounds; Figure 4)")
        .xAxisTitle("workload").yAxisTitle("seconds").build();
    time.getStyler().setLegendPosition(Styler.LegendPosition.OutsideE);
    List<String> names = workloads.stream().map(ShimWorkload::name).toList();
    for (String side : List.of("hdfs", "flat")) {
      time.addSeries(side, names,
          workloads.stream().map(w -> stats(runs, w.name(), side)[0]).toList());
    }
    BitmapEncoder.saveBitmap(time, dir.resolve(name + "-time").toString(),
        BitmapEncoder.BitmapFormat.PNG);

    CategoryChart ops = new CategoryChartBuilder().width(1000).height(520)
        .title("Directory operation latency (median; Figure 5)")
        .xAxisTitle("operation").yAxisTitle("µs (log scale)").build();
    ops.getStyler().setLegendPosition(Styler.LegendPosition.OutsideE);
    ops.getStyler().setYAxisLogarithmic(true);
    // Bars start at the axis minimum, 0 by default, which a log axis refuses.
    ops.getStyler().setYAxisMin(1.0);
    for (String side : List.of("hdfs", "flat")) {
      for (Map.Entry<Integer, Long> level : rootNames.entrySet()) {
        Map<String, List<Long>> byOp = dirOps.get(side).get(level.getKey());
        ops.addSeries(String.format(Locale.ROOT, "%s, %,d names in flat root", side,
            level.getValue()), DirectoryOpBench.OPS, DirectoryOpBench.OPS.stream()
            .map(op -> Math.max(1.0, DirectoryOpBench.percentile(byOp.get(op), 0.5) / 1e3))
            .toList());
      }
    }
    BitmapEncoder.saveBitmap(ops, dir.resolve(name + "-dirops").toString(),
        BitmapEncoder.BitmapFormat.PNG);
  }

  private static double[] stats(List<ShimExperiment.Run> runs, String workload, String side) {
    double sum = 0;
    double min = Double.MAX_VALUE;
    double max = 0;
    int n = 0;
    for (ShimExperiment.Run r : runs) {
      if (r.workload().equals(workload) && r.target().equals(side)) {
        sum += r.seconds();
        min = Math.min(min, r.seconds());
        max = Math.max(max, r.seconds());
        n++;
      }
    }
    return new double[] {sum / n, min, max};
  }

  private static ShimExperiment.Run last(List<ShimExperiment.Run> runs, String workload,
      String side) {
    ShimExperiment.Run last = null;
    for (ShimExperiment.Run r : runs) {
      if (r.workload().equals(workload) && r.target().equals(side)) {
        last = r;
      }
    }
    return last;
  }

  private static String show(long v) {
    return v < 0 ? "-" : Long.toString(v);
  }

  private static String micros(long nanos) {
    return String.format(Locale.ROOT, "%,.0f", nanos / 1e3);
  }
}
