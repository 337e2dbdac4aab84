package io.blobfs.bench.workloads;

import org.apache.spark.SparkConf;
import org.apache.spark.api.java.JavaSparkContext;

/**
 * SparkBench's Grep: keep the lines that contain a fixed string, write them out.
 *
 * <p>As an application: {@code spark-submit --class io.blobfs.bench.workloads.Grep JAR
 * INPUT OUTPUT [PATTERN]} (pattern {@value #DEFAULT_PATTERN} by default).
 */
public final class Grep {
  public static final String DEFAULT_PATTERN = "ceph";

  private Grep() {}

  public static void main(String[] args) {
    Apps.requireArgs(args, 2, 3, "Grep INPUT OUTPUT [PATTERN]");
    String pattern = args.length > 2 ? args[2] : DEFAULT_PATTERN;
    try (JavaSparkContext sc = new JavaSparkContext(new SparkConf().setAppName("Grep"))) {
      TextOutput.save(filter(sc, args[0], pattern), args[1], sc.hadoopConfiguration());
    }
  }

  /**
   * Reads the text under {@code input}, keeps lines containing {@code pattern} (plain
   * substring, case-sensitive), and writes them to {@code output} in input order within
   * each partition.
   */
  public static void run(JavaSparkContext sc, String input, String output, String pattern,
      Committer committer) {
    TextOutput.save(filter(sc, input, pattern), output, committer, sc.hadoopConfiguration());
  }

  private static org.apache.spark.api.java.JavaRDD<String> filter(JavaSparkContext sc,
      String input, String pattern) {
    if (pattern.isEmpty()) {
      throw new IllegalArgumentException("grep pattern must not be empty");
    }
    return sc.textFile(input).filter(line -> line.contains(pattern));
  }
}
