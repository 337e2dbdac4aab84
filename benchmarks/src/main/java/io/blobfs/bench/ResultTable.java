package io.blobfs.bench;

import java.io.PrintStream;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.function.ToLongFunction;

/**
 * The report MainJob prints: one row per workload with its wall-clock seconds and the
 * storage calls it made (paper section 6: create, open, read, write, getFileStatus, mkdirs,
 * listStatus, rename, delete, bytes), then every non-zero counter of each row. A counter the
 * file system does not report prints as {@code -}, never as a made-up 0.
 */
public final class ResultTable {

  /**
   * One measured workload: its name, wall-clock seconds, the storage calls it made, and the
   * outcome of checking its output ({@code ok}, or what was wrong).
   */
  public record Row(String workload, double seconds, StorageCounters calls, String check) {
    public boolean ok() {
      return CHECK_OK.equals(check);
    }
  }

  /** The check value of a row whose output was verified. */
  public static final String CHECK_OK = "ok";

  /** A column: header and how to read it from a row's counters. */
  public record Column(String header, ToLongFunction<StorageCounters> value) {}

  /** The call-count columns, in report order. */
  public static final List<Column> COLUMNS = List.of(
      new Column("create", c -> c.sum("op_create", "op_create_non_recursive", "op_createfile")),
      new Column("open", c -> c.sum("op_open", "op_openfile")),
      // Hadoop's FileSystem.Statistics read/write operation counts (what MapReduce reports
      // as "Number of read operations"); stream- and store-level counts follow the table.
      new Column("read ops", c -> c.first("fs.readOps")),
      new Column("write ops", c -> c.first("fs.writeOps")),
      new Column("getFileStatus", c -> c.first("op_get_file_status")),
      new Column("mkdirs", c -> c.first("op_mkdirs")),
      new Column("listStatus", c -> c.sum("op_list_status", "op_list_files",
          "op_list_located_status")),
      new Column("rename", c -> c.first("op_rename")),
      new Column("delete", c -> c.first("op_delete")),
      new Column("bytes read", c -> c.first("stream_read_bytes", "fs.bytesRead")),
      new Column("bytes written", c -> c.first("stream_write_bytes", "fs.bytesWritten")));

  private final List<Row> rows = new ArrayList<>();

  public void add(Row row) {
    rows.add(row);
  }

  public List<Row> rows() {
    return List.copyOf(rows);
  }

  /** Prints the table, then each row's non-zero counters. */
  public void print(PrintStream out) {
    List<String> headers = new ArrayList<>();
    headers.add("workload");
    headers.add("seconds");
    COLUMNS.forEach(c -> headers.add(c.header()));
    headers.add("check");
    List<List<String>> cells = new ArrayList<>();
    for (Row r : rows) {
      List<String> line = new ArrayList<>();
      line.add(r.workload());
      line.add(String.format(Locale.ROOT, "%.2f", r.seconds()));
      for (Column c : COLUMNS) {
        long v = c.value().applyAsLong(r.calls());
        line.add(v < 0 ? "-" : Long.toString(v));
      }
      line.add(r.check());
      cells.add(line);
    }
    int[] width = new int[headers.size()];
    for (int i = 0; i < width.length; i++) {
      width[i] = headers.get(i).length();
      for (List<String> line : cells) {
        width[i] = Math.max(width[i], line.get(i).length());
      }
    }
    out.println(format(headers, width));
    StringBuilder rule = new StringBuilder();
    for (int w : width) {
      rule.append(rule.length() == 0 ? "" : "-+-").append("-".repeat(w));
    }
    out.println(rule);
    for (List<String> line : cells) {
      out.println(format(line, width));
    }
    out.println();
    for (Row r : rows) {
      out.println("counters of " + r.workload() + ":");
      for (Map.Entry<String, Long> e : r.calls().nonZero().entrySet()) {
        out.println(String.format(Locale.ROOT, "  %-40s %d", e.getKey(), e.getValue()));
      }
    }
  }

  private static String format(List<String> cells, int[] width) {
    StringBuilder sb = new StringBuilder();
    for (int i = 0; i < cells.size(); i++) {
      if (i > 0) {
        sb.append(" | ");
      }
      String s = cells.get(i);
      // text left-aligned, numbers right-aligned
      boolean text = i == 0 || i == cells.size() - 1;
      sb.append(pad(s, width[i], !text));
    }
    return sb.toString();
  }

  private static String pad(String s, int w, boolean right) {
    String fill = " ".repeat(Math.max(0, w - s.length()));
    return right ? fill + s : s + fill;
  }
}
