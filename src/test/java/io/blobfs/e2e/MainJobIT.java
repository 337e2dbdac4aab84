package io.blobfs.e2e;

import static org.assertj.core.api.Assertions.assertThat;

import io.blobfs.bench.MainJob;
import io.blobfs.bench.ResultTable;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.UUID;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * MainJob end to end on a small input, on its default store (a Týr node embedded in this
 * JVM, logging to a directory) with directory markers kept (the other tests use the
 * default, none): every workload's output checks out and the report lists the calls.
 */
class MainJobIT {
  @TempDir
  Path dataDir;

  @Test
  void mainJobReportsCheckedWorkloadsWithStorageCalls() throws Exception {
    String store = "e2e-mainjob-" + UUID.randomUUID().toString().substring(0, 8);
    ByteArrayOutputStream buf = new ByteArrayOutputStream();
    ResultTable table;
    try (PrintStream out = new PrintStream(buf, true, StandardCharsets.UTF_8)) {
      table = MainJob.run(new String[] {
          "--size", "1m", "--files", "2", "--partitions", "2", "--store", store,
          "--markers", "keep", "--committers", "classic,manifest",
          "--data-dir", dataDir.toString()}, out);
    }
    try (Stream<Path> logs = Files.list(dataDir)) {
      assertThat(logs.filter(p -> p.toString().endsWith(".tyrlog")).count())
          .as("the embedded Týr node's log").isPositive();
    }
    String report = buf.toString(StandardCharsets.UTF_8);
    System.out.println(report);

    List<ResultTable.Row> rows = table.rows();
    assertThat(rows).extracting(ResultTable.Row::workload).containsExactly(
        "generate", "grep/classic", "sort/classic", "grep/manifest", "sort/manifest");
    for (ResultTable.Row r : rows) {
      assertThat(r.check()).as("check of %s", r.workload()).isEqualTo(ResultTable.CHECK_OK);
      assertThat(r.seconds()).isPositive();
      assertThat(r.calls().get("op_create")).as("creates in %s", r.workload()).isPositive();
    }
    assertThat(report).contains("workload", "getFileStatus", "listStatus", "rename",
        "bytes written", "grep/manifest", E2eSupport.BLOBFS_IMPL, "(tyr)");
  }
}
