package io.blobfs.bench.workloads;

import org.apache.spark.SparkConf;
import org.apache.spark.api.java.JavaRDD;
import org.apache.spark.api.java.JavaSparkContext;
import org.apache.spark.graphx.Graph;
import org.apache.spark.graphx.GraphLoader;
import org.apache.spark.storage.StorageLevel;

/**
 * SparkBench's Connected Components (GraphX): reads an edge list ({@code SRC DST} per line,
 * {@code #} comments skipped, as {@link GraphLoader#edgeListFile} reads it) and writes each
 * vertex with the label of its component, {@code VERTEX COMPONENT} per line. GraphX labels a
 * component with its smallest vertex id, so the output is fully determined by the graph.
 *
 * <p>As an application: {@code spark-submit --class
 * io.blobfs.bench.workloads.ConnectedComponents JAR INPUT OUTPUT}.
 */
public final class ConnectedComponents {
  private ConnectedComponents() {}

  public static void main(String[] args) {
    Apps.requireArgs(args, 2, 2, "ConnectedComponents INPUT OUTPUT");
    try (JavaSparkContext sc =
        new JavaSparkContext(new SparkConf().setAppName("ConnectedComponents"))) {
      Graph<Object, Object> graph = GraphLoader.edgeListFile(sc.sc(), args[0], false, -1,
          StorageLevel.MEMORY_ONLY(), StorageLevel.MEMORY_ONLY());
      JavaRDD<String> labels = graph.ops().connectedComponents().vertices().toJavaRDD()
          .map(v -> v._1() + " " + v._2());
      TextOutput.save(labels, args[1], sc.hadoopConfiguration());
    }
  }
}
