package io.blobfs.bench;

import io.blobfs.bench.workloads.Committer;
import io.blobfs.bench.workloads.Grep;
import io.blobfs.bench.workloads.Sort;
import io.blobfs.bench.workloads.TextDataGenerator;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import org.apache.hadoop.fs.FSDataInputStream;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.spark.SparkConf;
import org.apache.spark.api.java.JavaSparkContext;

/**
 * Runs the Spark workloads on BlobFS's embedded default store ({@code blob://main/...}: a
 * Týr node inside this JVM, persisting to a local directory; no external service) in
 * Spark local mode and prints, per workload, the seconds it took, the
 * storage calls it made, and whether its output checked out.
 *
 * <pre>
 *   mvn -pl benchmarks exec:exec@main-job -Dbench.args="--size 64m --committers classic,manifest"
 * </pre>
 *
 * Options (defaults in brackets): {@code --size} input bytes [32m], {@code --files} input
 * files [8], {@code --partitions} Sort's output partitions [4], {@code --seed} [1],
 * {@code --pattern} Grep's string [ceph], {@code --store} store name [main],
 * {@code --committers} comma-separated classic/manifest [classic,manifest],
 * {@code --master} [local[2]], {@code --markers} fs.blob.directory.markers none/keep [none],
 * {@code --backend} the store's type, tyr (embedded) or memory [tyr], {@code --data-dir}
 * where the embedded Týr node keeps its log [target/main-job-tyr].
 * Exits non-zero (throws) if any workload's output is wrong.
 */
public final class MainJob {
  /** The configuration value a user sets: BlobFS is named, never linked against. */
  public static final String BLOBFS_IMPL = "io.blobfs.hadoop.BlobFileSystem";

  private MainJob() {}

  static Map<String, String> defaults() {
    Map<String, String> d = new LinkedHashMap<>();
    d.put("size", "32m");
    d.put("files", "8");
    d.put("partitions", "4");
    d.put("seed", "1");
    d.put("pattern", "ceph");
    d.put("store", "main");
    d.put("committers", "classic,manifest");
    d.put("master", "local[2]");
    d.put("markers", "none");
    d.put("backend", "tyr");
    d.put("data-dir", "target/main-job-tyr");
    return d;
  }

  public static void main(String[] args) throws Exception {
    run(args, System.out);
  }

