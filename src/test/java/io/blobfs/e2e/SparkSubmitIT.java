package io.blobfs.e2e;

import static io.blobfs.e2e.E2eSupport.assertSameLines;
import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assertions.fail;

import io.blobfs.bench.workloads.Committer;
import io.blobfs.bench.workloads.TextDataGenerator;
import java.io.File;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Properties;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import java.util.jar.JarFile;
import java.util.zip.ZipFile;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * What a user does: {@code spark-submit} an unmodified job with BlobFS added by
 * {@code --jars} and switched on by one {@code --conf}. SparkSubmit runs in a child JVM
 * whose classpath holds Spark and its dependencies only; the job (GrepSortJob) runs on
 * {@code blob://} and copies its outputs to a local directory, which is compared here
 * with results computed without Spark.
 */
class SparkSubmitIT {
  private static final long TIMEOUT_SECONDS = 240;
  private static final TextDataGenerator.Spec SPEC = new TextDataGenerator.Spec(2L << 20, 3, 11);
  private static final String PATTERN = "ceph";
  private static final int SORT_PARTITIONS = 2;

  @ParameterizedTest(name = "committer={0}")
  @EnumSource(Committer.class)
  void sparkSubmitWithBundleOnJarsRunsGrepAndSortOnBlob(Committer committer) throws Exception {
    Path bundle = E2eSupport.requiredJar("blobfs.bundle.jar");
    Path benchmarks = E2eSupport.requiredJar("blobfs.benchmarks.jar");
    String classpath = sparkOnlyClasspath();
    Path work = Paths.get(E2eSupport.requiredProperty("blobfs.e2e.work.dir"))
        .resolve("submit-" + committer.id() + "-" + UUID.randomUUID().toString().substring(0, 8));
    Files.createDirectories(work);
    Path results = work.resolve("results");
    Path log = work.resolve("spark-submit.log");

    List<String> cmd = new ArrayList<>();
    cmd.add(Paths.get(System.getProperty("java.home"), "bin", "java").toString());
    cmd.addAll(Arrays.asList(E2eSupport.requiredProperty("blobfs.spark.jvm.opens").trim().split("\\s+")));
    cmd.addAll(List.of("-Xmx1g", "-cp", classpath, "org.apache.spark.deploy.SparkSubmit",
        "--master", "local[2]",
        "--class", "io.blobfs.bench.GrepSortJob",
        "--jars", bundle.toString(),
        "--conf", "spark.hadoop.fs.blob.impl=" + E2eSupport.BLOBFS_IMPL,
        "--conf", "spark.ui.enabled=false",
        "--conf", "spark.driver.host=127.0.0.1",
        "--conf", "spark.driver.bindAddress=127.0.0.1",
        benchmarks.toString(),
        "--base", "blob://submit-" + committer.id() + "/run",
        "--copy-to", results.toUri().toString(),
        "--size", Long.toString(SPEC.totalBytes()),
        "--files", Integer.toString(SPEC.files()),
        "--seed", Long.toString(SPEC.seed()),
        "--pattern", PATTERN,
        "--partitions", Integer.toString(SORT_PARTITIONS),
        "--committer", committer.id()));

    ProcessBuilder pb = new ProcessBuilder(cmd)
        .directory(work.toFile())
        .redirectErrorStream(true)
        .redirectOutput(log.toFile());
    pb.environment().put("SPARK_LOCAL_IP", "127.0.0.1");
    pb.environment().remove("SPARK_HOME");
    pb.environment().remove("SPARK_CONF_DIR");
    pb.environment().remove("HADOOP_CONF_DIR");
    Process p = pb.start();
    try {
      if (!p.waitFor(TIMEOUT_SECONDS, TimeUnit.SECONDS)) {
        fail("spark-submit did not finish within " + TIMEOUT_SECONDS + " s; killed it. Log "
            + log + ":\n" + tail(log));
      }
    } finally {
      if (p.isAlive()) {
        p.descendants().forEach(ProcessHandle::destroyForcibly);
        p.destroyForcibly();
        p.waitFor(10, TimeUnit.SECONDS);
      }
    }
    assertThat(p.exitValue()).as("spark-submit exit code; log %s:\n%s", log, tail(log)).isZero();

    Properties job = new Properties();
    try (InputStream in = Files.newInputStream(results.resolve("job.properties"))) {
      job.load(in);
    }
    assertThat(job.getProperty("fs.class")).as("file system that served blob://")
        .isEqualTo(E2eSupport.BLOBFS_IMPL);
    assertThat(job.getProperty("base")).startsWith("blob://submit-");
    assertThat(job.getProperty("committer")).isEqualTo(committer.id());
    assertThat(Long.parseLong(job.getProperty("input.lines")))
        .isEqualTo(TextDataGenerator.allLines(SPEC).size());
    assertThat(Long.parseLong(job.getProperty("counter.op_create", "0")))
        .as("creates counted by BlobFS in the child JVM").isPositive();
    assertThat(Long.parseLong(job.getProperty("counter.op_rename", "0")))
        .as("renames (commit) counted by BlobFS in the child JVM").isPositive();

    Path grep = results.resolve("grep");
    Path sort = results.resolve("sort");
    assertThat(grep.resolve("_SUCCESS")).isRegularFile();
    assertThat(sort.resolve("_SUCCESS")).isRegularFile();
    String success = Files.readString(sort.resolve("_SUCCESS"), StandardCharsets.UTF_8);
    if (committer == Committer.MANIFEST) {
      assertThat(success).contains("ManifestCommitter");
    } else {
      assertThat(success).isEmpty();
    }
    assertSameLines("grep output of spark-submit (as a multiset)",
        E2eSupport.expectedGrep(SPEC, PATTERN), E2eSupport.sorted(E2eSupport.readLocalParts(grep)));
    assertSameLines("sort output of spark-submit (in part-file order)",
        E2eSupport.expectedSort(SPEC), E2eSupport.readLocalParts(sort));
  }

  /** Spark's classpath as the pom wrote it, checked to hold no BlobFS class at all. */
  private static String sparkOnlyClasspath() throws IOException {
    Path file = Paths.get(E2eSupport.requiredProperty("blobfs.spark.classpath.file"));
    assertThat(file).as("classpath file written by maven-dependency-plugin").isRegularFile();
    String cp = Files.readString(file, StandardCharsets.UTF_8).trim();
    List<String> entries = Arrays.asList(cp.split(File.pathSeparator));
    assertThat(entries).as("spark-submit classpath").isNotEmpty()
        .anyMatch(e -> e.contains("spark-core_"));
    for (String e : entries) {
      Path p = Paths.get(e);
      if (Files.isDirectory(p)) {
        assertThat(p.resolve("io/blobfs")).as("BlobFS classes in %s", p).doesNotExist();
      } else if (Files.isRegularFile(p)) {
        try (ZipFile z = new JarFile(p.toFile())) {
          assertThat(z.stream().anyMatch(en -> en.getName().startsWith("io/blobfs/")))
              .as("BlobFS classes in %s", p).isFalse();
        }
      }
    }
    return cp;
  }

  private static String tail(Path log) {
    try {
      List<String> lines = Files.readAllLines(log, StandardCharsets.UTF_8);
      return String.join("\n", lines.subList(Math.max(0, lines.size() - 80), lines.size()));
    } catch (IOException e) {
      return "(cannot read " + log + ": " + e + ")";
    }
  }
}
