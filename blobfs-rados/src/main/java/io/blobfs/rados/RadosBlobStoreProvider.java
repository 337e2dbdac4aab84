package io.blobfs.rados;

import io.blobfs.store.BlobStore;
import io.blobfs.store.BlobStoreProvider;
import io.blobfs.store.StoreLimits;
import io.blobfs.store.StoreOptions;
import java.io.IOException;
import java.time.Duration;
import java.util.Set;

/**
 * Type {@code rados}: a store on one pool of a Ceph cluster.
 *
 * <pre>
 * fs.blob.store.NAME.type            rados
 * fs.blob.store.NAME.pool            (required)
 * fs.blob.store.NAME.conf            /etc/ceph/ceph.conf
 * fs.blob.store.NAME.mon-host        (optional; overrides the conf's mon_host)
 * fs.blob.store.NAME.client-id       admin
 * fs.blob.store.NAME.keyring         (optional; else the conf's keyring setting)
 * fs.blob.store.NAME.namespace       (optional RADOS namespace prefix)
 * fs.blob.store.NAME.op-timeout      30s   rados_osd_op_timeout and rados_mon_op_timeout
 * fs.blob.store.NAME.connect-timeout 30s   client_mount_timeout
 * fs.blob.store.NAME.max-object-bytes 128m  osd_max_object_size; stripes are never larger
 * fs.blob.store.NAME.max-op-bytes    64m   at most osd_max_write_size (90 MB)
 * fs.blob.store.NAME.max-key-bytes   1024
 * fs.blob.store.NAME.map-ttl         10s   how long block locations trust the cached OSD
 *                                          map before asking the monitor for its epoch
 * fs.blob.store.NAME.index           omap  omap: names and intents are kept in a name index
 *                                          (RadosIndex), made at the first open; scan: the
 *                                          paper's pure-scan mode, refused on an indexed pool
 * fs.blob.store.NAME.index-shards    8     shard objects of a new index (then fixed)
 * fs.blob.store.NAME.index-grace     10m   how old a pending entry whose object is missing
 *                                          must be before a reader removes it; at least 10
 *                                          op timeouts; a new index records it, and every
 *                                          client then uses the recorded one
 * A pool (namespace) that has names but no index is refused in omap mode: its index is
 * built by scripts/rados-index.sh build once clients in scan mode are stopped.
 * </pre>
 */
public final class RadosBlobStoreProvider implements BlobStoreProvider {
  public static final String TYPE = "rados";
  public static final String POOL = "pool";
  public static final String CONF = "conf";
  public static final String MON_HOST = "mon-host";
  public static final String CLIENT_ID = "client-id";
  public static final String KEYRING = "keyring";
  public static final String NAMESPACE = "namespace";
  public static final String OP_TIMEOUT = "op-timeout";
  public static final String CONNECT_TIMEOUT = "connect-timeout";
  public static final String MAX_OBJECT_BYTES = "max-object-bytes";
  public static final String MAX_OP_BYTES = "max-op-bytes";
  public static final String MAX_KEY_BYTES = "max-key-bytes";
  public static final String MAP_TTL = "map-ttl";
  public static final String INDEX = "index";
  public static final String INDEX_SHARDS = "index-shards";
  public static final String INDEX_GRACE = "index-grace";

  /** How many op timeouts the index's grace period must be at least. */
  static final int GRACE_OVER_OP_TIMEOUT = 10;

  /**
   * A reader removes a missing object's pending entry once its marker is older than the
   * grace period, so the grace must far exceed the time a writer's object step may take (at
   * most the op timeout), or a slow creator's name could lose its entry.
   */
  private static void checkGrace(StoreOptions options, Duration grace, Duration opTimeout,
      String where) {
    if (grace.compareTo(opTimeout.multipliedBy(GRACE_OVER_OP_TIMEOUT)) < 0) {
      throw options.bad(INDEX_GRACE, grace + where, "at least " + GRACE_OVER_OP_TIMEOUT
          + " times " + OP_TIMEOUT + " (" + opTimeout + ")");
    }
  }

  @Override
  public String type() {
    return TYPE;
  }

  @Override
  public Set<String> optionKeys() {
    return Set.of(POOL, CONF, MON_HOST, CLIENT_ID, KEYRING, NAMESPACE, OP_TIMEOUT,
        CONNECT_TIMEOUT, MAX_OBJECT_BYTES, MAX_OP_BYTES, MAX_KEY_BYTES, MAP_TTL, INDEX,
        INDEX_SHARDS, INDEX_GRACE);
  }

  @Override
  public BlobStore open(String storeName, StoreOptions options) throws IOException {
    String pool = options.get(POOL).orElseThrow(() -> new IllegalArgumentException(
        options.fullKey(POOL) + " is required for a rados store"));
    String namespace = options.getString(NAMESPACE, "");
    if (namespace.contains("/") || namespace.contains("\001")) {
      throw options.bad(NAMESPACE, namespace, "a name without '/'");
    }
    Duration opTimeout = options.getDuration(OP_TIMEOUT, Duration.ofSeconds(30));
    Duration connectTimeout = options.getDuration(CONNECT_TIMEOUT, Duration.ofSeconds(30));
    long maxObject = options.getBytes(MAX_OBJECT_BYTES, 128L << 20, 4096, 1L << 40);
    long maxOp = options.getBytes(MAX_OP_BYTES, 64L << 20, 4096, 90_000_000L);
    int maxKey = (int) options.getLong(MAX_KEY_BYTES, 1024, 16, 2048);
    Duration mapTtl = options.getDuration(MAP_TTL, Duration.ofSeconds(10));
    String indexMode = options.getString(INDEX, "omap");
    if (!indexMode.equals("omap") && !indexMode.equals("scan")) {
      throw options.bad(INDEX, indexMode, "omap or scan");
    }
    int shards = (int) options.getLong(INDEX_SHARDS, 8, 1, 1024);
    Duration grace = options.getDuration(INDEX_GRACE, RadosIndexes.Meta.DEFAULT_GRACE);
    if (indexMode.equals("omap")) {
      checkGrace(options, grace, opTimeout, "");
    }
    RadosCluster.Identity id = new RadosCluster.Identity(
        options.getString(CONF, "/etc/ceph/ceph.conf"),
        options.getString(CLIENT_ID, "admin"),
        options.getString(KEYRING, ""),
        options.getString(MON_HOST, ""),
        opTimeout);
    RadosCluster cluster = RadosCluster.acquire(id, connectTimeout);
    RadosIndexes.Opened index;
    try {
      cluster.context(pool, namespace); // fails now, clearly, for a missing pool
      RadosKeys keys = new RadosKeys(namespace);
      if (indexMode.equals("omap")) {
        index = RadosIndexes.open(cluster, pool, keys, shards, grace);
        checkGrace(options, index.index().grace(), opTimeout, " (recorded in the index of pool "
            + pool + ")");
      } else {
        // A pure-scan client would not keep an existing index, which would then hide the
        // names it creates from every indexed client.
        if (RadosIndexes.readMeta(cluster, pool, keys) != null) {
          throw options.bad(INDEX, indexMode, "omap: pool " + pool
              + (namespace.isEmpty() ? "" : " namespace " + namespace)
              + " has a name index, which every client must keep");
        }
        index = null;
      }
    } catch (IOException | RuntimeException e) {
      cluster.release();
      throw e;
    }
    return new RadosBlobStore(cluster, pool, namespace,
        new StoreLimits(maxKey, maxObject, Math.min(maxOp, maxObject)), opTimeout, mapTtl,
        index);
  }
}
