package io.blobfs.bench.run;

import io.blobfs.bench.trace.TracingFileSystem;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.Path;

/**
 * A back end the workloads run on: where a run's directory goes, the Hadoop settings a user
 * would give the job for it, and the file system class to trace (the one the scheme would
 * otherwise use).
 *
 * @param name  what reports call it ({@code embedded}, {@code file}, ...)
 * @param base  the directory under which each run makes its own
 * @param hadoop Hadoop keys (without {@code spark.hadoop.})
 * @param fileSystemClass the scheme's file system, wrapped by {@link TracingFileSystem}
 */
public record StoreTarget(String name, Path base, Map<String, String> hadoop,
    String fileSystemClass) {

  public static final String BLOBFS_IMPL = "io.blobfs.hadoop.BlobFileSystem";

  /** The back ends {@code --stores} accepts, and what each one needs. */
  public static final Map<String, String> KNOWN = knownStores();

  private static Map<String, String> knownStores() {
    Map<String, String> m = new LinkedHashMap<>();
    m.put("embedded", "nothing: a Týr node inside the job's JVM (blob://main)");
    m.put("memory", "nothing: BlobFS's in-memory store in the job's JVM (blob://mem)");
    m.put("file", "nothing: file:// on the local disk (also the reference every check uses)");
    m.put("hdfs", "HDFS daemons: eval \"$(scripts/hdfs/hdfs.sh start)\" (exports HDFS_URI), "
        + "or --hdfs-uri hdfs://HOST:PORT");
    m.put("tyr", "a Týr server process: scripts/tyr-server.sh --data-dir DIR --port 7400, "
        + "then --tyr-address 127.0.0.1:7400 (or $TYR_ADDRESS)");
    m.put("tyr-nogather", "as tyr, with fs.blob.write.gather.size=0: every small write "
        + "handed to the writer on its own (the path before gathering)");
    m.put("embedded-nogather", "as embedded (its own node), with fs.blob.write.gather.size=0");
    m.put("rados", "a Ceph cluster: eval \"$(scripts/ceph/cluster.sh start)\" (exports "
        + "CEPH_CONF, BLOBFS_CEPH_POOL, BLOBFS_CEPH_CLIENT_KEYRING), or --rados-pool POOL "
        + "[--ceph-conf FILE] [--ceph-keyring FILE]");
    m.put("cephfs", "CephFS mounted with ceph-fuse: eval \"$(scripts/ceph/cephfs.sh start)\" "
        + "(exports CEPHFS_MOUNT), or --cephfs-dir MOUNT");
    return m;
  }

  /** The scheme of {@link #base}. */
  public String scheme() {
    return base.toUri().getScheme();
  }

  /** The Hadoop settings, plus those that trace the scheme. */
  public Map<String, String> tracedHadoop() {
    Map<String, String> m = new LinkedHashMap<>(hadoop);
    m.putAll(TracingFileSystem.configuration(scheme(), fileSystemClass));
    return m;
  }

  /** A Configuration with {@link #tracedHadoop()}: what the harness opens the store with. */
  public Configuration configuration() {
    Configuration c = new Configuration();
    tracedHadoop().forEach(c::set);
    return c;
  }

  /** Those settings as spark-submit {@code --conf}s. */
  public Map<String, String> sparkConf() {
    Map<String, String> m = new LinkedHashMap<>();
    tracedHadoop().forEach((k, v) -> m.put("spark.hadoop." + k, v));
    return m;
  }

  /** Parses a comma-separated {@code --stores} list (duplicates dropped; unknown names fail). */
  public static List<String> parseList(String list) {
    List<String> out = new ArrayList<>();
    for (String s : list.split(",")) {
      String t = s.trim().toLowerCase(Locale.ROOT);
      if (!KNOWN.containsKey(t)) {
        throw new IllegalArgumentException("unknown store '" + s + "'; stores: "
            + String.join(",", KNOWN.keySet()));
      }
      if (!out.contains(t)) {
        out.add(t);
      }
    }
    return out;
  }

  /** blob:// on a store profile named {@code profile} with these store options. */
  public static StoreTarget blob(String name, String profile, String run,
      Map<String, String> storeOptions, String markers) {
    Map<String, String> h = new LinkedHashMap<>();
    h.put("fs.blob.impl", BLOBFS_IMPL);
    h.put("fs.blob.directory.markers", markers);
    storeOptions.forEach((k, v) -> h.put("fs.blob.store." + profile + "." + k, v));
    return new StoreTarget(name, new Path("blob://" + profile + "/" + run), h, BLOBFS_IMPL);
  }

  /** file:// under a local directory (the local disk, or a CephFS mount). */
  public static StoreTarget local(String name, java.nio.file.Path dir) {
    return new StoreTarget(name, new Path(dir.toAbsolutePath().toUri()), Map.of(),
        "org.apache.hadoop.fs.LocalFileSystem");
  }

  /** hdfs:// at {@code uri}. */
  public static StoreTarget hdfs(String uri, String run) {
    String u = uri.endsWith("/") ? uri.substring(0, uri.length() - 1) : uri;
    return new StoreTarget("hdfs", new Path(u + "/blobfs-bench/" + run), Map.of(),
        "org.apache.hadoop.hdfs.DistributedFileSystem");
  }
}
