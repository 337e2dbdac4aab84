package io.blobfs.e2e;

import static io.blobfs.e2e.E2eSupport.assertSameLines;
import static org.assertj.core.api.Assertions.assertThat;

import io.blobfs.bench.StorageCounters;
import io.blobfs.bench.workloads.Committer;
import io.blobfs.bench.workloads.Grep;
import io.blobfs.bench.workloads.Sort;
import io.blobfs.bench.workloads.TextDataGenerator;
import io.blobfs.rados.CephClusterExtension;
import io.blobfs.rados.CephTestCluster;
import java.io.IOException;
import java.util.Map;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.spark.api.java.JavaSparkContext;
import org.apache.spark.sql.SparkSession;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * The core job, Grep and Sort, on {@code blob://} backed by the real Ceph cluster the
 * project's script starts: input generated into RADOS, both committers, output compared
 * line by line with results computed here without Spark. BlobFS comes from the bundle,
 * as on a user's cluster.
 */
@ExtendWith(CephClusterExtension.class)
class SparkOnRadosIntegrationTest {
  private static final TextDataGenerator.Spec SPEC = new TextDataGenerator.Spec(3L << 20, 4, 11);
  private static final String PATTERN = "ceph";
  private static final int SORT_PARTITIONS = 3;
  private static final String STORE = "rados-e2e";

  private static SparkSession spark;
  private static JavaSparkContext sc;

  @BeforeAll
  static void start(CephTestCluster.Env env) {
    spark = SparkSession.builder()
        .master("local[2]")
        .appName("blobfs-e2e-rados")
        .config("spark.ui.enabled", "false")
        .config("spark.log.level", "WARN")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.hadoop.fs.blob.impl", E2eSupport.BLOBFS_IMPL)
        .getOrCreate();
    sc = JavaSparkContext.fromSparkContext(spark.sparkContext());
    Configuration cluster = CephTestCluster.hadoopConf(env, STORE,
        "e2e-" + ProcessHandle.current().pid());
    for (Map.Entry<String, String> e : cluster) {
      if (e.getKey().startsWith("fs.blob.")) {
        sc.hadoopConfiguration().set(e.getKey(), e.getValue());
      }
    }
    // Several stripes per input file, so reads cross RADOS objects.
    sc.hadoopConfiguration().set("fs.blob.store." + STORE + ".stripe.size", "256k");
  }

  @AfterAll
  static void stop() {
    if (spark != null) {
      spark.stop();
    }
  }

  @ParameterizedTest(name = "committer={0}")
  @EnumSource(Committer.class)
  void grepAndSortOnRadosMatchResultsComputedWithoutSpark(Committer committer)
      throws IOException {
    Path base = new Path("blob://" + STORE + "/job-" + committer.id());
    FileSystem fs = base.getFileSystem(sc.hadoopConfiguration());
    fs.delete(base, true);
    Path input = new Path(base, "input");
    TextDataGenerator.Summary summary = TextDataGenerator.generate(fs, input, SPEC);
    assertThat(fs.getFileStatus(new Path(input, SPEC.fileName(0))).getBlockSize())
        .isEqualTo(256 << 10);

    StorageCounters before = StorageCounters.of(fs);
    Grep.run(sc, input.toString(), new Path(base, "grep").toString(), PATTERN, committer);
    Sort.run(sc, input.toString(), new Path(base, "sort").toString(), SORT_PARTITIONS,
        committer);
    StorageCounters calls = StorageCounters.of(fs).minus(before);

    assertSameLines("grep output on RADOS (as a multiset)",
        E2eSupport.expectedGrep(SPEC, PATTERN),
        E2eSupport.sorted(E2eSupport.readParts(fs, new Path(base, "grep"))));
    assertSameLines("sort output on RADOS (in part-file order)", E2eSupport.expectedSort(SPEC),
        E2eSupport.readParts(fs, new Path(base, "sort")));
    assertThat(fs.exists(new Path(base, "grep/_SUCCESS"))).isTrue();
    assertThat(fs.exists(new Path(base, "sort/_SUCCESS"))).isTrue();
    assertThat(fs.exists(new Path(base, "sort/_temporary"))).isFalse();
    assertThat(calls.get("store_bytes_read")).as("bytes read from RADOS")
        .isGreaterThanOrEqualTo(2 * summary.bytes());

    assertThat(fs.delete(base, true)).isTrue();
    assertThat(fs.exists(base)).isFalse();
  }
}
