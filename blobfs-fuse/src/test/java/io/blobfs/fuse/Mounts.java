package io.blobfs.fuse;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.fail;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Assumptions;

/** What the tests with real mounts share: the skip rule, mounting, running programs. */
final class Mounts {
  private Mounts() {}

  /**
   * Skips, saying why, where a mount is impossible (no /dev/fuse, not root, or a missing
   * program); under {@code CI=true} fails instead, so that CI never passes by skipping.
   */
  static void assumeMountable(String... programs) {
    String why = null;
    if (!Files.exists(Path.of("/dev/fuse"))) {
      why = "no /dev/fuse";
    } else if (!"root".equals(System.getProperty("user.name"))) {
      why = "mounting needs root";
    }
    for (String p : programs) {
      if (why == null && !onPath(p)) {
        why = p + " is not installed (scripts/ensure-tools.sh with BLOBFS_FUSE_TOOLS=1)";
      }
    }
    if (why != null) {
      if ("true".equals(System.getenv("CI"))) {
        fail("FUSE tests cannot run under CI=true: " + why);
      }
      System.err.println("skipping FUSE test: " + why);
      Assumptions.abort(why);
    }
  }

  private static boolean onPath(String program) {
    for (String dir : System.getenv().getOrDefault("PATH", "").split(":")) {
      if (Files.isExecutable(Path.of(dir, program))) {
        return true;
      }
    }
    return false;
  }

  /** A mount of a fresh in-memory store of this JVM named {@code store}. */
  static BlobMount memory(String store, Path mountPoint, Path staging) throws IOException {
    Map<String, String> conf = new HashMap<>();
    conf.put("fs.blob.store." + store + ".type", "memory");
    // small stripes, so that the tests' files span many data blobs
    conf.put("fs.blob.store." + store + ".stripe.size", "1m");
    conf.put(MountConfig.STAGING_DIR, staging.toString());
    // early uploads every 64 KiB (not 8 MiB), so that the tests' small files take that
    // path too, with the overwrites, truncates and renames that break it
    conf.put(MountConfig.EARLY_UPLOAD, "64k");
    return BlobMount.mount(conf, store, false, mountPoint);
  }

  /** Runs {@code cmd} through sh in {@code dir}; fails the test unless it exits 0. */
  static String sh(Path dir, String cmd) throws IOException, InterruptedException {
    Process p = new ProcessBuilder("sh", "-c", cmd).directory(dir.toFile())
        .redirectErrorStream(true).start();
    byte[] out = p.getInputStream().readAllBytes();
    if (!p.waitFor(10, TimeUnit.MINUTES)) {
      p.destroyForcibly();
      fail("timed out: " + cmd);
    }
    String text = new String(out, StandardCharsets.UTF_8);
    assertEquals(0, p.exitValue(), cmd + " failed:\n" + text);
    return text;
  }

  static List<String> lines(String text) {
    return text.isEmpty() ? List.of() : List.of(text.split("\n"));
  }
}
