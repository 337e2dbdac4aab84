package io.blobfs.bench.run;

import io.blobfs.bench.workloads.ConnectedComponents;
import io.blobfs.bench.workloads.DecisionTree;
import io.blobfs.bench.workloads.FeatureDataGenerator;
import io.blobfs.bench.workloads.Grep;
import io.blobfs.bench.workloads.Sort;
import io.blobfs.bench.workloads.Tokenizer;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import org.apache.hadoop.fs.FSDataInputStream;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;

/**
 * The five workloads of the paper (section 4.2): the application each runs, its input, and
 * how its output is checked against the same workload's output on file:// (the reference)
 * and against what the input's generator says it must be:
 * <ul>
 *   <li>Sort: exactly the reference's lines in the same order (ordered checksum), ascending,
 *       as many as the input has;
 *   <li>Grep and Tokenizer: the same multiset of lines as the reference (count and
 *       order-independent checksum), and as many as the generator says (matching lines;
 *       bigrams);
 *   <li>Connected Components: the same vertex-label pairs as the reference, one per vertex,
 *       and as many distinct labels as components were planted;
 *   <li>Decision Tree: one prediction per test row, accuracy within
 *       {@value #ACCURACY_TOLERANCE} of the reference's and at least {@value #MIN_ACCURACY}
 *       (the labels follow a learnable rule with 5% noise; a broken model scores about 0.5).
 * </ul>
 */
public enum Workload {
  SORT("sort", Sort.class, Dataset.TEXT),
  GREP("grep", Grep.class, Dataset.TEXT),
  DECISION_TREE("decision-tree", DecisionTree.class, Dataset.FEATURES),
  CONNECTED_COMPONENTS("connected-components", ConnectedComponents.class, Dataset.GRAPH),
  TOKENIZER("tokenizer", Tokenizer.class, Dataset.TEXT);

  public static final double ACCURACY_TOLERANCE = 0.02;
  public static final double MIN_ACCURACY = 1 - FeatureDataGenerator.NOISE - 0.1;
  public static final String OK = "ok";

  private final String id;
  private final Class<?> mainClass;
  private final Dataset input;

  Workload(String id, Class<?> mainClass, Dataset input) {
    this.id = id;
    this.mainClass = mainClass;
    this.input = input;
  }

  public String id() {
    return id;
  }

  public String mainClass() {
    return mainClass.getName();
  }

  public Dataset input() {
    return input;
  }

  /** The application's arguments: input and output (each application's defaults apply). */
  public List<String> appArgs(Path input, Path output) {
    return List.of(input.toString(), output.toString());
  }

  /** Parses a comma-separated list of ids ({@code all} for every workload). */
  public static List<Workload> parseList(String list) {
    List<Workload> out = new ArrayList<>();
    for (String s : list.split(",")) {
      String t = s.trim().toLowerCase(Locale.ROOT);
      if (t.equals("all")) {
        out.addAll(List.of(values()));
        continue;
      }
      Workload found = null;
      for (Workload w : values()) {
        if (w.id.equals(t)) {
          found = w;
        }
      }
      if (found == null) {
        throw new IllegalArgumentException("unknown workload '" + s + "'; workloads: "
            + String.join(",", ids()));
      }
      out.add(found);
    }
    return out;
  }

  private static List<String> ids() {
    List<String> ids = new ArrayList<>();
    for (Workload w : values()) {
      ids.add(w.id);
    }
    return ids;
  }

  /** A run's output, digested; {@code accuracy} only for Decision Tree (else NaN). */
  public record Outcome(OutputDigest digest, double accuracy) {}

  /** Reads the output a run left under {@code out}. */
  public Outcome read(FileSystem fs, Path out) throws IOException {
    if (this != DECISION_TREE) {
      return new Outcome(OutputDigest.of(fs, out), Double.NaN);
    }
    OutputDigest predictions = OutputDigest.of(fs, new Path(out, "predictions"));
    double accuracy = Double.NaN;
    Path metrics = new Path(out, "metrics");
    if (OutputDigest.of(fs, metrics).committed()) {
      for (FileStatus part : fs.listStatus(metrics, p -> p.getName().startsWith("part-"))) {
        try (FSDataInputStream in = fs.open(part.getPath());
            BufferedReader r = new BufferedReader(new InputStreamReader(in, StandardCharsets.UTF_8))) {
          for (String line = r.readLine(); line != null; line = r.readLine()) {
            for (String field : line.split(" ")) {
              if (field.startsWith("accuracy=")) {
                accuracy = Double.parseDouble(field.substring("accuracy=".length()));
              }
            }
          }
        }
      }
    }
    return new Outcome(predictions, accuracy);
  }

  /** {@link #OK}, or what is wrong with {@code actual}. */
  public String check(Outcome actual, Outcome reference, Dataset.Expected e) {
    OutputDigest a = actual.digest();
    OutputDigest r = reference.digest();
    if (!a.committed()) {
      return "no _SUCCESS";
    }
    return switch (this) {
      case SORT -> !a.ascending() ? "out of order"
          : a.lines() != e.lines ? a.lines() + " lines, input has " + e.lines
          : a.orderedHash() != r.orderedHash() ? "not the reference's lines in its order"
          : OK;
      case GREP -> sameLines(a, r, e.grepMatches, "matching lines");
      case TOKENIZER -> sameLines(a, r, e.bigrams, "bigrams");
      case CONNECTED_COMPONENTS -> a.distinctSecondFields() != e.components
          ? a.distinctSecondFields() + " components, " + e.components + " planted"
          : sameLines(a, r, e.vertices, "vertices");
      case DECISION_TREE -> a.lines() != e.testRows
          ? a.lines() + " predictions, " + e.testRows + " test rows"
          : !(actual.accuracy() >= MIN_ACCURACY)
              ? String.format(Locale.ROOT, "accuracy %.4f < %.2f", actual.accuracy(), MIN_ACCURACY)
          : !(Math.abs(actual.accuracy() - reference.accuracy()) <= ACCURACY_TOLERANCE)
              ? String.format(Locale.ROOT, "accuracy %.4f, reference %.4f", actual.accuracy(),
                  reference.accuracy())
          : OK;
    };
  }

  private static String sameLines(OutputDigest a, OutputDigest r, long expected, String what) {
    if (a.lines() != expected) {
      return a.lines() + " lines, expected " + expected + " " + what;
    }
    return a.unorderedSum() == r.unorderedSum() && a.lines() == r.lines() ? OK
        : "not the reference's lines";
  }
}
