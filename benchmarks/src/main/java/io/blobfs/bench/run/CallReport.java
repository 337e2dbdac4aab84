package io.blobfs.bench.run;

import io.blobfs.bench.StorageCounters;
import io.blobfs.bench.trace.Call;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.function.ToLongFunction;
import org.knowm.xchart.BitmapEncoder;
import org.knowm.xchart.CategoryChart;
import org.knowm.xchart.CategoryChartBuilder;
import org.knowm.xchart.style.Styler;

/**
 * The report of a {@link WorkloadBench} run: the storage calls of paper section 6 per
 * workload and store, Table 2's directory operations, times and bandwidths, as a text table,
 * a Markdown table per workload, and a stacked chart like the paper's Figure 3.
 *
 * <p>Where each count comes from: on blob:// BlobFS's own statistics
 * ({@code BlobFileSystem.getStorageStatistics()}: {@code op_*}, {@code stream_read_operations},
 * {@code store_scan}); BlobFS counts no write calls, so {@code write} comes from the tracer
 * ({@link io.blobfs.bench.trace.TracingFileSystem}) there. Elsewhere every call count comes
 * from the tracer, because file:// reports no per-call statistics (its StorageStatistics are
 * Hadoop's per-scheme bytes and read/write operation totals only) and HDFS's
 * ({@code DFSOpsCountStatistics}) have different names and no read/write calls. Bytes are
 * Hadoop's per-scheme {@code FileSystem.Statistics}, the same on every file system. Table 2's
 * breakdown always comes from the tracer, which sees each call's path. A value nobody reports
 * prints as {@code -}.
 */
public final class CallReport {
  private CallReport() {}

  /** A column of counts: its header and how to read it. */
  public record Column(String header, ToLongFunction<StorageCounters> value) {}

  /** Paper section 6's storage calls, in Figure 3's order. */
  public static final List<Column> CALLS = List.of(
      new Column("create", c -> firstOf(c.sum("op_create", "op_create_non_recursive"),
          c.first(Call.CREATE.counter()))),
      new Column("open", c -> firstOf(c.sum("op_open", "op_openfile"),
          c.first(Call.OPEN.counter()))),
      new Column("read", c -> c.first("stream_read_operations", Call.READ.counter())),
      new Column("write", c -> c.first(Call.WRITE.counter())),
      new Column("getFileStatus", c -> c.first("op_get_file_status",
          Call.GET_FILE_STATUS.counter())),
      new Column("mkdirs", c -> c.first("op_mkdirs", Call.MKDIRS.counter())),
      new Column("list", c -> firstOf(c.sum("op_list_status", "op_list_files",
          "op_list_located_status"), c.first(Call.LIST.counter()))),
      new Column("scans", c -> c.first("store_scan")),
      new Column("rename", c -> c.first("op_rename", Call.RENAME.counter())),
      new Column("delete", c -> c.first("op_delete", Call.DELETE.counter())));

  /** Table 2: directory operations by kind. */
  public static final List<Column> DIRECTORY_OPS = List.of(
      new Column("mkdir", c -> c.first(Call.DIR_MKDIR.counter())),
      new Column("rmdir", c -> c.first(Call.DIR_RMDIR.counter())),
      new Column("opendir input", c -> c.first(Call.DIR_OPEN_INPUT.counter())),
      new Column("opendir other", c -> c.first(Call.DIR_OPEN_OTHER.counter())));

  private static long firstOf(long a, long b) {
    return a >= 0 ? a : b;
  }

  /** The one table of the main job: a row per store and workload. */
  public static void printTable(List<WorkloadBench.Result> results, PrintStream out) {
    List<String> headers = new ArrayList<>(List.of("store", "workload", "s", "MB read",
        "MB written", "read MB/s", "write MB/s"));
    CALLS.forEach(c -> headers.add(c.header()));
    DIRECTORY_OPS.forEach(c -> headers.add(c.header()));
    headers.add("check");
    List<List<String>> rows = new ArrayList<>();
    for (WorkloadBench.Result r : results) {
      List<String> row = new ArrayList<>(List.of(r.store(), r.workload().id(),
          fmt(r.seconds()), mb(r.bytesRead()), mb(r.bytesWritten()),
          rate(r.bytesRead(), r.seconds()), rate(r.bytesWritten(), r.seconds())));
      CALLS.forEach(c -> row.add(count(c, r.calls())));
      DIRECTORY_OPS.forEach(c -> row.add(count(c, r.calls())));
      row.add(r.check());
      rows.add(row);
    }
    printAligned(headers, rows, out);
  }

