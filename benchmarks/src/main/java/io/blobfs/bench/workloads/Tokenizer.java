package io.blobfs.bench.workloads;

import java.util.ArrayList;
import java.util.List;
import org.apache.spark.SparkConf;
import org.apache.spark.api.java.JavaSparkContext;

/**
 * The paper's Tokenizer (section 4.2): each line is split into words and replaced by its
 * word bigrams (n-grams with n = 2), one per output line: the write-heavy workload, since
 * a line of n words becomes n - 1 lines of two words each.
 *
 * <p>As an application: {@code spark-submit --class io.blobfs.bench.workloads.Tokenizer JAR
 * INPUT OUTPUT}.
 */
public final class Tokenizer {
  private Tokenizer() {}

  public static void main(String[] args) {
    Apps.requireArgs(args, 2, 2, "Tokenizer INPUT OUTPUT");
    try (JavaSparkContext sc = new JavaSparkContext(new SparkConf().setAppName("Tokenizer"))) {
      TextOutput.save(sc.textFile(args[0]).flatMap(line -> bigrams(line).iterator()), args[1],
          sc.hadoopConfiguration());
    }
  }

  /** The bigrams of one line, in order: words are runs of non-blank characters. */
  public static List<String> bigrams(String line) {
    String[] words = line.trim().split("\\s+");
    List<String> out = new ArrayList<>(Math.max(0, words.length - 1));
    for (int i = 1; i < words.length; i++) {
      if (!words[i - 1].isEmpty()) {
        out.add(words[i - 1] + ' ' + words[i]);
      }
    }
    return out;
  }
}
