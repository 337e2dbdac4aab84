package io.blobfs.rados;

import java.io.File;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.apache.hadoop.conf.Configuration;

/**
 * The real Ceph cluster the RADOS tests run on, once per JVM: in a container of the local
 * image built from {@code docker/Dockerfile} when the run asks for Docker (see
 * {@link DockerCeph}), else natively through the project's own
 * {@code scripts/ceph/cluster.sh} (which installs Ceph from Debian's packages if needed).
 * When Ceph cannot be installed (not root, no package source) the native tests are
 * skipped, with the reason; under CI they fail instead. A cluster that is installed but
 * does not start always fails the tests.
 */
public final class CephTestCluster {
  /** What {@code cluster.sh env} exports. */
  public record Env(String conf, String adminKeyring, String clientKeyring, String pool,
      String otherPool, String monHost, String dir, boolean cephx) {}

  private static final Map<String, Env> STARTED = new HashMap<>();
  /**
   * Why a cluster did not start in this JVM: every later test class asking for it fails at
   * once with the same cause, instead of each waiting out cluster.sh's start timeout again
   * (eleven classes once spent 43 min of a CI run that way).
   */
  private static final Map<String, IOException> FAILED = new HashMap<>();

  private CephTestCluster() {}

  /** The single-OSD cluster with cephx. */
  public static Env single() throws IOException {
    return start("single", "cephx");
  }

  public static synchronized Env start(String layout, String auth) throws IOException {
    String id = layout + "-" + auth;
    Env env = STARTED.get(id);
    IOException failed = FAILED.get(id);
    if (failed != null) {
      throw new IOException("Ceph cluster " + id + " failed to start earlier in this JVM", failed);
    }
    if (env == null) {
      Map<String, String> vars = DockerCeph.startOrFallBack(layout, auth);
      if (vars == null) {
        ensureCephInstallable();
        try {
          vars = run("start", "--layout", layout, "--auth", auth);
        } catch (IOException e) {
          FAILED.put(id, e);
          throw e;
        }
        System.out.printf("[blobfs-ceph] native cluster %s (scripts/ceph/cluster.sh), monitor %s%n",
            id, vars.get("BLOBFS_CEPH_MON"));
      }
      env = new Env(vars.get("CEPH_CONF"), vars.getOrDefault("CEPH_KEYRING", ""),
          vars.getOrDefault("BLOBFS_CEPH_CLIENT_KEYRING", ""), vars.get("BLOBFS_CEPH_POOL"),
          vars.get("BLOBFS_CEPH_OTHER_POOL"), vars.get("BLOBFS_CEPH_MON"),
          vars.get("BLOBFS_CEPH_DIR"), auth.equals("cephx"));
      STARTED.put(id, env);
    }
    return env;
  }

