package io.blobfs.bench.shim;

import java.io.IOException;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;

/**
 * The paper's Figure 5 as a micro benchmark: the latency of each directory operation a job
 * makes (mkdir, opendir = listStatus, stat of a directory, directory rename, rmdir =
 * recursive delete), timed one call at a time on a directory holding a few files. On the
 * flat namespace every one but mkdir is a scan of the whole flat root, so the figures
 * depend on how many names the root holds; the caller says how many.
 */
final class DirectoryOpBench {
  static final List<String> OPS = List.of("mkdirs", "getFileStatus(dir)", "listStatus",
      "rename(dir)", "delete(dir, true)");

  private DirectoryOpBench() {}

  /** Nanoseconds of each call, per operation in {@link #OPS} order. */
  static Map<String, List<Long>> run(FileSystem fs, Path base, int reps, int filesPerDir)
      throws IOException {
    Map<String, List<Long>> nanos = new LinkedHashMap<>();
    OPS.forEach(op -> nanos.put(op, new ArrayList<>()));
    for (int i = 0; i < reps; i++) {
      Path dir = new Path(base, "d-" + i);
      Path moved = new Path(base, "m-" + i);
      time(nanos, "mkdirs", () -> check(fs.mkdirs(dir), "mkdirs " + dir));
      for (int f = 0; f < filesPerDir; f++) {
        fs.create(new Path(dir, "f-" + f), false).close();
      }
      time(nanos, "getFileStatus(dir)",
          () -> check(fs.getFileStatus(dir).isDirectory(), "directory " + dir));
      time(nanos, "listStatus",
          () -> check(fs.listStatus(dir).length == filesPerDir, "listing of " + dir));
      time(nanos, "rename(dir)", () -> check(fs.rename(dir, moved), "rename " + dir));
      time(nanos, "delete(dir, true)", () -> check(fs.delete(moved, true), "delete " + moved));
    }
    return nanos;
  }

  static long percentile(List<Long> values, double p) {
    List<Long> sorted = new ArrayList<>(values);
    Collections.sort(sorted);
    int i = (int) Math.ceil(p * sorted.size()) - 1;
    return sorted.get(Math.max(0, Math.min(sorted.size() - 1, i)));
  }

  private interface Op {
    void run() throws IOException;
  }

  private static void time(Map<String, List<Long>> nanos, String op, Op body)
      throws IOException {
    long t0 = System.nanoTime();
    body.run();
    nanos.get(op).add(System.nanoTime() - t0);
  }

  private static void check(boolean ok, String what) {
    if (!ok) {
      throw new IllegalStateException("directory benchmark: " + what + " failed");
    }
  }
}
