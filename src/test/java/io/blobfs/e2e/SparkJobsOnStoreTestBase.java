package io.blobfs.e2e;

import static io.blobfs.e2e.E2eSupport.assertSameLines;
import static org.assertj.core.api.Assertions.assertThat;

import io.blobfs.bench.StorageCounters;
import io.blobfs.bench.workloads.Committer;
import io.blobfs.bench.workloads.Grep;
import io.blobfs.bench.workloads.Sort;
import io.blobfs.bench.workloads.TextDataGenerator;
import java.io.IOException;
import java.nio.file.Files;
import java.util.Map;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.spark.api.java.JavaSparkContext;
import org.apache.spark.sql.SparkSession;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The core job, Grep and Sort, on {@code blob://} over a real external store: input
 * generated into it, both committers, output compared line by line with results computed
 * without Spark. BlobFS comes from the bundle, as on a user's cluster. Subclasses say
 * which store and how to reach it.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
abstract class SparkJobsOnStoreTestBase {
  private static final TextDataGenerator.Spec SPEC = new TextDataGenerator.Spec(3L << 20, 4, 11);
  private static final String PATTERN = "ceph";
  private static final int SORT_PARTITIONS = 3;

  private SparkSession spark;
  private JavaSparkContext sc;

  /** The store's name in {@code blob://NAME/}. */
  abstract String store();

  /** What the store is called in messages. */
  abstract String backend();

  /** Starts (or finds) the store; returns its {@code fs.blob.*} settings. */
  abstract Map<String, String> startStore() throws IOException;

  void stopStore() throws IOException {
  }

  @BeforeAll
  void start() throws IOException {
    Map<String, String> settings = startStore();
    spark = SparkSession.builder()
        .master("local[2]")
        .appName("blobfs-e2e-" + store())
        .config("spark.ui.enabled", "false")
        .config("spark.log.level", "WARN")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.hadoop.fs.blob.impl", E2eSupport.BLOBFS_IMPL)
        .getOrCreate();
    sc = JavaSparkContext.fromSparkContext(spark.sparkContext());
    settings.forEach(sc.hadoopConfiguration()::set);
    // Several stripes per input file, so reads cross blobs.
    sc.hadoopConfiguration().set("fs.blob.store." + store() + ".stripe.size", "256k");
  }

  @AfterAll
  void stop() throws IOException {
    if (spark != null) {
      spark.stop();
    }
    stopStore();
  }

  @ParameterizedTest(name = "committer={0}")
  @EnumSource(Committer.class)
  void grepAndSortMatchResultsComputedWithoutSpark(Committer committer) throws IOException {
    Path base = new Path("blob://" + store() + "/job-" + committer.id());
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

    assertSameLines("grep output on " + backend() + " (as a multiset)",
        E2eSupport.expectedGrep(SPEC, PATTERN),
        E2eSupport.sorted(E2eSupport.readParts(fs, new Path(base, "grep"))));
    assertSameLines("sort output on " + backend() + " (in part-file order)",
        E2eSupport.expectedSort(SPEC), E2eSupport.readParts(fs, new Path(base, "sort")));
    assertThat(fs.exists(new Path(base, "grep/_SUCCESS"))).isTrue();
    assertThat(fs.exists(new Path(base, "sort/_SUCCESS"))).isTrue();
    assertThat(fs.exists(new Path(base, "sort/_temporary"))).isFalse();
    assertThat(calls.get("store_bytes_read")).as("bytes read from " + backend())
        .isGreaterThanOrEqualTo(2 * summary.bytes());

    assertThat(fs.delete(base, true)).isTrue();
    assertThat(fs.exists(base)).isFalse();
  }

  /**
   * The classic {@code FileOutputCommitter} with each of its algorithms, output compared
   * with the same job's on {@code file://}. Algorithm 1 renames each task's attempt
   * directory at task commit and each file into the output at job commit; algorithm 2
   * renames each file into the output at task commit and nothing at job commit: the
   * renames counted tell which one ran (one or two per part file).
   */
  @ParameterizedTest(name = "algorithm={0}")
  @ValueSource(ints = {1, 2})
  void grepAndSortWithEachFileOutputCommitterAlgorithmMatchFileScheme(int algorithm)
      throws IOException {
    Path base = new Path("blob://" + store() + "/algorithm-" + algorithm);
    FileSystem fs = base.getFileSystem(sc.hadoopConfiguration());
    fs.delete(base, true);
    Path input = new Path(base, "input");
    TextDataGenerator.generate(fs, input, SPEC);
    java.nio.file.Path local = Files.createTempDirectory("blobfs-algorithm-" + algorithm);
    Path localBase = new Path(local.toUri());
    FileSystem localFs = localBase.getFileSystem(sc.hadoopConfiguration());
    TextDataGenerator.generate(localFs, new Path(localBase, "input"), SPEC);
    String key = "mapreduce.fileoutputcommitter.algorithm.version";
    Configuration conf = sc.hadoopConfiguration();
    String before = conf.get(key);
    conf.setInt(key, algorithm);
    try {
      long renamesBefore = renames(fs);
      runGrepAndSort(input, base);
      long renames = renames(fs) - renamesBefore;
      runGrepAndSort(new Path(localBase, "input"), localBase);

      assertSameLines("grep output on " + backend() + " against file:// (as a multiset)",
          E2eSupport.sorted(E2eSupport.readParts(localFs, new Path(localBase, "grep"))),
          E2eSupport.sorted(E2eSupport.readParts(fs, new Path(base, "grep"))));
      assertSameLines("sort output on " + backend() + " against file:// (in part order)",
          E2eSupport.readParts(localFs, new Path(localBase, "sort")),
          E2eSupport.readParts(fs, new Path(base, "sort")));
      long parts = 0;
      for (String job : new String[] {"grep", "sort"}) {
        Path out = new Path(base, job);
        assertThat(fs.exists(new Path(out, "_SUCCESS"))).isTrue();
        assertThat(fs.exists(new Path(out, "_temporary"))).isFalse();
        parts += fs.listStatus(out, p -> p.getName().startsWith("part-")).length;
      }
      assertThat(renames).as("renames by algorithm %d for %d part files", algorithm, parts)
          .isEqualTo(algorithm == 1 ? 2 * parts : parts);
    } finally {
      if (before == null) {
        conf.unset(key);
      } else {
        conf.set(key, before);
      }
      localFs.delete(localBase, true);
    }
    assertThat(fs.delete(base, true)).isTrue();
  }

  private void runGrepAndSort(Path input, Path base) {
    Grep.run(sc, input.toString(), new Path(base, "grep").toString(), PATTERN,
        Committer.CLASSIC);
    Sort.run(sc, input.toString(), new Path(base, "sort").toString(), SORT_PARTITIONS,
        Committer.CLASSIC);
  }

  private static long renames(FileSystem fs) {
    return StorageCounters.of(fs).get("op_rename");
  }
}
