package io.blobfs.bench.shim;

import io.blobfs.bench.run.SparkSubmitRunner;
import io.blobfs.bench.run.Workload;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.apache.hadoop.fs.Path;

/**
 * A workload of the HDFS-against-flat experiment: one of the paper's five ({@link Workload},
 * the same applications, inputs and output checks as {@code WorkloadBench} and
 * {@code CompareBench}), submitted as an application through {@link SparkSubmitRunner} in
 * this JVM, so the file systems it opens are the cached instances whose counters the
 * experiment reads.
 */
record ShimWorkload(Workload workload) {
  /** All five, in {@link Workload}'s order. */
  static final List<ShimWorkload> ALL =
      Arrays.stream(Workload.values()).map(ShimWorkload::new).toList();

  String name() {
    return workload.id();
  }

  /**
   * Submits the workload on {@code input}, writing {@code output}; {@code sparkConf} holds the
   * run's {@code --conf}s (the flat scheme's settings, the committer). Throws what the
   * application threw.
   */
  void run(String master, Map<String, String> sparkConf, java.nio.file.Path appJar,
      Path input, Path output) {
    Map<String, String> conf = new LinkedHashMap<>(sparkConf);
    conf.put("spark.app.name", name() + "@" + output.toUri().getScheme());
    SparkSubmitRunner.submit(SparkSubmitRunner.arguments(master, conf, workload.mainClass(),
        appJar, workload.appArgs(input, output)));
  }
}
