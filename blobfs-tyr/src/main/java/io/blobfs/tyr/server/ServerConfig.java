package io.blobfs.tyr.server;

import io.blobfs.store.StoreOptions;
import io.blobfs.tyr.engine.EngineConfig;
import io.blobfs.tyr.engine.SyncPolicy;
import io.blobfs.tyr.protocol.Transport;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Locale;
import java.util.Objects;
import java.util.Set;

/**
 * Settings of one Týr server. Read from {@code key=value} options (a properties file, then
 * command-line flags over it) with the same typed parsing as BlobFS's store options:
 *
 * <pre>
 * data-dir        (required)  where the log lives
 * bind            127.0.0.1
 * port            7400        0 picks a free port (printed at start)
 * sync            always      always | interval | none (see SyncPolicy)
 * sync-interval   100ms
 * chunk-size      1m          versioning granularity within a blob
 * segment-size    1g          log segment size
 * max-frame       80m         largest frame accepted; larger ones close the connection
 * max-key-bytes   1024
 * max-blob-bytes  1t
 * compact-interval 30s       how often disk held by old versions is reclaimed
 * secret-file     (optional)  shared secret clients must prove; TYR_SECRET also works;
 *                             a blank one is refused
 * threads         8           threads running store operations
 * max-inflight    64          requests per connection before it stops reading
 * idle-timeout    60s         a peer silent this long mid-frame or before its HELLO is cut off
 * max-request-memory 512m     request and answer bytes held at once; over it, reading pauses
 * max-connection-memory 1/4 of max-request-memory   the share one connection may hold
 * write-idle-timeout 60s      a peer that takes none of its answers this long is cut off
 * tls-keystore    (optional)  PKCS12 key store with the server's key and certificate: TLS on
 * tls-keystore-password-file  its password (required with tls-keystore)
 * tls-peer-trust  (a cluster member with TLS: required)  PEM certificates the node trusts
 *                             when it connects to the other nodes (replication, cross-node
 *                             transactions, catch-up): node-to-node traffic is TLS too, and
 *                             each peer's certificate must name the host it is listed under
 * cluster-*       a member of a cluster: see {@link Membership} (parsed there)
 * </pre>
 */