  /** One Markdown table per workload (a row per store): calls, then Table 2's breakdown. */
  public static String markdown(List<WorkloadBench.Result> results) {
    StringBuilder sb = new StringBuilder();
    Map<Workload, List<WorkloadBench.Result>> byWorkload = new LinkedHashMap<>();
    results.forEach(r -> byWorkload.computeIfAbsent(r.workload(), k -> new ArrayList<>()).add(r));
    byWorkload.forEach((w, rs) -> {
      sb.append("### ").append(w.id()).append("\n\n| store | s | MB read | MB written |");
      CALLS.forEach(c -> sb.append(' ').append(c.header()).append(" |"));
      DIRECTORY_OPS.forEach(c -> sb.append(' ').append(c.header()).append(" |"));
      sb.append(" check |\n|---|---|---|---|");
      sb.append("---|".repeat(CALLS.size() + DIRECTORY_OPS.size() + 1)).append('\n');
      for (WorkloadBench.Result r : rs) {
        sb.append("| ").append(r.store()).append(" | ").append(fmt(r.seconds())).append(" | ")
            .append(mb(r.bytesRead())).append(" | ").append(mb(r.bytesWritten())).append(" |");
        CALLS.forEach(c -> sb.append(' ').append(count(c, r.calls())).append(" |"));
        DIRECTORY_OPS.forEach(c -> sb.append(' ').append(count(c, r.calls())).append(" |"));
        sb.append(' ').append(r.check()).append(" |\n");
      }
      sb.append('\n');
    });
    return sb.toString();
  }

  /**
   * Figure 3: for one store, a bar per workload, stacked by call type, each call type's share
   * of the workload's calls in percent (scans are store calls behind listings, not Hadoop
   * calls, and are left out).
   */
  public static void chart(List<WorkloadBench.Result> results, String store, Path png)
      throws IOException {
    List<WorkloadBench.Result> rs = results.stream().filter(r -> r.store().equals(store))
        .toList();
    CategoryChart chart = new CategoryChartBuilder().width(900).height(520)
        .title("Storage calls per workload on " + store + " (share of calls, %)")
        .xAxisTitle("workload").yAxisTitle("% of storage calls").build();
    chart.getStyler().setStacked(true);
    chart.getStyler().setLegendPosition(Styler.LegendPosition.OutsideE);
    chart.getStyler().setYAxisMax(100.0);
    List<String> names = rs.stream().map(r -> r.workload().id()).toList();
    for (Column c : CALLS) {
      if (c.header().equals("scans")) {
        continue;
      }
      List<Double> shares = new ArrayList<>();
      for (WorkloadBench.Result r : rs) {
        long total = 0;
        for (Column k : CALLS) {
          if (!k.header().equals("scans")) {
            total += Math.max(0, k.value().applyAsLong(r.calls()));
          }
        }
        long v = Math.max(0, c.value().applyAsLong(r.calls()));
        shares.add(total == 0 ? 0.0 : 100.0 * v / total);
      }
      chart.addSeries(c.header(), names, shares);
    }
    java.nio.file.Files.createDirectories(png.toAbsolutePath().getParent());
    BitmapEncoder.saveBitmap(chart, png.toString(), BitmapEncoder.BitmapFormat.PNG);
  }

  private static String count(Column c, StorageCounters calls) {
    long v = c.value().applyAsLong(calls);
    return v < 0 ? "-" : Long.toString(v);
  }

  private static String fmt(double seconds) {
    return String.format(Locale.ROOT, "%.2f", seconds);
  }

  private static String mb(long bytes) {
    return bytes < 0 ? "-" : String.format(Locale.ROOT, "%.1f", bytes / 1e6);
  }

  private static String rate(long bytes, double seconds) {
    return bytes < 0 || seconds <= 0 ? "-"
        : String.format(Locale.ROOT, "%.1f", bytes / 1e6 / seconds);
  }

  private static void printAligned(List<String> headers, List<List<String>> rows,
      PrintStream out) {
    int[] w = new int[headers.size()];
    for (int i = 0; i < w.length; i++) {
      w[i] = headers.get(i).length();
      for (List<String> r : rows) {
        w[i] = Math.max(w[i], r.get(i).length());
      }
    }
    out.println(line(headers, w));
    StringBuilder rule = new StringBuilder();
    for (int x : w) {
      rule.append(rule.length() == 0 ? "" : "-+-").append("-".repeat(x));
    }
    out.println(rule);
    rows.forEach(r -> out.println(line(r, w)));
  }

  private static String line(List<String> cells, int[] w) {
    StringBuilder sb = new StringBuilder();
    for (int i = 0; i < cells.size(); i++) {
      String s = cells.get(i);
      boolean text = i < 2 || i == cells.size() - 1;
      String fill = " ".repeat(Math.max(0, w[i] - s.length()));
      sb.append(i > 0 ? " | " : "").append(text ? s + fill : fill + s);
    }
    return sb.toString();
  }
}
