package io.blobfs.fuse;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;

/**
 * A single-OSD Ceph cluster of one test's own, for a test that harms it (FaultsIT
 * SIGSTOPs its only OSD): {@code scripts/ceph/cluster.sh} with a root and a monitor port
 * of its own, so the run's shared cluster ({@link MountedStore#ceph}) and the tests that
 * use it after this one are untouched. {@link #close} purges it (stops its daemons,
 * deletes its directory), as {@link #start} first purges whatever a killed earlier run
 * left under the same root.
 *
 * <p>Root: {@code BLOBFS_FUSE_PRIVATE_CEPH_ROOT}, default {@code $TMPDIR/blobfs-ceph-fuse-private-BASE};
 * port base: {@code BLOBFS_FUSE_PRIVATE_CEPH_PORT_BASE}, default {@value #DEFAULT_PORT_BASE}
 * (below Linux's ephemeral ports, 32768 on, which an outgoing connection may hold).
 */
final class PrivateCephCluster implements AutoCloseable {
  static final int DEFAULT_PORT_BASE = 16600;
  /** cluster.sh puts its four (layout, auth) monitors at base + 0, 10, 20 and 30. */
  private static final int PORTS = 40;

  private final Map<String, String> scriptEnv;
  private final Map<String, String> exports;

  private PrivateCephCluster(Map<String, String> scriptEnv, Map<String, String> exports) {
    this.scriptEnv = scriptEnv;
    this.exports = exports;
  }

  /** Starts a fresh cluster (the single-OSD cephx layout); throws if it cannot. */
  static PrivateCephCluster start() throws IOException {
    int base = Integer.parseInt(env("BLOBFS_FUSE_PRIVATE_CEPH_PORT_BASE",
        Integer.toString(DEFAULT_PORT_BASE)));
    int shared = Integer.parseInt(env("BLOBFS_CEPH_PORT_BASE", "16100"));
    if (Math.abs(base - shared) < PORTS) {
      throw new IllegalStateException("BLOBFS_FUSE_PRIVATE_CEPH_PORT_BASE " + base
          + " overlaps the shared cluster's ports (BLOBFS_CEPH_PORT_BASE " + shared + ")");
    }
    String root = env("BLOBFS_FUSE_PRIVATE_CEPH_ROOT",
        Path.of(System.getProperty("java.io.tmpdir"), "blobfs-ceph-fuse-private-" + base)
            .toString());
    if (root.equals(env("BLOBFS_CEPH_ROOT", "/tmp/blobfs-ceph"))) {
      throw new IllegalStateException("the private cluster's root " + root
          + " is the shared cluster's (BLOBFS_CEPH_ROOT)");
    }
    Map<String, String> scriptEnv = Map.of("BLOBFS_CEPH_ROOT", root,
        "BLOBFS_CEPH_PORT_BASE", Integer.toString(base));
    long t0 = System.nanoTime();
    MountedStore.clusterSh(scriptEnv, "purge"); // what a killed run may have left
    PrivateCephCluster c;
    try {
      c = new PrivateCephCluster(scriptEnv, MountedStore.clusterSh(scriptEnv, "start"));
    } catch (IOException | RuntimeException | Error e) {
      MountedStore.clusterSh(scriptEnv, "purge"); // a failed start stops its daemons itself
      throw e;
    }
    System.err.printf("private Ceph cluster under %s (monitor port %d) started in %d s%n",
        root, base, (System.nanoTime() - t0) / 1_000_000_000L);
    return c;
  }

  private static String env(String name, String dflt) {
    String v = System.getenv(name);
    return v == null || v.isBlank() ? dflt : v;
  }

  /** cluster.sh start's exports (CEPH_CONF, keyrings, pool), as {@link MountedStore#ceph}. */
  Map<String, String> exports() {
    return exports;
  }

  /** The pid of the cluster's only OSD, from cluster.sh's pid file. */
  long osdPid() throws IOException {
    Path pidFile = Path.of(exports.get("BLOBFS_CEPH_DIR"), "run", "osd.0.pid");
    return Long.parseLong(Files.readString(pidFile).trim());
  }

  /**
   * Makes the cluster serve again after its OSD was frozen, and waits until it does:
   * Ceph 16 (Pacific) leaves the placement groups of a single OSD that got requests while
   * SIGSTOPped "laggy" after SIGCONT (their read lease ran out, and with no peer nothing
   * renews it), every request to them parked for good (seen here for 15 min; also
   * ceph/ceph-container#1682). Marking the OSD down makes it peer again, which ends that;
   * then cluster.sh's readiness (every PG active+clean) is awaited.
   */
  void recoverFromFreeze() throws IOException {
    MountedStore.cephAdmin(exports, "osd", "down", "0");
    MountedStore.clusterSh(scriptEnv, "wait");
  }

  /** Stops the daemons (an OSD still SIGSTOPped is killed after cluster.sh's grace) and deletes the cluster. */
  @Override
  public void close() throws IOException {
    MountedStore.clusterSh(scriptEnv, "purge"); // the cluster's directory and lock file
    Files.deleteIfExists(Path.of(scriptEnv.get("BLOBFS_CEPH_ROOT"))); // empty by now
  }
}
