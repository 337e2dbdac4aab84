package io.blobfs.bench.rados;

import java.util.Map;
import org.apache.hadoop.conf.Configuration;

/**
 * The project's Ceph cluster as the benchmark scripts export it
 * ({@code eval "$(scripts/ceph/cluster.sh env)"}): the one place benchmarks turn it into
 * store options and a Hadoop configuration.
 */
public final class ClusterEnv {
  private ClusterEnv() {}

  public static boolean present() {
    String pool = System.getenv("BLOBFS_CEPH_POOL");
    return pool != null && !pool.isBlank();
  }

  /** A variable the cluster script exports; a clear error if it is missing. */
  public static String required(String name) {
    String v = System.getenv(name);
    if (v == null || v.isBlank()) {
      throw new IllegalStateException(name + " is not set: run the benchmark through its "
          + "script (scripts/bench-*.sh), which starts the cluster and exports it");
    }
    return v;
  }

  public static String pool() {
    return required("BLOBFS_CEPH_POOL");
  }

  /** Options of a {@code rados} store on the cluster's pool, as client.blobfs. */
  public static Map<String, String> storeOptions(String namespace) {
    return Map.of("type", "rados", "pool", pool(), "conf", required("CEPH_CONF"),
        "client-id", "blobfs", "keyring", required("BLOBFS_CEPH_CLIENT_KEYRING"),
        "namespace", namespace);
  }

  /** A Hadoop configuration with {@code blob://STORE/} bound to the cluster. */
  public static Configuration hadoopConf(String store, String namespace) {
    Configuration c = new Configuration();
    c.set("fs.blob.impl", "io.blobfs.hadoop.BlobFileSystem");
    storeOptions(namespace).forEach((k, v) -> c.set("fs.blob.store." + store + "." + k, v));
    return c;
  }
}
