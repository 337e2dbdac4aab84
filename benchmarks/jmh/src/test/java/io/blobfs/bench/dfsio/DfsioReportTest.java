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
}
