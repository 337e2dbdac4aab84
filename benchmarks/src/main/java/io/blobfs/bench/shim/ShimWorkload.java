package io.blobfs.bench.shim;

import io.blobfs.bench.run.OutputDigest;
import io.blobfs.bench.run.Workload;
import io.blobfs.bench.workloads.Committer;
import io.blobfs.bench.workloads.Grep;
import io.blobfs.bench.workloads.Sort;
import java.io.IOException;
import java.util.List;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.spark.api.java.JavaSparkContext;

/**
 * A workload of the HDFS-against-flat experiment: a Spark job from input to output, and a
 * check of what it wrote. {@link #ALL} is the list the experiment runs; the paper's other
 * three (Decision Tree, Connected Components, Tokenizer) join it as they are written.
 */
public interface ShimWorkload {
  String name();

  /** Runs the job on {@code input}, writing {@code output} (which does not exist yet). */
  void run(JavaSparkContext sc, Path input, Path output, Committer committer);

  /** {@code ok}, or what is wrong with the output. */
  String check(FileSystem fs, Path output, InputFacts input) throws IOException;

  /** What the generator says the input holds, computed without any file system. */
  record InputFacts(long lines, long grepMatches, String pattern, int sortPartitions) {}

  ShimWorkload GREP = new ShimWorkload() {
    @Override
    public String name() {
      return "grep";
    }

    @Override
    public void run(JavaSparkContext sc, Path input, Path output, Committer committer) {
      Grep.run(sc, input.toString(), output.toString(), ShimExperiment.PATTERN, committer);
    }

    @Override
    public String check(FileSystem fs, Path output, InputFacts input) throws IOException {
      return checkLines(fs, output, input.grepMatches(), false);
    }
  };

  ShimWorkload SORT = new ShimWorkload() {
    @Override
    public String name() {
      return "sort";
    }

    @Override
    public void run(JavaSparkContext sc, Path input, Path output, Committer committer) {
      Sort.run(sc, input.toString(), output.toString(), ShimExperiment.SORT_PARTITIONS,
          committer);
    }

    @Override
    public String check(FileSystem fs, Path output, InputFacts input) throws IOException {
      return checkLines(fs, output, input.lines(), true);
    }
  };

  List<ShimWorkload> ALL = List.of(GREP, SORT);

  /** Committed, {@code expected} lines, and ascending if {@code sorted}; else what is wrong. */
  private static String checkLines(FileSystem fs, Path output, long expected, boolean sorted)
      throws IOException {
    OutputDigest d = OutputDigest.of(fs, output);
    if (!d.committed()) {
      return "no _SUCCESS";
    }
    if (sorted && !d.ascending()) {
      return "out of order";
    }
    return d.lines() == expected ? Workload.OK : d.lines() + " lines, expected " + expected;
  }
}
