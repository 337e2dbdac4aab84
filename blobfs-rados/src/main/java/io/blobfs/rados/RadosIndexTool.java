package io.blobfs.rados;

import java.io.IOException;
import java.io.PrintStream;
import java.time.Duration;
import java.util.HashMap;
import java.util.Map;

/**
 * The name index's commands, safe on a live pool (scripts/rados-index.sh runs them):
 *
 * <pre>
 * RadosIndexTool build [options]           enter every existing name; make the index ready
 * RadosIndexTool fsck [--repair] [options] check index against objects (exit 1 if wrong)
 *
 * --pool P (required)  --namespace NS  --conf /etc/ceph/ceph.conf  --client-id admin
 * --keyring FILE  --mon-host HOST  --shards 8  --grace 10m (both for a new index only;
 * an existing one keeps those recorded in its description, which fsck uses too)
 * </pre>
 *
 * {@code build} is for a pool written in pure-scan mode (or whose build was cut off):
 * every client of this version that opens the pool meanwhile keeps the index, and scans by
 * listing until the build declares it ready. Pure-scan clients must be stopped first: they
 * do not keep it.
 */
public final class RadosIndexTool {
  private RadosIndexTool() {}

  public static void main(String[] args) throws IOException {
    System.exit(run(args, System.out, System.err));
  }

  static int run(String[] args, PrintStream out, PrintStream err) throws IOException {
    if (args.length == 0 || !(args[0].equals("build") || args[0].equals("fsck"))) {
      err.println("usage: RadosIndexTool build|fsck [--repair] --pool P [--namespace NS]"
          + " [--conf F] [--client-id ID] [--keyring F] [--mon-host H] [--shards N]"
          + " [--grace 10m]");
      return 2;
    }
    Map<String, String> o = new HashMap<>();
    boolean repair = false;
    for (int i = 1; i < args.length; i++) {
      if (args[i].equals("--repair")) {
        repair = true;
      } else if (args[i].startsWith("--") && i + 1 < args.length) {
        o.put(args[i].substring(2), args[++i]);
      } else {
        err.println("unknown argument " + args[i]);
        return 2;
      }
    }
    String pool = o.get("pool");
    if (pool == null) {
      err.println("--pool is required");
      return 2;
    }
    Duration grace = new io.blobfs.store.StoreOptions("--", o)
        .getDuration("grace", RadosIndexes.Meta.DEFAULT_GRACE);
    String namespace = o.getOrDefault("namespace", "");
    if (namespace.contains("/") || namespace.contains("\001")) {
      // as the store refuses it: the index lives in namespace NS/index, which '/' would alias
      err.println("--namespace " + namespace + ": a name without '/'");
      return 2;
    }
    int shards;
    try {
      shards = Integer.parseInt(o.getOrDefault("shards", "8"));
    } catch (NumberFormatException e) {
      shards = 0;
    }
    if (shards < 1 || shards > 1024) {
      err.println("--shards " + o.get("shards") + ": 1 to 1024");
      return 2;
    }
    RadosKeys keys = new RadosKeys(namespace);
    RadosCluster.Identity id = new RadosCluster.Identity(
        o.getOrDefault("conf", "/etc/ceph/ceph.conf"), o.getOrDefault("client-id", "admin"),
        o.getOrDefault("keyring", ""), o.getOrDefault("mon-host", ""), Duration.ofSeconds(30));
    RadosCluster cluster = RadosCluster.acquire(id, Duration.ofSeconds(30));
    try {
      if (args[0].equals("build")) {
        // --shards and --grace describe a new index only: an existing description is kept.
        long n = RadosIndexes.build(cluster, pool, keys,
            new RadosIndex(cluster, pool, keys, shards, grace));
        RadosIndexes.Meta meta = RadosIndexes.readMeta(cluster, pool, keys);
        out.println("index of pool " + pool + " ready: " + n + " names, " + meta.shards()
            + " shards, grace " + meta.grace());
        return 0;
      }
      RadosIndexes.Meta meta = RadosIndexes.readMeta(cluster, pool, keys);
      if (meta == null) {
        err.println("pool " + pool + " has no name index: run build");
        return 1;
      }
      // The grace every client uses, recorded in the description; --grace is ignored here.
      RadosIndex index = new RadosIndex(cluster, pool, keys, meta.shards(), meta.grace());
      RadosIndexes.Fsck f = RadosIndexes.fsck(cluster, pool, keys, index, meta.grace(),
          repair);
      out.println((repair ? "fsck --repair: " : "fsck: ") + f
          + (meta.ready() ? "" : " (index not ready: run build)"));
      return f.consistent() || repair ? 0 : 1;
    } finally {
      cluster.release();
    }
  }
}
