package io.blobfs.bench.dfsio;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.List;
import org.junit.jupiter.api.Test;

class DfsioReportTest {
  @Test
  void jvmOptionsNameOneJfrFilePerJob() {
    assertEquals(List.of("-XX:StartFlightRecording=filename=/tmp/rados-read-2.jfr,settings=profile",
            "-Xss2m"),
        DfsioReport.jvmOptions(
            "  -XX:StartFlightRecording=filename=/tmp/%t-%o-%r.jfr,settings=profile \t -Xss2m ",
            "rados", "-read", 2));
  }

  @Test
  void noJvmOptionsWhenUnset() {
    assertEquals(List.of(), DfsioReport.jvmOptions("", "hdfs", "-write", 1));
    assertEquals(List.of(), DfsioReport.jvmOptions("   ", "hdfs", "-write", 1));
  }

  @Test
  void ioSecondsAreTheBytesOverTestDfsiosOwnThroughput() {
    // 1024 MB at 512 MB/s of map I/O: 2 s of the job's 3.5 s were reads or writes
    assertEquals(2.0, DfsioReport.ioSeconds(new DfsioReport.Job(512, 1024 / 3.5, 1024, 3.5)),
        1e-9);
  }
}
