package io.blobfs.fuse;

import io.blobfs.namespace.BlobNamespace;
import io.blobfs.namespace.FileReader;
import io.blobfs.namespace.FsPath;
import io.blobfs.namespace.StoreCallCounters;
import io.blobfs.store.BlobStore;
import io.blobfs.store.BlobStoreProvider;
import io.blobfs.store.BlobStores;
import io.blobfs.tyr.server.TyrServerProcess;
import java.io.File;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Assumptions;

/**
 * A mount of one of the stores, as the ITs parameterised by store use it: an in-memory
 * store of this JVM, a Týr server process of its own, or a RADOS namespace of its own on
 * the Ceph cluster that {@code scripts/ceph/cluster.sh} starts (with
 * {@code BLOBFS_CEPH_ROOT} and {@code BLOBFS_CEPH_PORT_BASE} from the environment, as the
 * RADOS module's tests). {@link #client} opens another client of the same store: another
 * host, or a blob:// job.
 */
final class MountedStore implements AutoCloseable {
  /** The stores a mount runs over. */
  enum Backend { MEMORY, TYR, RADOS }

  private final String name;
  private final Map<String, String> conf;
  private final TyrServerProcess server;
  private BlobMount mount;
  private final Path mnt;
  private final List<BlobStore> clients = new ArrayList<>();

  private MountedStore(String name, Map<String, String> conf, TyrServerProcess server,
      BlobMount mount, Path mnt) {
    this.name = name;
    this.conf = conf;
    this.server = server;
    this.mount = mount;
    this.mnt = mnt;
  }

  /**
   * Mounts a fresh store of kind {@code backend} at {@code tmp/mnt} (staging under
   * {@code tmp}); {@code extra} adds configuration keys (".KEY": the store profile's
   * {@code fs.blob.store.NAME.KEY}). Skips, saying why, as
   * {@link Mounts#assumeMountable} does, and where Ceph cannot run.
   */
  static MountedStore mount(Backend backend, Path tmp, Map<String, String> extra)
      throws IOException {
    return mount(backend, tmp, extra, backend == Backend.RADOS ? ceph() : Map.of());
  }

  /**
   * As {@link #mount(Backend, Path, Map)}, a RADOS store on the cluster whose
   * {@code cluster.sh start} exports are {@code cephEnv} (a cluster of the test's own,
   * {@link PrivateCephCluster}) instead of the run's shared one.
   */
  static MountedStore mount(Backend backend, Path tmp, Map<String, String> extra,
      Map<String, String> cephEnv) throws IOException {
    String name = backend.name().toLowerCase() + "-" + System.nanoTime();
    String p = "fs.blob.store." + name + ".";
    Map<String, String> conf = new HashMap<>();
    TyrServerProcess server = null;
    switch (backend) {
      case MEMORY -> {
        conf.put(p + "type", "memory");
        // early uploads every 64 KiB (not 8 MiB), so that the tests' small files take that
        // path too, with the overwrites, truncates and renames that break it
        conf.put(MountConfig.EARLY_UPLOAD, "64k");
      }
      case TYR -> {
        server = new TyrServerProcess(Files.createDirectories(tmp.resolve("tyr"))).start();
        conf.put(p + "type", "tyr");
        conf.put(p + "address", server.address());
      }
      case RADOS -> {
        conf.put(p + "type", "rados");
        conf.putAll(radosOptions(p, cephEnv, "fuse-" + System.nanoTime()));
      }
    }
    conf.put(p + "stripe.size", "1m"); // small stripes: the tests' files span many
    conf.put(MountConfig.STAGING_DIR, tmp.resolve("staging").toString());
    // a key starting with "." is one of this store's profile: fs.blob.store.NAME + key
    extra.forEach((k, v) -> conf.put(k.startsWith(".") ? p + k.substring(1) : k, v));
    Path mnt = tmp.resolve("mnt");
    try {
      return new MountedStore(name, conf, server, BlobMount.mount(conf, name, false, mnt), mnt);
    } catch (IOException | RuntimeException e) {
      if (server != null) {
        server.close();
      }
      throw e;
    }
  }

  Path mnt() {
    return mnt;
  }

  BlobMount mount() {
    return mount;
  }

  /** The Týr server process that serves this mount's store, for a test that stops it. */
  long serverPid() {
    if (server == null) {
      throw new IllegalStateException(name + " has no Týr server process of its own");
    }
    return server.pid();
  }

  /**
   * Unmounts (publishing every open file) and mounts the same store again at the same
   * place, staging under {@code staging}: what the store holds after an unmount, as a
   * fresh mount sees it. The store (a server process, a RADOS namespace) stays.
   */
  void remount(Path staging) throws IOException {
    mount.close();
    Map<String, String> again = new HashMap<>(conf);
    again.put(MountConfig.STAGING_DIR, staging.toString());
    mount = BlobMount.mount(again, name, false, mnt);
  }

  String name() {
    return name;
  }

  Map<String, String> conf() {
    return conf;
  }

  /** Another client of the store, closed with this. */
  BlobNamespace client() throws IOException {
    String type = MountConfig.parse(conf, name, Map.of()).storeType();
    BlobStoreProvider provider = BlobStores.provider(type);
    MountConfig c = MountConfig.parse(conf, name, provider.fileSystemDefaults());
    BlobStore store = provider.open(name, c.backend());
    clients.add(store);
    return new BlobNamespace(store, c.namespace(), StoreCallCounters.NONE);
  }

