package io.blobfs.rados;

import java.io.IOException;
import java.util.HashMap;
import java.util.Locale;
import java.util.Map;

/**
 * Whether the test cluster comes from a container ({@link CephContainer}), by the
 * environment variable {@code BLOBFS_CEPH_DOCKER}: {@code never} (the default) runs the
 * native cluster; {@code auto} uses Docker when it serves and otherwise says why and falls
 * back to the native cluster, except under CI ({@code CI=true}), where it fails;
 * {@code always} fails when Docker cannot serve. blobfs-rados/pom.xml sets it per failsafe
 * execution. No Testcontainers class is named here, so that modules which use
 * CephTestCluster without Testcontainers on their classpath (blobfs-e2e) can load it.
 */
final class DockerCeph {
  enum Mode { NEVER, AUTO, ALWAYS }

  /** Docker cannot serve the cluster, for the reason in the message. */
  static final class Unavailable extends Exception {
    private static final long serialVersionUID = 1L;

    Unavailable(String why) {
      super(why);
    }
  }

  /** Why Docker could not serve a cluster: every later test fails or falls back at once. */
  private static final Map<String, Unavailable> FAILED = new HashMap<>();

  private DockerCeph() {}

  static Mode mode() {
    String v = System.getenv().getOrDefault("BLOBFS_CEPH_DOCKER", "never");
    try {
      return Mode.valueOf(v.trim().toUpperCase(Locale.ROOT));
    } catch (IllegalArgumentException e) {
      throw new IllegalArgumentException("BLOBFS_CEPH_DOCKER=" + v
          + ": expected never, auto or always", e);
    }
  }

  /**
   * The cluster's exports from a container, or null when the mode is never, or auto and
   * Docker cannot serve (the reason printed): the caller then starts the native cluster.
   * Called under CephTestCluster's lock.
   */
  static Map<String, String> startOrFallBack(String layout, String auth) throws IOException {
    Mode mode = mode();
    if (mode == Mode.NEVER) {
      return null;
    }
    String id = layout + "-" + auth;
    try {
      Unavailable failed = FAILED.get(id);
      if (failed != null) {
        throw failed;
      }
      try {
        return CephContainer.start(layout, auth);
      } catch (LinkageError e) {
        throw new Unavailable("Testcontainers is not on this module's test classpath (" + e + ")");
      }
    } catch (Unavailable e) {
      FAILED.put(id, e);
      String why = "Ceph in Docker (BLOBFS_CEPH_DOCKER=" + mode.name().toLowerCase(Locale.ROOT)
          + "): " + e.getMessage();
      if (mode == Mode.ALWAYS || "true".equals(System.getenv("CI"))) {
        throw new IOException(why);
      }
      System.out.println("[blobfs-ceph] " + why + "; falling back to the native cluster");
      return null;
    }
  }
}
