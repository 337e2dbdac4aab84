package io.blobfs.e2e;

import static io.blobfs.e2e.E2eSupport.assertSameLines;
import static org.assertj.core.api.Assertions.assertThat;

import io.blobfs.bench.StorageCounters;
import io.blobfs.bench.workloads.Committer;
import io.blobfs.bench.workloads.Grep;
import io.blobfs.bench.workloads.Sort;
import io.blobfs.bench.workloads.TextDataGenerator;
import io.blobfs.store.memory.InMemoryBlobStoreProvider;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import java.util.UUID;
import java.util.stream.Stream;
import org.apache.hadoop.fs.FSDataInputStream;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.spark.api.java.JavaSparkContext;
import org.apache.spark.api.java.function.FilterFunction;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.SparkSession;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Spark local mode on {@code blob://}: generate input, run Grep and Sort through each output
 * committer (classic FileOutputCommitter, Hadoop's manifest committer) and each
 * directory-marker mode (none, the default, and keep), with the RDD API (the benchmark
 * workloads), the old {@code saveAsTextFile} API and DataFrames, and compare the committed
 * part files with results computed here without Spark. Also checks the storage calls
 * BlobFS counted and what each committer leaves behind.
 */
class SparkWorkloadsIT {
  /** About 3 MiB in 4 files: enough for several splits and a real shuffle, still quick. */
  private static final TextDataGenerator.Spec SPEC = new TextDataGenerator.Spec(3L << 20, 4, 7);
  private static final String PATTERN = "ceph";
  private static final int SORT_PARTITIONS = 3;
  private static final String COMMIT_PROTOCOL_KEY = "spark.sql.sources.commitProtocolClass";
  private static final String PATH_OUTPUT_COMMIT_PROTOCOL =
      "org.apache.spark.internal.io.cloud.PathOutputCommitProtocol";

  private static SparkSession spark;
  private static JavaSparkContext sc;

  @BeforeAll
  static void startSpark() {
    spark = SparkSession.builder()
        .master("local[2]")
        .appName("blobfs-e2e")
        .config("spark.ui.enabled", "false")
        .config("spark.log.level", "WARN")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.sql.shuffle.partitions", Integer.toString(SORT_PARTITIONS))
        .config("spark.hadoop.fs.blob.impl", E2eSupport.BLOBFS_IMPL)
        .getOrCreate();
    sc = JavaSparkContext.fromSparkContext(spark.sparkContext());
  }

  @AfterAll
  static void stopSpark() {
    if (spark != null) {
      spark.stop();
      spark = null;
      sc = null;
    }
  }

  @Test
  void sparkRunsOnHadoopsShadedClientAsOnACluster() throws IOException, ClassNotFoundException {
    // The e2e classpath must look like Spark's: Hadoop only from hadoop-client-api (plus
    // hadoop-client-runtime), no unshaded hadoop-common, so that a BlobFS dependency on
    // Hadoop-internal libraries fails here as it would on a cluster.
    ClassLoader cl = getClass().getClassLoader();
    List<String> hadoopFs = new ArrayList<>();
    Collections.list(cl.getResources("org/apache/hadoop/fs/FileSystem.class"))
        .forEach(u -> hadoopFs.add(u.toString()));
    assertThat(hadoopFs).as("where org.apache.hadoop.fs.FileSystem comes from").hasSize(1);
    assertThat(hadoopFs.get(0)).contains("hadoop-client-api");
    assertThat(Class.forName(E2eSupport.BLOBFS_IMPL, false, cl)
            .getProtectionDomain().getCodeSource().getLocation().toString())
        .as("BlobFS must come from the shaded bundle")
        .contains("blobfs-bundle");
  }

  /** Every committer with each directory-marker mode (none, the default, and keep). */
  static Stream<Arguments> committersAndMarkerModes() {
    return Stream.of(Committer.values())
        .flatMap(c -> Stream.of("none", "keep").map(m -> Arguments.of(c, m)));
  }

  /**
   * A fresh store for one test, with its directory-marker mode set through the per-store
   * key ({@code fs.blob.store.STORE.directory.markers}) before its file system is created.
   */
  private static String newStore(String prefix, String markers) {
    String store = prefix + "-" + UUID.randomUUID().toString().substring(0, 8);
    sc.hadoopConfiguration().set("fs.blob.store." + store + ".directory.markers", markers);
    return store;
  }

  @ParameterizedTest(name = "committer={0}, markers={1}")
  @MethodSource("committersAndMarkerModes")
  void grepAndSortOnBlobMatchResultsComputedWithoutSpark(Committer committer, String markers)
      throws IOException {
    String store = newStore("e2e-rdd-" + committer.id() + "-" + markers, markers);
    Path base = new Path("blob://" + store + "/job");
    FileSystem fs = base.getFileSystem(sc.hadoopConfiguration());
    try {
      assertThat(fs.getClass().getName()).isEqualTo(E2eSupport.BLOBFS_IMPL);
      assertMarkerMode(fs, base, markers);
      Path input = new Path(base, "input");
      TextDataGenerator.Summary summary = TextDataGenerator.generate(fs, input, SPEC);
      assertThat(summary.bytes()).isGreaterThanOrEqualTo(SPEC.totalBytes());
      assertSameLines("input read back through BlobFS", TextDataGenerator.allLines(SPEC),
          readInputInFileOrder(fs, input));

      Path grepOut = new Path(base, "out/grep");
      Path sortOut = new Path(base, "out/sort");

      StorageCounters before = StorageCounters.of(fs);
      Grep.run(sc, input.toString(), grepOut.toString(), PATTERN, committer);
      StorageCounters grepCalls = StorageCounters.of(fs).minus(before);

      before = StorageCounters.of(fs);
      Sort.run(sc, input.toString(), sortOut.toString(), SORT_PARTITIONS, committer);
      StorageCounters sortCalls = StorageCounters.of(fs).minus(before);

      List<String> expectedGrep = E2eSupport.expectedGrep(SPEC, PATTERN);
      assertThat(expectedGrep.size())
          .as("the generator makes '%s' match some lines, not all", PATTERN)
          .isBetween(10, (int) summary.lines() - 1);
      List<String> grepLines = E2eSupport.readParts(fs, grepOut);
      assertSameLines("grep output (as a multiset)", expectedGrep, E2eSupport.sorted(grepLines));

      List<String> sortLines = E2eSupport.readParts(fs, sortOut);
      assertSameLines("sort output (in part-file order)", E2eSupport.expectedSort(SPEC), sortLines);
      assertThat(partFiles(fs, sortOut)).as("sort part files").hasSize(SORT_PARTITIONS);

      assertCommitted(fs, grepOut, committer);
      assertCommitted(fs, sortOut, committer);

      long grepBytes = bytesOf(expectedGrep);
      assertCallKinds("grep/" + committer.id(), grepCalls, partFiles(fs, grepOut).length,
          summary.bytes(), grepBytes);
      assertCallKinds("sort/" + committer.id(), sortCalls, SORT_PARTITIONS,
          summary.bytes(), summary.bytes());

      assertThat(fs.delete(base, true)).isTrue();
      assertThat(fs.exists(base)).as("%s after recursive delete", base).isFalse();
    } finally {
      fs.close();
      InMemoryBlobStoreProvider.drop(store);
    }
  }

  @Test
  void saveAsTextFileWithTheOldHadoopApiWorksOnBlob() throws IOException {
    // saveAsTextFile goes through the old mapred API, whose committer is always the
    // classic FileOutputCommitter (no PathOutputCommitterFactory): unmodified jobs use it.
    String store = newStore("e2e-oldapi", "none");
    Path base = new Path("blob://" + store + "/job");
    FileSystem fs = base.getFileSystem(sc.hadoopConfiguration());
    try {
      Path input = new Path(base, "input");
      TextDataGenerator.generate(fs, input, SPEC);
      Path out = new Path(base, "grep-old-api");
      sc.textFile(input.toString()).filter(l -> l.contains(PATTERN)).saveAsTextFile(out.toString());
      assertSameLines("saveAsTextFile grep output (as a multiset)",
          E2eSupport.expectedGrep(SPEC, PATTERN), E2eSupport.sorted(E2eSupport.readParts(fs, out)));
      assertCommitted(fs, out, Committer.CLASSIC);
    } finally {
      fs.close();
      InMemoryBlobStoreProvider.drop(store);
    }
  }

  @ParameterizedTest(name = "committer={0}, markers={1}")
  @MethodSource("committersAndMarkerModes")
  void dataFrameGrepAndSortOnBlobMatchResultsComputedWithoutSpark(Committer committer,
      String markers) throws IOException {
    // A user's DataFrame job. Spark SQL's default commit protocol only hands the committer's
    // work path to a FileOutputCommitter; with any other PathOutputCommitter it writes
    // straight into the destination. spark-hadoop-cloud's PathOutputCommitProtocol is what
    // makes the manifest committer actually commit, so it is set as a user must set it.
    withDataFrameInput("e2e-sql-", committer, markers, (fs, base, input) -> {
      Path grepOut = new Path(base, "out/grep");
      Path sortOut = new Path(base, "out/sort");
      String factoryKey = Committer.FACTORY_SCHEME_KEY_PREFIX + "blob";

      Dataset<String> lines = spark.read().textFile(input.toString());
      lines.filter((FilterFunction<String>) l -> l.contains(PATTERN))
          .write().option(factoryKey, committer.factoryClass()).text(grepOut.toString());
      lines.sort("value")
          .write().option(factoryKey, committer.factoryClass()).text(sortOut.toString());

      assertSameLines("DataFrame grep output (as a multiset)",
          E2eSupport.expectedGrep(SPEC, PATTERN), E2eSupport.sorted(E2eSupport.readParts(fs, grepOut)));
      assertSameLines("DataFrame sort output (in part-file order)",
          E2eSupport.expectedSort(SPEC), E2eSupport.readParts(fs, sortOut));
      assertCommitted(fs, grepOut, committer);
      assertCommitted(fs, sortOut, committer);
      assertThat(spark.read().textFile(sortOut.toString()).count())
          .as("Spark reads back what it wrote").isEqualTo(TextDataGenerator.allLines(SPEC).size());
    });
  }

  @ParameterizedTest(name = "committer={0}, markers={1}")
  @MethodSource("committersAndMarkerModes")
  void dataFrameWriteWhereMostTasksWriteNothing(Committer committer, String markers)
      throws IOException {
    // Spark SQL creates no file for a task without rows, so such a task's attempt directory
    // exists only if mkdirs made it; the committer must still commit the task and the job.
    withDataFrameInput("e2e-sql-empty-", committer, markers, (fs, base, input) -> {
      Path out = new Path(base, "out/rare");
      Dataset<String> lines = spark.read().textFile(input.toString());
      String rare = rarePattern();
      List<String> expected = E2eSupport.expectedGrep(SPEC, rare);
      assertThat(expected.size()).as("lines matching the rare pattern (fewer than tasks)")
          .isBetween(1, lines.javaRDD().getNumPartitions() - 1);

      lines.filter((FilterFunction<String>) l -> l.contains(rare))
          .write()
          .option(Committer.FACTORY_SCHEME_KEY_PREFIX + "blob", committer.factoryClass())
          .text(out.toString());

      assertSameLines("DataFrame rare-grep output", expected,
          E2eSupport.sorted(E2eSupport.readParts(fs, out)));
      assertCommitted(fs, out, committer);
    });
  }

  private interface DataFrameJob {
    void run(FileSystem fs, Path base, Path input) throws IOException;
  }

  /**
   * A fresh store in the given marker mode with the generated input under {@code /job},
   * the commit protocol a user of that committer must set, and everything undone after.
   */
  private static void withDataFrameInput(String prefix, Committer committer, String markers,
      DataFrameJob job) throws IOException {
    String store = newStore(prefix + committer.id() + "-" + markers, markers);
    Path base = new Path("blob://" + store + "/job");
    FileSystem fs = base.getFileSystem(sc.hadoopConfiguration());
    if (committer == Committer.MANIFEST) {
      spark.conf().set(COMMIT_PROTOCOL_KEY, PATH_OUTPUT_COMMIT_PROTOCOL);
    }
    try {
      assertMarkerMode(fs, base, markers);
      Path input = new Path(base, "input");
      TextDataGenerator.generate(fs, input, SPEC);
      job.run(fs, base, input);
    } finally {
      spark.conf().unset(COMMIT_PROTOCOL_KEY);
      fs.close();
      InMemoryBlobStoreProvider.drop(store);
    }
  }

  /** The longest of the first input lines: it occurs about once in the whole input. */
  private static String rarePattern() {
    List<String> all = TextDataGenerator.allLines(SPEC);
    String best = "";
    for (String l : all.subList(0, 200)) {
      if (l.length() > best.length()) {
        best = l;
      }
    }
    return best;
  }


  /** The store really runs in the mode the test asked for (so both modes are covered). */
  private static void assertMarkerMode(FileSystem fs, Path base, String markers)
      throws IOException {
    assertThat(fs.hasPathCapability(base, "fs.blob.capability.directory.markers.kept"))
        .as("directory markers kept, for markers=%s", markers)
        .isEqualTo(markers.equals("keep"));
  }

  /** What a committed job leaves: part files and _SUCCESS, no attempt directories. */
  private static void assertCommitted(FileSystem fs, Path out, Committer committer)
      throws IOException {
    Path success = new Path(out, "_SUCCESS");
    assertThat(fs.exists(success)).as("%s exists", success).isTrue();
    assertThat(fs.getFileStatus(success).isFile()).as("%s is a file", success).isTrue();
    byte[] marker;
    try (FSDataInputStream in = fs.open(success)) {
      marker = in.readAllBytes();
    }
    String text = new String(marker, StandardCharsets.UTF_8);
    if (committer == Committer.CLASSIC) {
      assertThat(marker).as("FileOutputCommitter's _SUCCESS is empty").isEmpty();
    } else {
      // The manifest committer writes a JSON summary: proof that it, not the classic
      // committer, committed the job.
      assertThat(text).as("manifest committer's _SUCCESS")
          .contains("ManifestCommitter")
          .containsPattern("\"success\"\\s*:\\s*true");
      // ...and it names the files it committed: they went through the committer, not
      // straight into the destination.
      for (FileStatus part : partFiles(fs, out)) {
        assertThat(text).as("_SUCCESS of %s lists %s", out, part.getPath().getName())
            .contains(part.getPath().getName());
      }
    }
    assertThat(fs.exists(new Path(out, "_temporary")))
        .as("%s/_temporary after commit", out).isFalse();
    List<String> names = new ArrayList<>();
    for (FileStatus st : fs.listStatus(out)) {
      names.add(st.getPath().getName());
      assertThat(st.isFile()).as("%s is a file", st.getPath()).isTrue();
    }
    assertThat(names).contains("_SUCCESS").allMatch(n -> n.equals("_SUCCESS") || n.startsWith("part-"));
  }

  /** A write job's calls: the kinds Hadoop's committers and Spark's input format make. */
  private static void assertCallKinds(String what, StorageCounters c, int parts,
      long inputBytes, long outputBytes) {
    String all = what + " counters " + c.nonZero();
    System.out.println(all);
    assertThat(c.sum("op_create", "op_create_non_recursive", "op_createfile"))
        .as("creates (part files and _SUCCESS) in %s", all).isGreaterThanOrEqualTo(parts + 1L);
    assertThat(c.sum("op_open", "op_openfile"))
        .as("opens of input files in %s", all).isGreaterThanOrEqualTo(SPEC.files());
    assertThat(c.get("op_rename")).as("renames (commit) in %s", all).isGreaterThanOrEqualTo(parts);
    assertThat(c.get("op_delete")).as("deletes (cleanup) in %s", all).isGreaterThanOrEqualTo(1);
    assertThat(c.get("op_mkdirs")).as("mkdirs calls (counted even when dropped) in %s", all)
        .isGreaterThanOrEqualTo(1);
    assertThat(c.get("op_get_file_status")).as("getFileStatus in %s", all).isGreaterThanOrEqualTo(1);
    assertThat(c.sum("op_list_status", "op_list_files", "op_list_located_status"))
        .as("listings in %s", all).isGreaterThanOrEqualTo(1);
    assertThat(c.asMap().entrySet())
        .as("raw store calls (store_*) in %s", all)
        .anyMatch(e -> e.getKey().startsWith("store_") && e.getValue() > 0);
    // Spark's input/output metrics come from Hadoop's per-scheme FileSystem.Statistics.
    assertThat(c.get("fs.bytesRead")).as("FileSystem.Statistics bytes read in %s", all)
        .isGreaterThanOrEqualTo(inputBytes);
    assertThat(c.get("fs.bytesWritten")).as("FileSystem.Statistics bytes written in %s", all)
        .isGreaterThanOrEqualTo(outputBytes);
  }

  private static FileStatus[] partFiles(FileSystem fs, Path dir) throws IOException {
    return fs.listStatus(dir, p -> p.getName().startsWith("part-"));
  }

  private static List<String> readInputInFileOrder(FileSystem fs, Path input) throws IOException {
    List<String> lines = new ArrayList<>();
    for (int i = 0; i < SPEC.files(); i++) {
      try (FSDataInputStream in = fs.open(new Path(input, SPEC.fileName(i)));
          BufferedReader r = new BufferedReader(new InputStreamReader(in, StandardCharsets.UTF_8))) {
        r.lines().forEach(lines::add);
      }
    }
    FileStatus[] listed = fs.listStatus(input);
    assertThat(Arrays.stream(listed).map(s -> s.getPath().getName()))
        .as("listing of %s", input)
        .containsExactlyInAnyOrder(
            java.util.stream.IntStream.range(0, SPEC.files()).mapToObj(SPEC::fileName)
                .toArray(String[]::new));
    return lines;
  }

  private static long bytesOf(List<String> lines) {
    long n = 0;
    for (String l : lines) {
      n += l.getBytes(StandardCharsets.UTF_8).length + 1;
    }
    return n;
  }
}
