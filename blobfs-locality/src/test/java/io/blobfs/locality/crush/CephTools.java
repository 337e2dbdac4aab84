package io.blobfs.locality.crush;

import static org.junit.jupiter.api.Assertions.fail;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Assumptions;

/** Runs Ceph's offline tools (crushtool, osdmaptool) with bounded time. */
final class CephTools {
  private CephTools() {}

  /** Makes sure crushtool and osdmaptool are on PATH; fails under CI=true, else skips. */
  static void require() throws Exception {
    if (present()) {
      return;
    }
    Path script = Path.of("..", "scripts", "ceph", "ensure-ceph.sh").toAbsolutePath().normalize();
    if (Files.isRegularFile(script)) {
      try {
        run(List.of("bash", script.toString()), null, 900);
      } catch (AssertionError | IOException e) {
        // fall through to the check below
      }
    }
    if (present()) {
      return;
    }
    String msg = "crushtool/osdmaptool unavailable (tried " + script + ")";
    if ("true".equalsIgnoreCase(System.getenv("CI"))) {
      fail(msg);
    }
    Assumptions.abort(msg);
  }

  private static boolean present() {
    for (String tool : List.of("crushtool", "osdmaptool")) {
      try {
        Process p = new ProcessBuilder("sh", "-c", "command -v " + tool)
            .redirectErrorStream(true).start();
        if (!p.waitFor(10, TimeUnit.SECONDS) || p.exitValue() != 0) {
          p.destroyForcibly();
          return false;
        }
      } catch (IOException | InterruptedException e) {
        return false;
      }
    }
    return true;
  }

  /** Runs a command, returns its stdout; fails on non-zero exit or timeout. */
  static String run(List<String> cmd, Path dir, int timeoutSeconds) throws IOException {
    ProcessBuilder pb = new ProcessBuilder(new ArrayList<>(cmd));
    if (dir != null) {
      pb.directory(dir.toFile());
    }
    Path err = Files.createTempFile("cephtool", ".err");
    Path outFile = Files.createTempFile("cephtool", ".out");
    pb.redirectError(err.toFile());
    pb.redirectOutput(outFile.toFile());
    Process p = pb.start();
    try {
      if (!p.waitFor(timeoutSeconds, TimeUnit.SECONDS)) {
        p.destroyForcibly();
        fail("timed out after " + timeoutSeconds + " s: " + cmd);
      }
    } catch (InterruptedException e) {
      p.destroyForcibly();
      Thread.currentThread().interrupt();
      fail("interrupted: " + cmd);
    }
    String stderr = Files.readString(err, StandardCharsets.UTF_8);
    byte[] out = Files.readAllBytes(outFile);
    Files.deleteIfExists(err);
    Files.deleteIfExists(outFile);
    if (p.exitValue() != 0) {
      fail("exit " + p.exitValue() + " from " + cmd + ": " + stderr);
    }
    return new String(out, StandardCharsets.UTF_8);
  }
}
