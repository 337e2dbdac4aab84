package io.blobfs.bench.jmh;

import io.blobfs.store.StoreOptions;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.LocalDate;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import org.knowm.xchart.BitmapEncoder;
import org.knowm.xchart.CategoryChart;
import org.knowm.xchart.CategoryChartBuilder;
import org.openjdk.jmh.results.RunResult;
import org.openjdk.jmh.runner.Runner;
import org.openjdk.jmh.runner.RunnerException;
import org.openjdk.jmh.runner.options.Options;
import org.openjdk.jmh.runner.options.OptionsBuilder;

/**
 * Runs {@link SequentialThroughputBenchmark} and prints, side by side from the one run,
 * the throughput of blob:// and of the raw SPI and their ratio (target at least 0.9),
 * then writes a Markdown report and a PNG chart.
 *
 * <p>Usage: {@code ThroughputReport [size=1g] [report-dir]}
 */
public final class ThroughputReport {
  private ThroughputReport() {}

  public static void main(String[] args) throws RunnerException, IOException {
    String size = args.length > 0 ? args[0] : "1g";
    Path reportDir = Path.of(args.length > 1 ? args[1] : "benchmarks/reports");
    long bytes = StoreOptions.parseBytes("size", size);
    Options opts = new OptionsBuilder()
        .include(SequentialThroughputBenchmark.class.getSimpleName())
        .param("size", size)
        .build();
    Collection<RunResult> results = new Runner(opts).run();
    double mib = bytes / (double) (1 << 20);
    // ioSize -> benchmark -> {ms per op, error, MiB/s}
    Map<String, Map<String, double[]>> byIo = new LinkedHashMap<>();
    for (RunResult r : results) {
      String name = r.getParams().getBenchmark();
      name = name.substring(name.lastIndexOf('.') + 1);
      double ms = r.getPrimaryResult().getScore();
      byIo.computeIfAbsent(r.getParams().getParam("ioSize"), k -> new LinkedHashMap<>())
          .put(name, new double[] {ms, r.getPrimaryResult().getScoreError(), mib / (ms / 1000)});
    }

    StringBuilder md = new StringBuilder();
    md.append("# Sequential throughput: blob:// against the store SPI (in-memory store)\n\n");
    md.append(String.format(Locale.ROOT, "Run %s: %s per operation, 64 MiB stripes, JMH "
        + "single-shot, 5 warm-up + 20 measured runs, heap collected between runs, one JVM "
        + "(-Xms6g -Xmx6g, heap pre-touched, 32 MiB G1 regions so that the store's 1 MiB "
        + "chunks are ordinary objects). The SPI side writes and reads the same stripes "
        + "with the same application I/O size.%n%n", LocalDate.now(), size));
    md.append("| app I/O | benchmark | ms per op (± 99.9% CI) | MiB/s |\n|---|---|---:|---:|\n");
    for (var io : byIo.entrySet()) {
      for (var e : io.getValue().entrySet()) {
        md.append(String.format(Locale.ROOT, "| %s | %s | %.0f ± %.0f | %.0f |%n", io.getKey(),
            e.getKey(), e.getValue()[0], e.getValue()[1], e.getValue()[2]));
      }
    }
    md.append("\n| app I/O | ratio blob:// / SPI | value | target | verdict |\n"
        + "|---|---|---:|---:|---|\n");
    CategoryChart chart = new CategoryChartBuilder().width(760).height(440)
        .title("Sequential throughput, " + size + ", in-memory store")
        .xAxisTitle("direction, application I/O size").yAxisTitle("MiB/s").build();
    List<String> categories = new java.util.ArrayList<>();
    List<Double> viaFs = new java.util.ArrayList<>();
    List<Double> viaSpi = new java.util.ArrayList<>();
    for (var io : byIo.entrySet()) {
      for (String dir : List.of("write", "read")) {
        double fs = io.getValue().get(dir + "BlobFs")[2];
        double spi = io.getValue().get(dir + "Spi")[2];
        double ratio = fs / spi;
        md.append(String.format(Locale.ROOT, "| %s | %s | %.2f | 0.90 | %s |%n", io.getKey(),
            dir, ratio, ratio >= 0.9 ? "met" : "MISSED"));
        categories.add(dir + " " + io.getKey());
        viaFs.add(fs);
        viaSpi.add(spi);
      }
    }
    md.append("\nThe in-memory store serves calls in the caller's process (`InProcess`): "
        + "streams over it neither gather writes nor read ahead, so every application read "
        + "or write past the inline threshold is one store call straight from or into the "
        + "caller's array, the same calls the SPI side makes. On a networked store writes "
        + "are gathered into write buffers and reads fetched ahead, which is what saves round "
        + "trips there. The machine is shared: the spread of each figure is in the first "
        + "table.\n");
    chart.addSeries("blob:// (BlobFileSystem)", categories, viaFs);
    chart.addSeries("store SPI directly", categories, viaSpi);
    System.out.println();
    System.out.println(md);

    Files.createDirectories(reportDir);
    Files.writeString(reportDir.resolve("core-throughput.md"), md.toString());
    BitmapEncoder.saveBitmap(chart, reportDir.resolve("core-throughput").toString(),
        BitmapEncoder.BitmapFormat.PNG);
    System.out.println("report: " + reportDir.resolve("core-throughput.md"));
  }

}
