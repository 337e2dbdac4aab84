package io.blobfs.bench.services;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code scripts/lib/bench-services.sh}'s Týr server, started as the Spark benchmark
 * scripts start it: on a port within {@code BLOBFS_TYR_PORT_BASE}'s hundred (not port 0,
 * whose ephemeral port any outgoing connection may take), and on another when the one
 * picked is taken. Run in a directory of its own: the function clears the server's data
 * directory under the working directory.
 */
@Timeout(value = 5, unit = TimeUnit.MINUTES)
class BenchServicesScriptIT {
  private static final Path LIB =
      Path.of("../../scripts/lib/bench-services.sh").toAbsolutePath().normalize();
  private static final Pattern ADDRESS = Pattern.compile("ADDRESS=127\\.0\\.0\\.1:(\\d+)");

  @TempDir
  Path dir;

  private static int portBase() {
    String base = System.getenv("BLOBFS_TYR_PORT_BASE");
    return base != null && !base.isBlank() ? Integer.parseInt(base.trim())
        : 21_000 + 100 * ThreadLocalRandom.current().nextInt(50);
  }

  /** Runs {@code body} after sourcing the library, with the test's classpath; its output. */
  private String bash(int base, String body) throws IOException, InterruptedException {
    ProcessBuilder pb = new ProcessBuilder("bash", "-c", "source " + LIB + "\n"
        + "BENCH_CP=\"$TEST_CP\"\n" + body).directory(dir.toFile()).redirectErrorStream(true);
    pb.environment().put("TEST_CP", System.getProperty("java.class.path"));
    pb.environment().put("BLOBFS_TYR_PORT_BASE", Integer.toString(base));
    Process p = pb.start();
    String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    assertTrue(p.waitFor(3, TimeUnit.MINUTES), out);
    assertEquals(0, p.exitValue(), out);
    return out;
  }

  private static int port(String out) {
    Matcher m = ADDRESS.matcher(out);
    assertTrue(m.find(), out);
    return Integer.parseInt(m.group(1));
  }

  @Test
  void theServerListensWithinThePortBase() throws Exception {
    int base = portBase();
    String out = bash(base, "bench_start_tyr || exit 1\n"
        + "echo ADDRESS=$TYR_ADDRESS\nbench_stop_services\n");
    int port = port(out);
    assertTrue(port >= base && port < base + 100, "port " + port + ", base " + base);
  }

  @Test
  void aTakenPortIsTriedAgainWithAnother() throws Exception {
    int base = portBase();
    try (ServerSocket taken = new ServerSocket()) {
      taken.bind(new InetSocketAddress("127.0.0.1", base + 50));
      // the first pick is the taken port (a file marks it made: picks run in subshells)
      String out = bash(base, "bench_tyr_port() { if [ ! -e picked ]; then touch picked;"
          + " echo " + taken.getLocalPort() + "; else echo " + (base + 51) + "; fi; }\n"
          + "bench_start_tyr || exit 1\necho ADDRESS=$TYR_ADDRESS\nbench_stop_services\n");
      assertTrue(out.contains("port " + taken.getLocalPort() + " taken, trying another"), out);
      assertEquals(base + 51, port(out));
    }
  }
}
