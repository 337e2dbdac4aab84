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
    Map<String, double[]> msPerOp = new LinkedHashMap<>();
    for (RunResult r : results) {
      String name = r.getParams().getBenchmark();
      name = name.substring(name.lastIndexOf('.') + 1);
      double score = r.getPrimaryResult().getScore();
      double error = r.getPrimaryResult().getScoreError();
      msPerOp.put(name, new double[] {score, error});
    }
    double mib = bytes / (double) (1 << 20);
    Map<String, Double> mibps = new LinkedHashMap<>();
    for (String name : List.of("writeBlobFs", "writeSpi", "readBlobFs", "readSpi")) {
      double[] ms = msPerOp.get(name);
      mibps.put(name, ms == null ? Double.NaN : mib / (ms[0] / 1000.0));
    }
    double writeRatio = mibps.get("writeBlobFs") / mibps.get("writeSpi");
    double readRatio = mibps.get("readBlobFs") / mibps.get("readSpi");

    StringBuilder md = new StringBuilder();
    md.append("# Sequential throughput: blob:// against the store SPI (in-memory store)\n\n");
    md.append(String.format(Locale.ROOT, "Run %s, %s per operation, 1 MiB application I/O, "
        + "64 MiB stripes, JMH single-shot, 3 warm-up + 10 measured runs, heap collected between runs, one JVM (-Xmx6g).%n%n",
        LocalDate.now(), size));
    md.append("| benchmark | ms per op (± 99.9% CI) | MiB/s |\n|---|---:|---:|\n");
    for (var e : msPerOp.entrySet()) {
      md.append(String.format(Locale.ROOT, "| %s | %.0f ± %.0f | %.0f |%n", e.getKey(),
          e.getValue()[0], e.getValue()[1], mibps.get(e.getKey())));
    }
    md.append(String.format(Locale.ROOT, "%n| ratio blob:// / SPI | value | target | verdict |%n"
        + "|---|---:|---:|---|%n| write | %.2f | 0.90 | %s |%n| read | %.2f | 0.90 | %s |%n",
        writeRatio, verdict(writeRatio), readRatio, verdict(readRatio)));
    System.out.println();
    System.out.println(md);

    Files.createDirectories(reportDir);
    Files.writeString(reportDir.resolve("core-throughput.md"), md.toString());
    CategoryChart chart = new CategoryChartBuilder().width(720).height(420)
        .title("Sequential throughput, " + size + ", in-memory store")
        .xAxisTitle("direction").yAxisTitle("MiB/s").build();
    chart.addSeries("blob:// (BlobFileSystem)", List.of("write", "read"),
        List.of(mibps.get("writeBlobFs"), mibps.get("readBlobFs")));
    chart.addSeries("store SPI directly", List.of("write", "read"),
        List.of(mibps.get("writeSpi"), mibps.get("readSpi")));
    BitmapEncoder.saveBitmap(chart, reportDir.resolve("core-throughput").toString(),
        BitmapEncoder.BitmapFormat.PNG);
    System.out.println("report: " + reportDir.resolve("core-throughput.md"));
  }

  private static String verdict(double ratio) {
    return ratio >= 0.9 ? "met" : "MISSED";
  }
}