public record ServerConfig(String bind, int port, EngineConfig engine, int maxFrameBytes,
    byte[] secret, int threads, int maxInFlight, Duration idleTimeout,
    long maxRequestMemory, long maxConnectionMemory, Duration writeIdleTimeout,
    TlsFiles tls) {

  /**
   * The server's TLS key store and its password file, and the certificates it trusts for
   * its peers (null for a lone node); null in the config: no TLS.
   */
  public record TlsFiles(Path keystore, Path passwordFile, Path peerTrust) {
    /** A lone node's: no peers to trust. */
    public TlsFiles(Path keystore, Path passwordFile) {
      this(keystore, passwordFile, null);
    }
  }

  public static final Set<String> KEYS = Set.of("data-dir", "bind", "port", "sync",
      "sync-interval", "chunk-size", "segment-size", "max-frame", "max-key-bytes",
      "max-blob-bytes", "secret-file", "threads", "max-inflight", "compact-interval",
      "idle-timeout", "max-request-memory", "max-connection-memory", "write-idle-timeout",
      "tls-keystore", "tls-keystore-password-file", "tls-peer-trust");

  public ServerConfig {
    Objects.requireNonNull(bind, "bind");
    Objects.requireNonNull(engine, "engine");
    Objects.requireNonNull(writeIdleTimeout, "writeIdleTimeout");
    if (maxConnectionMemory < 1 || maxConnectionMemory > maxRequestMemory) {
      throw new IllegalArgumentException("max-connection-memory " + maxConnectionMemory
          + " must be within 1.." + maxRequestMemory + " (max-request-memory)");
    }
    secret = Authenticator.checked(secret, "the Týr server's secret");
  }

  /** Parses options; {@code env} supplies TYR_SECRET when no secret file is named. */
  public static ServerConfig parse(StoreOptions o, String envSecret) throws IOException {
    for (String key : o.asMap().keySet()) {
      if (!KEYS.contains(key) && !Membership.KEYS.contains(key)) {
        throw new IllegalArgumentException("unknown Týr server option " + o.fullKey(key)
            + "; known: " + new java.util.TreeSet<>(KEYS) + " and the cluster's "
            + new java.util.TreeSet<>(Membership.KEYS));
      }
    }
    Path dir = Path.of(o.get("data-dir").orElseThrow(() ->
        new IllegalArgumentException(o.fullKey("data-dir") + " is required")));
    SyncPolicy sync = SyncPolicy.valueOf(o.getChoice("sync", "always",
        List.of("always", "interval", "none")).toUpperCase(Locale.ROOT));
    EngineConfig engine = new EngineConfig(dir,
        (int) o.getBytes("chunk-size", 1 << 20, 4096, 1 << 30),
        o.getBytes("segment-size", 1L << 30, 1 << 20, 1L << 40), sync,
        o.getDuration("sync-interval", Duration.ofMillis(100)),
        (int) o.getLong("max-key-bytes", 1024, 1, 65535),
        o.getBytes("max-blob-bytes", 1L << 40, 1, Long.MAX_VALUE), 64,
        o.getDuration("compact-interval", Duration.ofSeconds(30)), 0.5);
    byte[] secret = null;
    if (o.get("secret-file").isPresent()) {
      secret = Authenticator.readSecretFile(Path.of(o.get("secret-file").get()),
          o.fullKey("secret-file"));
    } else if (envSecret != null) {
      secret = Authenticator.checked(envSecret.strip().getBytes(StandardCharsets.UTF_8),
          "TYR_SECRET");
    }
    TlsFiles tls = null;
    if (o.get("tls-keystore").isPresent() || o.get("tls-keystore-password-file").isPresent()
        || o.get("tls-peer-trust").isPresent()) {
      tls = new TlsFiles(Path.of(o.get("tls-keystore").orElseThrow(() ->
          new IllegalArgumentException(o.fullKey("tls-keystore") + " is required with "
              + o.fullKey("tls-keystore-password-file") + " and " + o.fullKey("tls-peer-trust")
              + " (a node that speaks TLS to its peers must accept only TLS itself)"))),
          Path.of(o.get("tls-keystore-password-file").orElseThrow(() ->
              new IllegalArgumentException(o.fullKey("tls-keystore-password-file")
                  + " is required with " + o.fullKey("tls-keystore")))),
          o.get("tls-peer-trust").map(Path::of).orElse(null));
    }
    long memory = o.getBytes("max-request-memory", 512L << 20, 1 << 20, 1L << 40);
    return new ServerConfig(o.getString("bind", "127.0.0.1"),
        (int) o.getLong("port", 7400, 0, 65535), engine,
        (int) o.getBytes("max-frame", 80L << 20, 4096, 1L << 30), secret,
        (int) o.getLong("threads", 8, 1, 1024), (int) o.getLong("max-inflight", 64, 1, 1 << 16),
        o.getDuration("idle-timeout", Duration.ofSeconds(60)), memory,
        o.getBytes("max-connection-memory", memory / 4, 1, memory),
        o.getDuration("write-idle-timeout", Duration.ofSeconds(60)), tls);
  }

  /** A server for tests: loopback, a free port, no secret. */
  public static ServerConfig local(EngineConfig engine) {
    return new ServerConfig("127.0.0.1", 0, engine, 80 << 20, null, 8, 64,
        Duration.ofSeconds(60), 512L << 20, 128L << 20, Duration.ofSeconds(60), null);
  }

  /**
   * The embedded node's: reachable only from this JVM (see {@link Transport}), under a
   * name no other node in it has.
   */
  public static ServerConfig inJvm(EngineConfig engine) {
    return new ServerConfig(Transport.IN_JVM + "tyr-" + java.util.UUID.randomUUID(), 0, engine,
        80 << 20, null, 8, 64, Duration.ofSeconds(60), 512L << 20, 128L << 20,
        Duration.ofSeconds(60), null);
  }

  /** How this node connects to the other members: its secret, and TLS if it has TLS. */
  public PeerAccess peerAccess() {
    return new PeerAccess(secret, tls == null ? null : tls.peerTrust());
  }

  /**
   * A cluster member with TLS must say which certificates it trusts for its peers: its
   * peers refuse plain text, so without them its replication could reach none of them.
   */
  public void checkPeerTls(boolean clusterMember) {
    if (clusterMember && tls != null && tls.peerTrust() == null) {
      throw new IllegalArgumentException("a cluster member with TLS (tls-keystore) needs "
          + "tls-peer-trust: the PEM certificates it trusts when it connects to the other "
          + "nodes, which accept TLS only");
    }
  }

  public boolean inJvm() {
    return Transport.inJvm(bind);
  }

  public ServerConfig withSecret(byte[] s) {
    return new ServerConfig(bind, port, engine, maxFrameBytes, s, threads, maxInFlight,
        idleTimeout, maxRequestMemory, maxConnectionMemory, writeIdleTimeout, tls);
  }

  public ServerConfig withMaxFrameBytes(int bytes) {
    return new ServerConfig(bind, port, engine, bytes, secret, threads, maxInFlight,
        idleTimeout, maxRequestMemory, maxConnectionMemory, writeIdleTimeout, tls);
  }

  public ServerConfig withIdleTimeout(Duration d) {
    return new ServerConfig(bind, port, engine, maxFrameBytes, secret, threads, maxInFlight, d,
        maxRequestMemory, maxConnectionMemory, writeIdleTimeout, tls);
  }

  /** The server-wide budget; each connection's share stays a quarter of it. */
  public ServerConfig withMaxRequestMemory(long bytes) {
    return new ServerConfig(bind, port, engine, maxFrameBytes, secret, threads, maxInFlight,
        idleTimeout, bytes, bytes / 4, writeIdleTimeout, tls);
  }

  public ServerConfig withTls(TlsFiles files) {
    return new ServerConfig(bind, port, engine, maxFrameBytes, secret, threads, maxInFlight,
        idleTimeout, maxRequestMemory, maxConnectionMemory, writeIdleTimeout, files);
  }

  public ServerConfig withConnectionLimits(long maxConnectionBytes, Duration writeIdle) {
    return new ServerConfig(bind, port, engine, maxFrameBytes, secret, threads, maxInFlight,
        idleTimeout, maxRequestMemory, maxConnectionBytes, writeIdle, tls);
  }
}
