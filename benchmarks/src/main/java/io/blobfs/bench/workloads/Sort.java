package io.blobfs.bench.workloads;

import org.apache.spark.api.java.JavaSparkContext;

/** SparkBench's Sort: sort all lines (String order) and write them out. */
public final class Sort {
  private Sort() {}

  /**
   * Reads the text under {@code input}, range-partitions and sorts the lines ascending into
   * {@code partitions} partitions, and writes them to {@code output}: reading the part files
   * in name order gives every line once, in order.
   */
  public static void run(JavaSparkContext sc, String input, String output, int partitions,
      Committer committer) {
    if (partitions < 1) {
      throw new IllegalArgumentException("partitions must be positive: " + partitions);
    }
    TextOutput.save(sc.textFile(input).sortBy(line -> line, true, partitions), output,
        committer, sc.hadoopConfiguration());
  }
}
