package io.blobfs.bench.hpc;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import org.knowm.xchart.BitmapEncoder;
import org.knowm.xchart.CategoryChart;
import org.knowm.xchart.CategoryChartBuilder;
import org.knowm.xchart.style.Styler;

/**
 * The report of {@code scripts/bench-hpc.sh} (issue 16, the paper's Figures 6-9): reads the
 * raw figures (one line per measurement: round, back end, workload, MB/s; {@code #} lines
 * carry the load and the sizes), writes {@code NAME.md} with the medians, the ratios of
 * the FUSE mounts to CephFS and to the local disk and the issue's targets met or missed,
 * and {@code NAME-throughput.png} (medians) and {@code NAME-ratio.png} (mount / CephFS).
 *
 * <p>Only ratios measured side by side in one run mean anything on this shared machine,
 * so every ratio is of medians over the same interleaved rounds.
 */
public final class HpcReport {
  /** The mounts the targets are about; the baselines they are measured against. */
  static final List<String> MOUNTS = List.of("tyr", "rados", "tyr-base", "rados-base", "tyr-pt",
      "rados-pt", "tyr-pt-base", "rados-pt-base", "tyr-tk", "rados-tk");
  static final String CEPHFS = "cephfs";
  static final String LOCAL = "local";

  /** A target of the issue: the mount's median over the baseline's at least {@code min}. */
  record Target(String workload, String baseline, double min) {}

  static final List<Target> TARGETS = List.of(
      new Target("seq-read", CEPHFS, 1.5), new Target("seq-read", LOCAL, 0.7),
      new Target("shared-read", CEPHFS, 1.5), new Target("shared-read", LOCAL, 0.7),
      new Target("seq-write", CEPHFS, 1.0), new Target("shared-write", CEPHFS, 1.0),
      new Target("rand-write", CEPHFS, 3.0));

  private static final Map<String, String> LABELS = Map.ofEntries(
      Map.entry("tyr", "mount over a Týr server"), Map.entry("rados", "mount over RADOS"),
      // scripts/bench-hpc.sh --base: the same mounts from another build, side by side
      Map.entry("tyr-base", "mount over a Týr server, base build"),
      Map.entry("rados-base", "mount over RADOS, base build"),
      // scripts/bench-hpc.sh tyr-pt, rados-pt: the same build with FUSE passthrough on
      Map.entry("tyr-pt", "mount over a Týr server, passthrough"),
      Map.entry("rados-pt", "mount over RADOS, passthrough"),
      // both: the --base build with passthrough on, beside tyr-pt and rados-pt
      Map.entry("tyr-pt-base", "mount over a Týr server, passthrough, base build"),
      Map.entry("rados-pt-base", "mount over RADOS, passthrough, base build"),
      // scripts/bench-hpc.sh tyr-tk, rados-tk: the same build with shared stripes on
      Map.entry("tyr-tk", "mount over a Týr server, shared stripes"),
      Map.entry("rados-tk", "mount over RADOS, shared stripes"),
      Map.entry(CEPHFS, "CephFS (ceph-fuse)"), Map.entry(LOCAL, "local disk"));

  /** Raw figures: workload, then back end, then MB/s per round in order. */
  final Map<String, Map<String, List<Double>>> figures = new LinkedHashMap<>();
  final Map<String, String> notes = new LinkedHashMap<>();
  final Set<String> backends = new LinkedHashSet<>();

  static HpcReport parse(List<String> lines) {
    HpcReport r = new HpcReport();
    for (String line : lines) {
      if (line.isBlank()) {
        continue;
      }
      String[] f = line.split("\t");
      if (line.startsWith("#")) {
        r.notes.put(f[0].substring(1).trim(), f.length > 1 ? f[1] : "");
        continue;
      }
      if (f.length != 4) {
        throw new IllegalArgumentException("not round, back end, workload, MB/s: " + line);
      }
      r.backends.add(f[1]);
      r.figures.computeIfAbsent(f[2], k -> new LinkedHashMap<>())
          .computeIfAbsent(f[1], k -> new ArrayList<>()).add(Double.parseDouble(f[3]));
    }
    return r;
  }

  static double median(List<Double> xs) {
    List<Double> s = xs.stream().sorted().toList();
    int n = s.size();
    return n % 2 == 1 ? s.get(n / 2) : (s.get(n / 2 - 1) + s.get(n / 2)) / 2;
  }

  /** Median of {@code backend} over median of {@code baseline}, or NaN if either is missing. */
  double ratio(String workload, String backend, String baseline) {
    Map<String, List<Double>> w = figures.getOrDefault(workload, Map.of());
    if (!w.containsKey(backend) || !w.containsKey(baseline)) {
      return Double.NaN;
    }
    double base = median(w.get(baseline));
    return base == 0 ? Double.NaN : median(w.get(backend)) / base;
  }

