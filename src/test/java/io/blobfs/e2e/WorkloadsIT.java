package io.blobfs.e2e;

import static org.assertj.core.api.Assertions.assertThat;

import io.blobfs.bench.MainJob;
import io.blobfs.bench.run.SparkSubmitRunner;
import io.blobfs.bench.run.StoreTarget;
import io.blobfs.bench.run.Workload;
import io.blobfs.bench.run.WorkloadBench;
import java.io.ByteArrayOutputStream;
import java.io.OutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import org.apache.hadoop.fs.FSDataInputStream;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.FileSystem;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The five workloads, each spark-submitted as its own application, at a tiny size: the main
 * job on blob:// (its default store, a Týr node embedded in this JVM) and file://, every
 * output checked; and a corrupted output is caught.
 */
class WorkloadsIT {
  @TempDir
  Path dir;

  @Test
  void mainJobRunsAndChecksAllFiveWorkloadsOnBlobAndFile() throws Exception {
    ByteArrayOutputStream buf = new ByteArrayOutputStream();
    List<WorkloadBench.Result> results;
    try (PrintStream out = new PrintStream(buf, true, StandardCharsets.UTF_8)) {
      results = MainJob.run(new String[] {"--size", "512k", "--stores", "embedded,file",
          "--data-dir", dir.resolve("tyr").toString(), "--work-dir", dir.resolve("work").toString(),
          "--results", dir.resolve("results").toString()}, out);
    }
    String report = buf.toString(StandardCharsets.UTF_8);
    System.out.println(report);

    assertThat(results).hasSize(10);
    for (Workload w : Workload.values()) {
      assertThat(results).filteredOn(r -> r.workload() == w)
          .extracting(WorkloadBench.Result::store).containsExactly("file", "embedded");
    }
    for (WorkloadBench.Result r : results) {
      assertThat(r.check()).as("check of %s on %s", r.workload(), r.store()).isEqualTo("ok");
      assertThat(r.bytesRead()).as("bytes read by %s on %s", r.workload(), r.store())
          .isPositive();
      // every workload commits one output through a classic committer: at least one mkdir
      // (its _temporary directory), the rmdir of it, and one listing of its input
      assertThat(r.calls().get("trace.dir_mkdir")).isPositive();
      assertThat(r.calls().get("trace.dir_rmdir")).isPositive();
      assertThat(r.calls().get("trace.dir_open_input")).isEqualTo(1);
      if (r.store().equals("embedded")) {
        // BlobFS's own statistics and the tracer count the same calls
        assertThat(r.calls().get("op_create") + r.calls().get("op_create_non_recursive"))
            .as("creates of %s", r.workload()).isEqualTo(r.calls().get("trace.create"));
        assertThat(r.calls().get("op_rename")).isEqualTo(r.calls().get("trace.rename"));
        assertThat(r.calls().get("op_mkdirs")).isEqualTo(r.calls().get("trace.mkdirs"));
        assertThat(r.calls().get("op_delete")).isEqualTo(r.calls().get("trace.delete"));
      }
    }
    assertThat(report).contains("opendir input", "rmdir", "getFileStatus", "write MB/s");
    assertThat(Files.readString(dir.resolve("results/main-job.md")))
        .contains("### decision-tree");
    assertThat(Files.size(dir.resolve("results/storage-calls-embedded.png"))).isPositive();
  }

  @Test
  void aCorruptedOutputFailsItsCheck() throws Exception {
    String run = "corrupt-" + UUID.randomUUID().toString().substring(0, 8);
    List<StoreTarget> stores = List.of(
        StoreTarget.local("file", dir.resolve("file-store")),
        StoreTarget.blob("memory", "e2e-" + run, run, Map.of("type", "memory"), "none"));
    WorkloadBench bench = new WorkloadBench(new WorkloadBench.Options(256 << 10, 3, "local[2]",
        List.of(Workload.TOKENIZER), Map.of("spark.ui.enabled", "false",
            "spark.driver.host", "127.0.0.1", "spark.driver.bindAddress", "127.0.0.1"),
        SparkSubmitRunner.appJar(dir.resolve("jar")), false), line -> { });
    List<WorkloadBench.Result> results = new ArrayList<>();
    for (StoreTarget s : stores) {
      FileSystem fs = s.base().getFileSystem(s.configuration());
      org.apache.hadoop.fs.Path base = fs.makeQualified(s.base());
      org.apache.hadoop.fs.Path input = new org.apache.hadoop.fs.Path(base, "in");
      Workload.TOKENIZER.input().generate(fs, input, Workload.TOKENIZER.input().spec(256 << 10, 3));
      org.apache.hadoop.fs.Path out = new org.apache.hadoop.fs.Path(base, "out");
      results.add(bench.runOne(s, fs, Workload.TOKENIZER, input, out));
      if (s.name().equals("memory")) {
        assertThat(bench.check(Workload.TOKENIZER, fs, out)).isEqualTo("ok");
        corruptOneLine(fs, out);
        assertThat(bench.check(Workload.TOKENIZER, fs, out))
            .as("check after one bigram was changed").isEqualTo("not the reference's lines");
        fs.delete(new org.apache.hadoop.fs.Path(out, "_SUCCESS"), false);
        assertThat(bench.check(Workload.TOKENIZER, fs, out)).isEqualTo("no _SUCCESS");
      }
    }
    assertThat(results).extracting(WorkloadBench.Result::check).containsExactly("ok", "ok");
  }

  /** Rewrites the first part file with its first line changed, same length and count. */
  private static void corruptOneLine(FileSystem fs, org.apache.hadoop.fs.Path out)
      throws Exception {
    FileStatus[] parts = fs.listStatus(out, p -> p.getName().startsWith("part-"));
    Arrays.sort(parts, Comparator.comparing(s -> s.getPath().getName()));
    byte[] bytes;
    try (FSDataInputStream in = fs.open(parts[0].getPath())) {
      bytes = in.readAllBytes();
    }
    bytes[0] = (byte) (bytes[0] == 'z' ? 'y' : 'z');
    try (OutputStream o = fs.create(parts[0].getPath(), true)) {
      o.write(bytes);
    }
  }
}
