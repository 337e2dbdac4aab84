package io.blobfs.tyr.blobfs;

import io.blobfs.store.BlobStore;
import io.blobfs.store.BlobStoreProvider;
import io.blobfs.store.StoreLimits;
import io.blobfs.store.StoreOptions;
import io.blobfs.tyr.client.ClientConfig;
import io.blobfs.tyr.client.TyrClient;
import io.blobfs.tyr.engine.EngineConfig;
import io.blobfs.tyr.engine.SyncPolicy;
import io.blobfs.tyr.protocol.Frame;
import io.blobfs.tyr.protocol.Messages;
import io.blobfs.tyr.protocol.Transport;
import io.blobfs.tyr.server.Authenticator;
import io.blobfs.tyr.server.ServerConfig;
import io.blobfs.tyr.server.TyrServer;
import java.io.IOException;
import java.net.InetAddress;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Type {@code tyr}: a store on one Týr node, remote or embedded in this JVM.
 *
 * <pre>
 * fs.blob.store.NAME.type             tyr
 * fs.blob.store.NAME.address          host:port of the server (unless embedded)
 * fs.blob.store.NAME.nodes            host:port,host:port,... a cluster's seed nodes instead:
 *                                     the ring is fetched from the first that answers, and
 *                                     every call goes to the node holding its key
 *                                     ({@link TyrClusterBlobStore}; not transactional yet)
 * fs.blob.store.NAME.embedded-dir     run a node inside this JVM on this directory instead,
 *                                     reachable from this JVM only (no TCP port)
 * fs.blob.store.NAME.embedded-sync    always | interval | none   (default interval)
 * fs.blob.store.NAME.secret-file      file holding the shared secret, if the server wants one
 * fs.blob.store.NAME.connect-timeout  10s
 * fs.blob.store.NAME.op-timeout       60s   every request fails after this, never hangs
 * fs.blob.store.NAME.connections      2
 * fs.blob.store.NAME.max-op-bytes     16m   reads and writes are split at this size; the
 *                                           client's frame limit is this plus 1 MiB, and a
 *                                           transaction must fit one frame
 * fs.blob.store.NAME.max-object-bytes 1t
 * fs.blob.store.NAME.max-key-bytes    1024  (the server's limit)
 * fs.blob.store.NAME.tls-trust        PEM certificates to trust: TLS to the server
 * fs.blob.store.NAME.local-reads      true  read from the node's files when this process
 *                                     sees them (same host and user), else over TCP
 * fs.blob.store.NAME.local-reads.max-fds 256  segment files the client's snapshots of
 *                                     stripes may hold open at once; past it, over TCP
 * fs.blob.store.NAME.local-reads.idle-timeout 30s  a snapshot not read for this long is
 *                                     closed (its next read opens another); 0 (or 0s): never
 * </pre>
 *
 * Clients are shared per address within a JVM (Spark opens many file systems), and an
 * embedded node lives until the JVM exits, so that reopening a file system does not
 * replay the log again.
 */
public final class TyrBlobStoreProvider implements BlobStoreProvider {
  public static final String TYPE = "tyr";
  public static final String ADDRESS = "address";
  public static final String EMBEDDED_DIR = "embedded-dir";
  public static final String EMBEDDED_SYNC = "embedded-sync";
  public static final String SECRET_FILE = "secret-file";
  public static final String CONNECT_TIMEOUT = "connect-timeout";
  public static final String OP_TIMEOUT = "op-timeout";
  public static final String CONNECTIONS = "connections";
  public static final String MAX_OP_BYTES = "max-op-bytes";
  public static final String MAX_OBJECT_BYTES = "max-object-bytes";
  public static final String MAX_KEY_BYTES = "max-key-bytes";
  public static final String TLS_TRUST = "tls-trust";
  public static final String LOCAL_READS = "local-reads";
  public static final String LOCAL_READS_MAX_FDS = "local-reads.max-fds";
  public static final String LOCAL_READS_IDLE = "local-reads.idle-timeout";
  public static final String NODES = "nodes";

  private static final Map<Path, TyrServer> EMBEDDED = new ConcurrentHashMap<>();
  private static final Map<String, Shared> CLIENTS = new ConcurrentHashMap<>();

  /** A client and how many stores use it. */
  private static final class Shared {
    final TyrClient client;
    int users;

    Shared(TyrClient client) {
      this.client = client;
    }
  }

  @Override
  public String type() {
    return TYPE;
  }

  @Override
  public Set<String> optionKeys() {
    return Set.of(ADDRESS, EMBEDDED_DIR, EMBEDDED_SYNC, SECRET_FILE, CONNECT_TIMEOUT,
        OP_TIMEOUT, CONNECTIONS, MAX_OP_BYTES, MAX_OBJECT_BYTES, MAX_KEY_BYTES, TLS_TRUST,
        LOCAL_READS, LOCAL_READS_MAX_FDS, LOCAL_READS_IDLE, NODES);
  }

  /**
   * Writers hand the node 1 MiB writes instead of the built-in 8 MiB. Each write is one
   * commit, and the node copies its bytes into the log with one {@code pwrite} after the
   * whole write has arrived: 8 MiB of source that no cache holds any more, read back from
   * memory on cores other work shares. With 1 MiB the kernel's copy into the page cache
   * reads bytes just received, and the node starts logging a writer's bytes after 1 MiB
   * instead of 8. TestDFSIO's pattern (1,000,000-byte writes) against a server process, 3
   * alternating rounds, load 20-26: 1 MiB wrote 1.5-2.7x faster than 8 MiB, with server
   * CPU per GB 2.36 s at 8 MiB against 1.80 s (benchmarks/reports/dfsio-s8.md); 256 KiB
   * was faster still but cost the client 2x the CPU per GB. The user's
   * {@code fs.blob.write.buffer.size} still wins.
   */
  @Override
  public java.util.Map<String, String> fileSystemDefaults() {
    return java.util.Map.of("write.buffer.size", "1m");
  }

  @Override
  public BlobStore open(String storeName, StoreOptions o) throws IOException {
    int maxOp = (int) o.getBytes(MAX_OP_BYTES, 16L << 20, 4096, 64L << 20);
    StoreLimits limits = new StoreLimits((int) o.getLong(MAX_KEY_BYTES, 1024, 16, 65535),
        o.getBytes(MAX_OBJECT_BYTES, 1L << 40, 4096, Long.MAX_VALUE), maxOp);
    byte[] secret = null;
    if (o.get(SECRET_FILE).isPresent()) {
      secret = Authenticator.readSecretFile(Path.of(o.get(SECRET_FILE).get()),
          o.fullKey(SECRET_FILE));
    }
    String host;
    int port;
    if (o.get(NODES).isPresent()) {
      for (String other : List.of(ADDRESS, EMBEDDED_DIR, EMBEDDED_SYNC)) {
        if (o.get(other).isPresent()) {
          throw new IllegalArgumentException(o.fullKey(NODES) + " and " + o.fullKey(other)
              + " are exclusive: one names a cluster, the other one node");
        }
      }
      List<io.blobfs.tyr.ring.Member> seeds;
      try {
        seeds = io.blobfs.tyr.ring.Member.parseList(o.get(NODES).get());
      } catch (IllegalArgumentException e) {
        throw o.bad(NODES, o.get(NODES).get(), "host:port,host:port,...");
      }
      if (seeds.isEmpty()) {
        throw o.bad(NODES, o.get(NODES).get(), "host:port,host:port,...");
      }
      ClientConfig template = clientConfig(o, "cluster", 1, secret, maxOp);
      return TyrClusterBlobStore.open(storeName, seeds, template, limits.withMaxCommitBytes(
          maxCommitBytes(template.maxFrameBytes()) - Messages.ROUTED_HEADER_BYTES));
    }
    if (o.get(EMBEDDED_DIR).isPresent()) {
      if (o.get(ADDRESS).isPresent()) {
        throw new IllegalArgumentException(o.fullKey(ADDRESS) + " and "
            + o.fullKey(EMBEDDED_DIR) + " are exclusive: one names a server, the other runs one");
      }
      SyncPolicy sync = SyncPolicy.valueOf(o.getChoice(EMBEDDED_SYNC, "interval",
          List.of("always", "interval", "none")).toUpperCase(Locale.ROOT));
      TyrServer server = embedded(Path.of(o.get(EMBEDDED_DIR).get()), sync, secret);
      host = server.config().bind();
      port = 0;
    } else {
      String address = o.get(ADDRESS).orElseThrow(() -> new IllegalArgumentException(
          o.fullKey(ADDRESS) + " (host:port) or " + o.fullKey(EMBEDDED_DIR)
              + " is required for a tyr store"));
      int colon = address.lastIndexOf(':');
      if (colon <= 0) {
        throw o.bad(ADDRESS, address, "host:port");
      }
      host = address.substring(0, colon);
      try {
        port = Integer.parseInt(address.substring(colon + 1));
      } catch (NumberFormatException e) {
        throw o.bad(ADDRESS, address, "host:port");
      }
      if (port < 1 || port > 65535) {
        throw o.bad(ADDRESS, address, "a port within 1..65535");
      }
    }
    ClientConfig config = clientConfig(o, host, port, secret, maxOp);
    TyrClient client = acquire(config);
    return new TyrBlobStore(storeName, client,
        limits.withMaxCommitBytes(maxCommitBytes(config.maxFrameBytes())),
        List.of(hostName(host)), () -> release(config));
  }

  private static ClientConfig clientConfig(StoreOptions o, String host, int port,
      byte[] secret, int maxOp) {
    return new ClientConfig(host, port, secret,
        o.getDuration(CONNECT_TIMEOUT, Duration.ofSeconds(10)),
        o.getDuration(OP_TIMEOUT, Duration.ofSeconds(60)),
        (int) o.getLong(CONNECTIONS, 2, 1, 64), maxOp + (1 << 20),
        o.get(TLS_TRUST).map(Path::of).orElse(null),
        // On by default: it acts only where the node's token proves this process sees its
        // files, and any failure reads over the connection as before.
        o.getBoolean(LOCAL_READS, true),
        (int) o.getLong(LOCAL_READS_MAX_FDS, ClientConfig.DEFAULT_LOCAL_READ_FDS, 0, 1 << 20),
        // Any zero ("0", "0s", "0ms") means never: getDuration takes only positive ones.
        o.get(LOCAL_READS_IDLE).filter(v -> v.trim().matches("0+\\s*[A-Za-z]*")).isPresent()
            ? Duration.ZERO
            : o.getDuration(LOCAL_READS_IDLE, ClientConfig.DEFAULT_LOCAL_READ_IDLE));
  }

  /**
   * The largest transaction, counted by {@link TyrBlobStore#commitBytes} (the bytes of
   * its read checks and ops), that fits one frame of {@code maxFrameBytes}: a commit is
   * one frame, which the client refuses to send when larger. The frame's header and the
   * transaction's two counts come off.
   */
  static long maxCommitBytes(int maxFrameBytes) {
    return maxFrameBytes - Frame.HEADER_BYTES - Messages.TX_HEADER_BYTES;
  }

  private static synchronized TyrServer embedded(Path dir, SyncPolicy sync, byte[] secret)
      throws IOException {
    Path key = dir.toAbsolutePath().normalize();
    TyrServer server = EMBEDDED.get(key);
    if (server == null) {
      EngineConfig engine = EngineConfig.defaults(key).withSyncPolicy(sync);
      server = TyrServer.start(ServerConfig.inJvm(engine).withSecret(secret));
      EMBEDDED.put(key, server);
      TyrServer started = server;
      Runtime.getRuntime().addShutdownHook(new Thread(() -> {
        try {
          started.close();
        } catch (IOException e) {
          System.err.println("closing the embedded Týr node at " + key + " failed: " + e);
        }
      }, "tyr-embedded-close"));
    }
    return server;
  }

  /** The node embedded on {@code dir} in this JVM, if any. */
  static TyrServer embeddedNode(Path dir) {
    return EMBEDDED.get(dir.toAbsolutePath().normalize());
  }

  /** Configs are records holding an array, so they are keyed by value here. */
  private static String keyOf(ClientConfig c) {
    return c.address() + "|" + java.util.Arrays.hashCode(c.secret()) + "|" + c.connectTimeout()
        + "|" + c.requestTimeout() + "|" + c.connections() + "|" + c.maxFrameBytes() + "|"
        + c.tlsTrust() + "|" + c.localReads() + "|" + c.localReadFds() + "|" + c.localReadIdle();
  }

  private static TyrClient acquire(ClientConfig config) {
    synchronized (CLIENTS) {
      Shared s = CLIENTS.computeIfAbsent(keyOf(config), c -> new Shared(new TyrClient(config)));
      s.users++;
      return s.client;
    }
  }

  private static void release(ClientConfig config) {
    synchronized (CLIENTS) {
      Shared s = CLIENTS.get(keyOf(config));
      if (s != null && --s.users == 0) {
        CLIENTS.remove(keyOf(config));
        s.client.close();
      }
    }
  }

  /** The name schedulers know the node by: loopback becomes {@code localhost}. */
  private static String hostName(String host) {
    if (Transport.inJvm(host)) {
      return "localhost";
    }
    try {
      InetAddress a = InetAddress.getByName(host);
      return a.isLoopbackAddress() ? "localhost" : a.getCanonicalHostName();
    } catch (IOException e) {
      return host;
    }
  }
}
