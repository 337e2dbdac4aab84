package io.blobfs.e2e;

import static org.assertj.core.api.Assertions.assertThat;

import io.blobfs.bench.MainJob;
import io.blobfs.bench.ResultTable;
import io.blobfs.store.memory.InMemoryBlobStoreProvider;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.UUID;
import org.junit.jupiter.api.Test;

/**
 * MainJob end to end on a small input, with directory markers kept (the other tests use
 * the default, none): every workload's output checks out and the report lists the calls.
 */
class MainJobIntegrationTest {

  @Test
  void mainJobReportsCheckedWorkloadsWithStorageCalls() throws Exception {
    String store = "e2e-mainjob-" + UUID.randomUUID().toString().substring(0, 8);
    ByteArrayOutputStream buf = new ByteArrayOutputStream();
    ResultTable table;
    try (PrintStream out = new PrintStream(buf, true, StandardCharsets.UTF_8)) {
      table = MainJob.run(new String[] {
          "--size", "1m", "--files", "2", "--partitions", "2", "--store", store,
          "--markers", "keep", "--committers", "classic,manifest"}, out);
    } finally {
      InMemoryBlobStoreProvider.drop(store);
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
        "bytes written", "grep/manifest", E2eSupport.BLOBFS_IMPL);
  }
}
