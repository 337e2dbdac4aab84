package io.blobfs.bench.rados;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/** Runs {@code rados bench} through scripts/ceph/rados-bench.sh and reads its RESULT line. */
final class RadosBench {
  private final String script;
  private final String pool;

  RadosBench(String script, String pool) {
    this.script = script;
    this.pool = pool;
  }

  /** One run; the RESULT fields (mb_per_sec, ops, ...). {@code keep}: leave the objects. */
  Map<String, String> run(String mode, int seconds, long objectSize, int threads, boolean keep)
      throws IOException, InterruptedException {
    List<String> cmd = new ArrayList<>(List.of("bash", script));
    if (keep) {
      cmd.add("--no-cleanup");
    }
    cmd.addAll(List.of(Integer.toString(seconds), Long.toString(objectSize),
        Integer.toString(threads), mode, pool));
    String out = exec(cmd);
    for (String line : out.split("\n")) {
      if (line.startsWith("RESULT ")) {
        Map<String, String> kv = new LinkedHashMap<>();
        for (String part : line.substring(7).trim().split("\\s+")) {
          int eq = part.indexOf('=');
          kv.put(part.substring(0, eq), part.substring(eq + 1));
        }
        return kv;
      }
    }
    throw new IOException("no RESULT line from rados bench:\n" + out);
  }

  /** Removes every object rados bench left in the pool. */
  void cleanup() throws IOException, InterruptedException {
    exec(List.of("bash", script, "cleanup", pool));
  }

  private static String exec(List<String> cmd) throws IOException, InterruptedException {
    Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
    byte[] out = p.getInputStream().readAllBytes();
    if (!p.waitFor(20, TimeUnit.MINUTES) || p.exitValue() != 0) {
      p.destroyForcibly();
      throw new IOException(String.join(" ", cmd) + " failed:\n"
          + new String(out, StandardCharsets.UTF_8));
    }
    return new String(out, StandardCharsets.UTF_8);
  }
}