  /** The bytes of {@code path} as another client of the store reads them. */
  byte[] storeBytes(String path) throws Exception {
    FileReader r = client().open(FsPath.parse(path));
    ByteBuffer b = ByteBuffer.allocate((int) r.length());
    while (b.hasRemaining() && r.read(b.position(), b).get() > 0) { }
    return b.array();
  }

  @Override
  public void close() throws IOException {
    try {
      mount.close();
    } finally {
      for (BlobStore s : clients) {
        s.close();
      }
      if (server != null) {
        server.close();
      }
    }
  }

  // ---------------------------------------------------------------- Ceph

  private static Map<String, String> cephEnv;

  /** The native single-OSD cephx cluster of this run, started once (cluster.sh start). */
  static synchronized Map<String, String> ceph() throws IOException {
    if (cephEnv == null) {
      cephEnv = clusterSh(Map.of(), "start");
    }
    return cephEnv;
  }

  /**
   * Runs {@code scripts/ceph/cluster.sh CMD} (after ensure-ceph.sh for start) with
   * {@code env} added to this JVM's environment (a cluster of its own:
   * BLOBFS_CEPH_ROOT, BLOBFS_CEPH_PORT_BASE); returns the shell exports it printed.
   */
  static Map<String, String> clusterSh(Map<String, String> env, String cmd)
      throws IOException {
    String script = "bash '" + repoRoot().resolve("scripts/ceph/cluster.sh") + "' " + cmd;
    if (cmd.equals("start")) {
      script = "bash '" + repoRoot().resolve("scripts/ceph/ensure-ceph.sh") + "' >&2 && " + script;
    }
    String out = run(10, env, "bash", "-c", script);
    Map<String, String> vars = new HashMap<>();
    for (String line : out.split("\n")) {
      String l = line.trim();
      if (l.startsWith("export ") && l.indexOf('=') > 7) {
        String v = l.substring(l.indexOf('=') + 1);
        vars.put(l.substring(7, l.indexOf('=')), v.replaceAll("^'|'$", ""));
      }
    }
    if (cmd.equals("start") && !vars.containsKey("CEPH_CONF")) {
      throw new IOException("cluster.sh start printed no CEPH_CONF:\n" + out);
    }
    return vars;
  }

  /** A RADOS store on {@code pool} (default the cluster's) as client.blobfs-all. */
  static Map<String, String> radosOptions(String prefix, Map<String, String> env,
      String namespace) {
    Map<String, String> o = new HashMap<>();
    o.put(prefix + "conf", env.get("CEPH_CONF"));
    o.put(prefix + "client-id", "blobfs-all");
    o.put(prefix + "keyring", env.get("BLOBFS_CEPH_ALL_CLIENT_KEYRING"));
    o.put(prefix + "pool", env.get("BLOBFS_CEPH_POOL"));
    o.put(prefix + "namespace", namespace);
    return o;
  }

  /** Runs a ceph admin command on the cluster; returns its output. */
  static String cephAdmin(String... args) throws IOException {
    return cephAdmin(ceph(), args);
  }

  /** Runs a ceph admin command on the cluster whose cluster.sh exports are {@code env}. */
  static String cephAdmin(Map<String, String> env, String... args) throws IOException {
    List<String> cmd = new ArrayList<>(List.of("ceph", "--conf", env.get("CEPH_CONF"),
        "--keyring", env.get("CEPH_KEYRING")));
    cmd.addAll(List.of(args));
    return run(2, cmd.toArray(String[]::new));
  }

  private static String run(int minutes, String... cmd) throws IOException {
    return run(minutes, Map.of(), cmd);
  }

  private static String run(int minutes, Map<String, String> env, String... cmd)
      throws IOException {
    File log = File.createTempFile("fuse-ceph", ".log");
    try {
      ProcessBuilder pb = new ProcessBuilder(cmd).redirectError(ProcessBuilder.Redirect.INHERIT)
          .redirectOutput(log);
      pb.environment().putAll(env);
      Process p = pb.start();
      if (!p.waitFor(minutes, TimeUnit.MINUTES)) {
        p.destroyForcibly();
        throw new IOException(String.join(" ", cmd) + ": over " + minutes + " min");
      }
      String out = Files.readString(log.toPath(), StandardCharsets.UTF_8);
      if (p.exitValue() != 0) {
        String why = String.join(" ", cmd) + " failed (" + p.exitValue() + "): " + out;
        if (cmd[cmd.length - 1].endsWith("start") && !"true".equals(System.getenv("CI"))
            && !Files.isExecutable(Path.of("/usr/bin/ceph"))) {
          Assumptions.abort("RADOS mount tests skipped: Ceph is not installable here: " + why);
        }
        throw new IOException(why);
      }
      return out;
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new java.io.InterruptedIOException();
    } finally {
      log.delete();
    }
  }

  private static Path repoRoot() {
    for (Path d = Path.of("").toAbsolutePath(); d != null; d = d.getParent()) {
      if (Files.exists(d.resolve("scripts/ceph/cluster.sh"))) {
        return d;
      }
    }
    throw new IllegalStateException("no scripts/ceph/cluster.sh above " + Path.of("").toAbsolutePath());
  }
}
