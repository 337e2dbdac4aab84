package io.blobfs.tyr.server;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.TimeUnit;

/**
 * A child process run to its end within a bound, as the tests that start a JVM of their
 * own need: its output goes to a file (reading a pipe to its end first would wait for
 * ever on a child that hangs, and the timeout would never apply), and a child still
 * running at the bound is killed, so that it keeps no port or file for the next test.
 */
record ChildProcess(int exitValue, String output) {

  static ChildProcess run(ProcessBuilder pb, Path log, Duration bound)
      throws IOException, InterruptedException {
    Process p = pb.redirectErrorStream(true).redirectOutput(log.toFile()).start();
    try {
      if (!p.waitFor(bound.toMillis(), TimeUnit.MILLISECONDS)) {
        throw new AssertionError("child still running after " + bound + ":\n"
            + Files.readString(log, StandardCharsets.UTF_8));
      }
      return new ChildProcess(p.exitValue(), Files.readString(log, StandardCharsets.UTF_8));
    } finally {
      p.destroyForcibly();
    }
  }
}
