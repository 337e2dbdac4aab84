package io.blobfs.bench.workloads;

import org.apache.spark.SparkConf;
import org.apache.spark.api.java.JavaRDD;
import org.apache.spark.api.java.JavaSparkContext;

/**
 * SparkBench's Sort: sort all lines (String order) and write them out.
 *
 * <p>As an application: {@code spark-submit --class io.blobfs.bench.workloads.Sort JAR
 * INPUT OUTPUT [PARTITIONS]} ({@value #DEFAULT_PARTITIONS} output partitions by default).
 */
public final class Sort {
  public static final int DEFAULT_PARTITIONS = 4;

  private Sort() {}

  public static void main(String[] args) {
    Apps.requireArgs(args, 2, 3, "Sort INPUT OUTPUT [PARTITIONS]");
    int partitions = args.length > 2 ? Integer.parseInt(args[2]) : DEFAULT_PARTITIONS;
    try (JavaSparkContext sc = new JavaSparkContext(new SparkConf().setAppName("Sort"))) {
      TextOutput.save(sorted(sc, args[0], partitions), args[1], sc.hadoopConfiguration());
    }
  }

  /**
   * Reads the text under {@code input}, range-partitions and sorts the lines ascending into
   * {@code partitions} partitions, and writes them to {@code output}: reading the part files
   * in name order gives every line once, in order.
   */
  public static void run(JavaSparkContext sc, String input, String output, int partitions,
      Committer committer) {
    TextOutput.save(sorted(sc, input, partitions), output, committer, sc.hadoopConfiguration());
  }

  private static JavaRDD<String> sorted(JavaSparkContext sc, String input, int partitions) {
    if (partitions < 1) {
      throw new IllegalArgumentException("partitions must be positive: " + partitions);
    }
    return sc.textFile(input).sortBy(line -> line, true, partitions);
  }
}