  /** Runs cluster.sh with arguments and returns the exports it prints. */
  public static Map<String, String> run(String... args) throws IOException {
    Path script = repoRoot().resolve("scripts/ceph/cluster.sh");
    String[] cmd = new String[args.length + 2];
    cmd[0] = "bash";
    cmd[1] = script.toString();
    System.arraycopy(args, 0, cmd, 2, args.length);
    ProcessBuilder pb = new ProcessBuilder(cmd).redirectErrorStream(true);
    File log = File.createTempFile("cluster-sh", ".log");
    pb.redirectOutput(log);
    Process p = pb.start();
    try {
      if (!p.waitFor(8, TimeUnit.MINUTES)) {
        p.destroyForcibly();
        throw new IOException("cluster.sh " + String.join(" ", args) + " did not finish in 8 min");
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new java.io.InterruptedIOException();
    }
    String out = Files.readString(log.toPath(), StandardCharsets.UTF_8);
    log.delete();
    if (p.exitValue() != 0) {
      throw new IOException("cluster.sh " + String.join(" ", args) + " failed (exit "
          + p.exitValue() + "):\n" + out);
    }
    Map<String, String> vars = new HashMap<>();
    for (String line : out.split("\n")) {
      parseExport(line, vars);
    }
    return vars;
  }

  /** Reads one {@code export NAME='value'} line of the cluster's env into {@code vars}. */
  static void parseExport(String line, Map<String, String> vars) {
    String l = line.trim();
    if (l.startsWith("export ")) {
      l = l.substring(7);
    }
    int eq = l.indexOf('=');
    if (eq > 0 && l.substring(0, eq).matches("[A-Z_]+")) {
      String v = l.substring(eq + 1);
      if (v.length() >= 2 && (v.startsWith("\"") || v.startsWith("'"))) {
        v = v.substring(1, v.length() - 1);
      }
      vars.put(l.substring(0, eq), v);
    }
  }

  /** Skips (or, under CI, fails) when Ceph is neither installed nor installable here. */
  private static void ensureCephInstallable() throws IOException {
    Path script = repoRoot().resolve("scripts/ceph/ensure-ceph.sh");
    Process p = new ProcessBuilder("bash", script.toString()).redirectErrorStream(true).start();
    String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    try {
      if (!p.waitFor(10, TimeUnit.MINUTES)) {
        p.destroyForcibly();
        throw new IOException("installing Ceph took over 10 minutes:\n" + out);
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new java.io.InterruptedIOException();
    }
    if (p.exitValue() != 0) {
      String why = "Ceph cannot be installed here: " + out.trim();
      if ("true".equals(System.getenv("CI"))) {
        throw new IOException(why);
      }
      throw new org.opentest4j.TestAbortedException("RADOS tests skipped: " + why);
    }
  }

  /**
   * A Hadoop configuration for {@code blob://STORE/} on this cluster's pool as
   * client.blobfs, in a RADOS namespace of its own so that test runs do not meet.
   */
  public static Configuration hadoopConf(Env env, String store, String namespace) {
    Configuration conf = new Configuration();
    conf.set("fs.blob.impl", "io.blobfs.hadoop.BlobFileSystem");
    String p = "fs.blob.store." + store + ".";
    conf.set(p + "type", "rados");
    storeOptions(env, env.pool(), namespace).forEach((k, v) -> conf.set(p + k, v));
    return conf;
  }

  /**
   * The options of a {@code rados} store on {@code pool} of this cluster, as client.blobfs
   * where cephx is on, in a RADOS namespace of its own so that test runs do not meet.
   */
  public static Map<String, String> storeOptions(Env env, String pool, String namespace) {
    Map<String, String> o = new HashMap<>();
    o.put("pool", pool);
    o.put("conf", env.conf());
    o.put("namespace", namespace);
    if (env.cephx()) {
      o.put("client-id", "blobfs");
      o.put("keyring", env.clientKeyring());
    }
    o.put("op-timeout", "20s");
    o.put("connect-timeout", "20s");
    return o;
  }

  /** Runs the ceph CLI as client.admin on this cluster, bounded in time; returns stdout. */
  public static String ceph(Env env, String... args) throws IOException {
    java.util.List<String> cmd = new java.util.ArrayList<>(java.util.List.of("timeout", "60",
        "ceph", "-c", env.conf(), "--connect-timeout", "20"));
    if (env.cephx()) {
      cmd.addAll(java.util.List.of("--keyring", env.adminKeyring()));
    }
    cmd.addAll(java.util.List.of(args));
    for (int attempt = 1; ; attempt++) {
      Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
      String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
      try {
        p.waitFor();
        if (p.exitValue() == 0) {
          return out;
        }
        // The CLI can ask for the monitor's command list before its session has the
        // monitor map; the monitor then sees a zero fsid and refuses ("handle_command on
        // fsid 0000... != ..." in its log). Nothing was run, so asking again is safe.
        if (attempt < 3 && out.contains("problem getting command descriptions")) {
          Thread.sleep(1000);
          continue;
        }
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new java.io.InterruptedIOException();
      }
      throw new IOException(String.join(" ", cmd) + " failed: " + out);
    }
  }

  static Path repoRoot() {
    Path dir = Path.of("").toAbsolutePath();
    for (Path d = dir; d != null; d = d.getParent()) {
      if (Files.exists(d.resolve("scripts/ceph/cluster.sh"))) {
        return d;
      }
    }
    throw new IllegalStateException("scripts/ceph/cluster.sh not found above " + dir);
  }
}
