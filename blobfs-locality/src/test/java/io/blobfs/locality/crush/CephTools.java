package io.blobfs.locality.crush;

import static org.junit.jupiter.api.Assertions.fail;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Assumptions;

/**
 * Runs Ceph's offline tools (crushtool, osdmaptool) with bounded time, and reads what
 * osdmaptool prints. Shared with blobfs-rados' tests (this module's test-jar), which run the
 * same tools on the live cluster's exported OSD map.
 */
public final class CephTools {
  private CephTools() {}

  /** Makes sure crushtool and osdmaptool are on PATH; fails under CI=true, else skips. */
  public static void require() throws Exception {
    String missing = ensure();
    if (missing == null) {
      return;
    }
    if ("true".equalsIgnoreCase(System.getenv("CI"))) {
      fail(missing);
    }
    Assumptions.abort(missing);
  }

  /**
   * Puts crushtool and osdmaptool on PATH if they are not (scripts/ceph/ensure-ceph.sh);
   * returns null when they are there, else why not.
   */
  public static String ensure() {
    if (present()) {
      return null;
    }
    Path script = Path.of("..", "scripts", "ceph", "ensure-ceph.sh").toAbsolutePath().normalize();
    if (Files.isRegularFile(script)) {
      try {
        run(List.of("bash", script.toString()), null, 900);
      } catch (AssertionError | IOException e) {
        // fall through to the check below
      }
    }
    return present() ? null : "crushtool/osdmaptool unavailable (tried " + script + ")";
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
  public static String run(List<String> cmd, Path dir, int timeoutSeconds) throws IOException {
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
  /**
   * One PG as {@code osdmaptool --test-map-pgs-dump-all} prints it: raw (CRUSH's output with
   * its first OSD, before upmaps, down OSDs and primary affinity), up and acting sets with
   * their primaries. (Plain {@code --test-map-pgs-dump} prints only the acting set and acting
   * primary.) Erasure-coded holes appear as 2147483647 (CRUSH_ITEM_NONE), no primary as -1.
   */
  public record PgMapping(String pgid, List<Integer> raw, int rawPrimary, List<Integer> up,
      int upPrimary, List<Integer> acting, int actingPrimary) {
    /** "pgid up=[..]/p acting=[..]/p", as the tests render their own placements. */
    public String render() {
      return pgid + " up=" + up + "/" + upPrimary + " acting=" + acting + "/" + actingPrimary;
    }
  }

  /** One of our placements rendered as {@link PgMapping#render()} renders Ceph's. */
  public static String render(OsdMap.Placement p) {
    return p.pg() + " up=" + p.up() + "/" + p.upPrimary() + " acting=" + p.acting() + "/"
        + p.actingPrimary();
  }

  /** What {@code osdmaptool --test-map-object} prints: the PG and its acting set. */
  public record ObjectMapping(String pgid, List<Integer> acting) {}

  private static final Pattern PG_ALL = Pattern.compile("^(\\d+\\.[0-9a-f]+)"
      + " raw \\(\\[([^\\]]*)\\], p(-?\\d+)\\)"
      + " up \\(\\[([^\\]]*)\\], p(-?\\d+)\\)"
      + " acting \\(\\[([^\\]]*)\\], p(-?\\d+)\\)$");
  private static final Pattern OBJECT =
      Pattern.compile("(?m)^ object '(.*)' -> (\\S+) -> \\[([^\\]]*)\\]$");
  private static final Pattern EPOCH = Pattern.compile("(?m)^epoch (\\d+)$");

  /**
   * Every PG of a pool of the OSD map file {@code map}: {@code osdmaptool MAP [options]
   * --test-map-pgs-dump-all --pool ID}, by pgid in PG order. {@code options} such as
   * {@code --mark-up-in} change the map in memory only.
   */
  public static Map<String, PgMapping> mapPgs(Path map, int pool, List<String> options)
      throws IOException {
    List<String> cmd = new ArrayList<>(List.of("osdmaptool", map.toString()));
    cmd.addAll(options);
    cmd.addAll(List.of("--test-map-pgs-dump-all", "--pool", String.valueOf(pool)));
    Map<String, PgMapping> pgs = new LinkedHashMap<>();
    for (String line : run(cmd, null, 60).split("\n")) {
      Matcher m = PG_ALL.matcher(line.strip());
      if (m.matches()) {
        pgs.put(m.group(1), new PgMapping(m.group(1), ints(m.group(2)),
            Integer.parseInt(m.group(3)), ints(m.group(4)),
            Integer.parseInt(m.group(5)), ints(m.group(6)), Integer.parseInt(m.group(7))));
      }
    }
    return pgs;
  }

  /**
   * One object: {@code osdmaptool MAP [options] --test-map-object NAME --pool ID}. osdmaptool
   * takes no namespace or locator key here (the object is in the pool's default namespace).
   */
  public static ObjectMapping mapObject(Path map, String name, int pool, List<String> options)
      throws IOException {
    List<String> cmd = new ArrayList<>(List.of("osdmaptool", map.toString()));
    cmd.addAll(options);
    cmd.addAll(List.of("--test-map-object", name, "--pool", String.valueOf(pool)));
    String out = run(cmd, null, 30);
    Matcher m = OBJECT.matcher(out);
    // the name travels as UTF-8 (a lone surrogate, e.g. half an emoji cut off, becomes '?',
    // as it does in our hash, which hashes the name's UTF-8 bytes)
    String sent = new String(name.getBytes(StandardCharsets.UTF_8), StandardCharsets.UTF_8);
    if (!m.find() || !m.group(1).equals(sent)) {
      fail("osdmaptool --test-map-object " + name + ": unexpected output: " + out);
    }
    return new ObjectMapping(m.group(2), ints(m.group(3)));
  }

  /** The epoch of an OSD map file ({@code osdmaptool --print}). */
  public static int epoch(Path map) throws IOException {
    String out = run(List.of("osdmaptool", "--print", map.toString()), null, 30);
    Matcher m = EPOCH.matcher(out);
    if (!m.find()) {
      fail("no epoch in osdmaptool --print " + map + ": " + out);
    }
    return Integer.parseInt(m.group(1));
  }

  private static List<Integer> ints(String csv) {
    List<Integer> out = new ArrayList<>();
    for (String s : csv.split(",")) {
      if (!s.isBlank()) {
        out.add(Integer.parseInt(s.strip()));
      }
    }
    return out;
  }
}
