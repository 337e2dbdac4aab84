package io.blobfs.bench.workloads;

import org.apache.spark.api.java.JavaSparkContext;

/** SparkBench's Grep: keep the lines that contain a fixed string, write them out. */
public final class Grep {
  private Grep() {}

  /**
   * Reads the text under {@code input}, keeps lines containing {@code pattern} (plain
   * substring, case-sensitive), and writes them to {@code output} in input order within
   * each partition.
   */
  public static void run(JavaSparkContext sc, String input, String output, String pattern,
      Committer committer) {
    if (pattern.isEmpty()) {
      throw new IllegalArgumentException("grep pattern must not be empty");
    }
    TextOutput.save(sc.textFile(input).filter(line -> line.contains(pattern)), output,
        committer, sc.hadoopConfiguration());
  }
}