  /**
   * Runs everything, prints the report to {@code out}, and returns the measured rows.
   *
   * @throws IllegalStateException after printing, if a workload's output was wrong
   */
  public static ResultTable run(String[] args, PrintStream out) throws IOException {
    Args a = Args.parse(args, defaults());
    TextDataGenerator.Spec spec =
        new TextDataGenerator.Spec(a.getBytes("size"), a.getInt("files"), a.getLong("seed"));
    List<Committer> committers = new ArrayList<>();
    for (String c : a.get("committers").split(",")) {
      committers.add(Committer.parse(c));
    }
    String pattern = a.get("pattern");
    int partitions = a.getInt("partitions");

    SparkConf conf = new SparkConf()
        .setMaster(a.get("master"))
        .setAppName("blobfs-main-job")
        .set("spark.ui.enabled", "false")
        .set("spark.log.level", "WARN")
        .set("spark.driver.host", "127.0.0.1")
        .set("spark.driver.bindAddress", "127.0.0.1")
        .set("spark.hadoop.fs.blob.impl", BLOBFS_IMPL)
        .set("spark.hadoop.fs.blob.directory.markers", a.get("markers"));
    String store = "spark.hadoop.fs.blob.store." + a.get("store") + ".";
    switch (a.get("backend")) {
      case "tyr" -> conf.set(store + "type", "tyr").set(store + "embedded-dir",
          java.nio.file.Path.of(a.get("data-dir")).toAbsolutePath().toString());
      case "memory" -> conf.set(store + "type", "memory");
      default -> throw new IllegalArgumentException("--backend must be tyr or memory, not "
          + a.get("backend"));
    }

    ResultTable table = new ResultTable();
    try (JavaSparkContext sc = new JavaSparkContext(conf)) {
      Path base = new Path("blob://" + a.get("store") + "/bench-" + System.currentTimeMillis());
      FileSystem fs = base.getFileSystem(sc.hadoopConfiguration());
      Path input = new Path(base, "input");
      out.printf(Locale.ROOT, "BlobFS MainJob: Spark %s, master %s, file system %s, "
          + "store %s (%s), markers=%s%n", sc.version(), sc.master(), fs.getClass().getName(),
          a.get("store"), a.get("backend"), a.get("markers"));

      // Expected results, from the generator alone (no file system involved).
      long expectedLines = 0;
      long expectedMatches = 0;
      for (int i = 0; i < spec.files(); i++) {
        for (Iterator<String> it = TextDataGenerator.lines(spec, i); it.hasNext(); ) {
          expectedLines++;
          if (it.next().contains(pattern)) {
            expectedMatches++;
          }
        }
      }
      final long lines = expectedLines;
      final long matches = expectedMatches;

      TextDataGenerator.Summary[] summary = new TextDataGenerator.Summary[1];
      measure(table, "generate", fs,
          () -> summary[0] = TextDataGenerator.generate(fs, input, spec),
          () -> summary[0].lines() == lines ? ResultTable.CHECK_OK
              : "wrote " + summary[0].lines() + " lines, expected " + lines);
      out.printf(Locale.ROOT, "input %s: %d files, %d lines, %d bytes (seed %d)%n",
          input, summary[0].files(), summary[0].lines(), summary[0].bytes(), spec.seed());

      for (Committer c : committers) {
        Path grepOut = new Path(base, "grep-" + c.id());
        Path sortOut = new Path(base, "sort-" + c.id());
        measure(table, "grep/" + c.id(), fs,
            () -> Grep.run(sc, input.toString(), grepOut.toString(), pattern, c),
            () -> checkOutput(fs, grepOut, matches, false));
        measure(table, "sort/" + c.id(), fs,
            () -> Sort.run(sc, input.toString(), sortOut.toString(), partitions, c),
            () -> checkOutput(fs, sortOut, lines, true));
      }
      out.println();
      table.print(out);
      fs.delete(base, true);
    }
    List<String> failed = table.rows().stream().filter(r -> !r.ok())
        .map(r -> r.workload() + ": " + r.check()).toList();
    if (!failed.isEmpty()) {
      throw new IllegalStateException("wrong output: " + failed);
    }
    return table;
  }

  @FunctionalInterface
  interface Step {
    void run() throws IOException;
  }

  @FunctionalInterface
  interface Check {
    String run() throws IOException;
  }

  private static void measure(ResultTable table, String name, FileSystem fs, Step step,
      Check check) throws IOException {
    StorageCounters before = StorageCounters.of(fs);
    long t0 = System.nanoTime();
    step.run();
    double seconds = (System.nanoTime() - t0) / 1e9;
    StorageCounters calls = StorageCounters.of(fs).minus(before);
    // The check reads the output back: after the snapshot, so it is not counted.
    table.add(new ResultTable.Row(name, seconds, calls, check.run()));
  }

  /**
   * Counts the lines of a committed output (and, for Sort, that they are in order): the
   * check value of a result row ({@code ok}, or what is wrong). Also used by
   * {@code io.blobfs.bench.shim}.
   */
  public static String checkOutput(FileSystem fs, Path dir, long expected, boolean sorted)
      throws IOException {
    Path success = new Path(dir, "_SUCCESS");
    if (!fs.exists(success) || !fs.getFileStatus(success).isFile()) {
      return "no _SUCCESS";
    }
    FileStatus[] parts = fs.listStatus(dir, p -> p.getName().startsWith("part-"));
    Arrays.sort(parts, Comparator.comparing(s -> s.getPath().getName()));
    long count = 0;
    String previous = null;
    for (FileStatus part : parts) {
      try (FSDataInputStream in = fs.open(part.getPath());
          BufferedReader r = new BufferedReader(new InputStreamReader(in, StandardCharsets.UTF_8))) {
        for (String line = r.readLine(); line != null; line = r.readLine()) {
          if (sorted && previous != null && previous.compareTo(line) > 0) {
            return "out of order at line " + count;
          }
          previous = line;
          count++;
        }
      }
    }
    return count == expected ? ResultTable.CHECK_OK
        : count + " lines, expected " + expected;
  }
}
