package io.blobfs.bench.workloads;

import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import org.apache.hadoop.conf.Configuration;
import org.apache.spark.SparkConf;
import org.apache.spark.api.java.JavaRDD;
import org.apache.spark.api.java.JavaSparkContext;
import org.apache.spark.mllib.linalg.Vectors;
import org.apache.spark.mllib.regression.LabeledPoint;
import org.apache.spark.mllib.tree.model.DecisionTreeModel;

/**
 * SparkBench's Decision Tree (Spark MLlib): reads labelled feature rows
 * ({@code ID,LABEL,F0,...,Fk}, as {@link FeatureDataGenerator} writes them), splits them
 * into a training set and a test set, trains a classification tree on the first and writes
 * under the output directory:
 * <ul>
 *   <li>{@code predictions/}: {@code ID,LABEL,PREDICTION} for every test row;
 *   <li>{@code metrics/}: one line {@code accuracy=A test=N train=M};
 *   <li>{@code model/}: the tree, as MLlib prints it.
 * </ul>
 * The split is by row id ({@code id % 5 == 0} is a test row), not {@code randomSplit}: a
 * random split samples per partition, and the partitions of the same files differ between
 * file systems with different block sizes, so the sets (and the model) would too.
 *
 * <p>As an application: {@code spark-submit --class io.blobfs.bench.workloads.DecisionTree
 * JAR INPUT OUTPUT [MAX_DEPTH]} (depth {@value #DEFAULT_MAX_DEPTH} by default).
 */
public final class DecisionTree {
  public static final int DEFAULT_MAX_DEPTH = 5;
  /** One row in this many is a test row. */
  public static final int TEST_EVERY = 5;
  private static final int MAX_BINS = 32;

  private DecisionTree() {}

  public static void main(String[] args) {
    Apps.requireArgs(args, 2, 3, "DecisionTree INPUT OUTPUT [MAX_DEPTH]");
    int maxDepth = args.length > 2 ? Integer.parseInt(args[2]) : DEFAULT_MAX_DEPTH;
    String output = args[1];
    try (JavaSparkContext sc = new JavaSparkContext(new SparkConf().setAppName("DecisionTree"))) {
      JavaRDD<String> rows = sc.textFile(args[0]);
      JavaRDD<LabeledPoint> train = rows.filter(r -> !isTest(r)).map(DecisionTree::point);
      DecisionTreeModel model = org.apache.spark.mllib.tree.DecisionTree.trainClassifier(
          train, 2, new HashMap<>(), "gini", maxDepth, MAX_BINS);

      JavaRDD<String> predictions = rows.filter(DecisionTree::isTest).map(r -> {
        LabeledPoint p = point(r);
        return id(r) + "," + (int) p.label() + "," + (int) model.predict(p.features());
      }).cache();
      Configuration conf = sc.hadoopConfiguration();
      TextOutput.save(predictions, output + "/predictions", conf);

      long test = predictions.count();
      long right = predictions.filter(DecisionTree::predictedRight).count();
      long trained = train.count();
      String metrics = String.format(Locale.ROOT, "accuracy=%.6f test=%d train=%d",
          test == 0 ? 0.0 : (double) right / test, test, trained);
      TextOutput.save(sc.parallelize(List.of(metrics), 1), output + "/metrics", conf);
      TextOutput.save(sc.parallelize(Arrays.asList(model.toDebugString().split("\n")), 1),
          output + "/model", conf);
    }
  }

  static long id(String row) {
    return Long.parseLong(row.substring(0, row.indexOf(',')));
  }

  static boolean isTest(String row) {
    return id(row) % TEST_EVERY == 0;
  }

  static LabeledPoint point(String row) {
    String[] f = row.split(",");
    double[] features = new double[f.length - 2];
    for (int i = 0; i < features.length; i++) {
      features[i] = Double.parseDouble(f[i + 2]);
    }
    return new LabeledPoint(Double.parseDouble(f[1]), Vectors.dense(features));
  }

  private static boolean predictedRight(String prediction) {
    String[] f = prediction.split(",");
    return f[1].equals(f[2]);
  }
}
