package io.blobfs.bench.run;

import io.blobfs.bench.workloads.DecisionTree;
import io.blobfs.bench.workloads.FeatureDataGenerator;
import io.blobfs.bench.workloads.GraphDataGenerator;
import io.blobfs.bench.workloads.TextDataGenerator;
import io.blobfs.bench.workloads.TextDataGenerator.Spec;
import io.blobfs.bench.workloads.TextDataGenerator.Summary;
import io.blobfs.bench.workloads.Tokenizer;
import java.io.IOException;
import java.util.Iterator;
import java.util.Locale;
import java.util.function.IntFunction;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;

/**
 * The three inputs of the five workloads, each from its deterministic generator, with the
 * share of the run's size it gets (Decision Tree and Connected Components spend far more CPU
 * per byte than the text workloads, so they get less data for a comparable time).
 */
public enum Dataset {
  /** Text lines: Sort, Grep and Tokenizer. */
  TEXT(1, 4),
  /** Labelled feature rows: Decision Tree. */
  FEATURES(2, 4),
  /** Graph edges: Connected Components. */
  GRAPH(8, 4);

  private final int sizeDivisor;
  private final int files;

  Dataset(int sizeDivisor, int files) {
    this.sizeDivisor = sizeDivisor;
    this.files = files;
  }

  /** The directory name of this input under a run's base. */
  public String dirName() {
    return "input-" + name().toLowerCase(Locale.ROOT);
  }

  /** What to generate for a run of {@code size} bytes (text) and {@code seed}. */
  public Spec spec(long size, long seed) {
    return new Spec(Math.max(4096, size / sizeDivisor), files, seed);
  }

  public Summary generate(FileSystem fs, Path dir, Spec spec) throws IOException {
    return switch (this) {
      case TEXT -> TextDataGenerator.generate(fs, dir, spec);
      case FEATURES -> FeatureDataGenerator.generate(fs, dir, spec);
      case GRAPH -> new GraphDataGenerator(spec).generate(fs, dir);
    };
  }

  /**
   * What the workloads on this input must produce, computed from the generator alone (no
   * file system, no Spark): the oracle that keeps the file:// reference honest.
   */
  public Expected expected(Spec spec, String grepPattern) {
    Expected e = new Expected();
    switch (this) {
      case TEXT -> each(spec, i -> TextDataGenerator.lines(spec, i), line -> {
        e.lines++;
        if (line.contains(grepPattern)) {
          e.grepMatches++;
        }
        e.bigrams += Tokenizer.bigrams(line).size();
      });
      case FEATURES -> each(spec, i -> FeatureDataGenerator.lines(spec, i), row -> {
        e.lines++;
        long id = Long.parseLong(row.substring(0, row.indexOf(',')));
        if (id % DecisionTree.TEST_EVERY == 0) {
          e.testRows++;
        }
      });
      case GRAPH -> {
        GraphDataGenerator g = new GraphDataGenerator(spec);
        e.vertices = g.vertices();
        e.components = g.components();
      }
    }
    return e;
  }

  private static void each(Spec spec, IntFunction<Iterator<String>> files,
      java.util.function.Consumer<String> line) {
    for (int i = 0; i < spec.files(); i++) {
      files.apply(i).forEachRemaining(line);
    }
  }

  /** Expected counts; those that do not apply to a dataset stay 0. */
  public static final class Expected {
    public long lines;
    public long grepMatches;
    public long bigrams;
    public long testRows;
    public long vertices;
    public long components;
  }
}