  String markdown(String name) {
    StringBuilder md = new StringBuilder();
    md.append("# The FUSE mount against CephFS and the local disk (paper Figures 6-9)\n\n");
    md.append("`scripts/bench-hpc.sh`, ").append(notes.getOrDefault("sizes", "")).append(
        ". fio psync, every run with `--verify=crc32c` (a mismatch stops the run); writes end"
        + " with an fsync counted in the time (on the mount: the publication to the store);"
        + " the page cache dropped before every read. Back ends interleaved in each round."
        + " The machine is shared (2 cores): only ratios of medians of one run mean anything."
        + "\n\n");
    md.append("Load average before: ").append(notes.getOrDefault("load-before", "?"))
        .append("; after: ").append(notes.getOrDefault("load-after", "?")).append(".\n\n");
    md.append("| workload |");
    backends.forEach(b -> md.append(' ').append(LABELS.getOrDefault(b, b))
        .append(" (MB/s per round; median) |"));
    md.append("\n|---|");
    backends.forEach(b -> md.append("---|"));
    md.append('\n');
    figures.forEach((w, byBackend) -> {
      md.append("| ").append(w).append(" |");
      for (String b : backends) {
        List<Double> xs = byBackend.get(b);
        md.append(' ').append(xs == null ? "-" : fmtList(xs) + "; **" + fmt(median(xs)) + "**")
            .append(" |");
      }
      md.append('\n');
    });
    md.append("\n## Ratios of medians\n\n| workload | mount | / CephFS | / local disk |\n"
        + "|---|---|---:|---:|\n");
    for (String w : figures.keySet()) {
      for (String m : MOUNTS) {
        if (backends.contains(m)) {
          md.append(String.format(Locale.ROOT, "| %s | %s | %s | %s |%n", w, m,
              fmtRatio(ratio(w, m, CEPHFS)), fmtRatio(ratio(w, m, LOCAL))));
        }
      }
    }
    md.append("\n## The issue's targets\n\n| target | mount | measured | |\n|---|---|---:|---|\n");
    for (Target t : TARGETS) {
      for (String m : MOUNTS) {
        if (!backends.contains(m)) {
          continue;
        }
        double r = ratio(t.workload(), m, t.baseline());
        String verdict = Double.isNaN(r) ? "not measured" : r >= t.min() ? "met" : "**missed**";
        md.append(String.format(Locale.ROOT, "| %s ≥ %.1f× %s | %s | %s | %s |%n",
            t.workload(), t.min(), t.baseline(), m, fmtRatio(r), verdict));
      }
    }
    md.append("\nMPI-IO: ").append(notes.containsKey("mpi-not-run")
        ? "not run (" + notes.get("mpi-not-run") + ")." : "the `mpi-*` rows above (4 ranks).")
        .append("\n\nCharts: `").append(name).append("-throughput.png` (medians), `")
        .append(name).append("-ratio.png` (mount / CephFS).\n");
    return md.toString();
  }

  void charts(Path dir, String name) throws IOException {
    List<String> workloads = new ArrayList<>(figures.keySet());
    CategoryChart tput = new CategoryChartBuilder().width(1000).height(500)
        .title("Throughput, median of the rounds (paper Figures 6-9)")
        .xAxisTitle("workload").yAxisTitle("MB/s").build();
    tput.getStyler().setLegendPosition(Styler.LegendPosition.OutsideS);
    for (String b : backends) {
      tput.addSeries(LABELS.getOrDefault(b, b), workloads, workloads.stream()
          .map(w -> figures.get(w).containsKey(b) ? median(figures.get(w).get(b)) : 0.0)
          .toList());
    }
    BitmapEncoder.saveBitmap(tput, dir.resolve(name + "-throughput").toString(),
        BitmapEncoder.BitmapFormat.PNG);
    if (!backends.contains(CEPHFS)) {
      return;
    }
    CategoryChart ratio = new CategoryChartBuilder().width(1000).height(500)
        .title("Mount / CephFS (ratio of medians; targets: reads 1.5, writes 1.0, rand-write 3)")
        .xAxisTitle("workload").yAxisTitle("× CephFS").build();
    ratio.getStyler().setLegendPosition(Styler.LegendPosition.OutsideS);
    for (String m : MOUNTS) {
      if (backends.contains(m)) {
        ratio.addSeries(LABELS.get(m), workloads, workloads.stream().map(w -> {
          double r = ratio(w, m, CEPHFS);
          return Double.isNaN(r) ? 0.0 : r;
        }).toList());
      }
    }
    BitmapEncoder.saveBitmap(ratio, dir.resolve(name + "-ratio").toString(),
        BitmapEncoder.BitmapFormat.PNG);
  }

  private static String fmt(double x) {
    return String.format(Locale.ROOT, x >= 100 ? "%.0f" : "%.1f", x);
  }

  private static String fmtList(List<Double> xs) {
    return String.join(" ", xs.stream().map(HpcReport::fmt).toList());
  }

  private static String fmtRatio(double r) {
    return Double.isNaN(r) ? "-" : String.format(Locale.ROOT, "%.2f", r);
  }

  /** {@code HpcReport RAW.tsv OUT_DIR NAME}. */
  public static void main(String[] args) throws IOException {
    if (args.length != 3) {
      throw new IllegalArgumentException("usage: HpcReport RAW.tsv OUT_DIR NAME");
    }
    HpcReport r = parse(Files.readAllLines(Path.of(args[0])));
    Path dir = Files.createDirectories(Path.of(args[1]));
    Files.writeString(dir.resolve(args[2] + ".md"), r.markdown(args[2]));
    r.charts(dir, args[2]);
    System.out.print(r.markdown(args[2]));
  }
}
