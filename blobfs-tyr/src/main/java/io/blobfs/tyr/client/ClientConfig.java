package io.blobfs.tyr.client;

import io.blobfs.tyr.protocol.Transport;
import io.blobfs.tyr.server.Authenticator;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Objects;

/**
 * Where a client connects and how long it waits.
 *
 * @param host a host name or address, or {@code jvm:NAME} for a node in this JVM (see
 *     {@link Transport}; the port is then ignored)
 * @param connectTimeout bound on connecting and the handshake
 * @param requestTimeout bound on each request once sent; a server that does not answer in
 *     time fails the call with {@code UNAVAILABLE}, never hangs it
 * @param connections connections kept to the server, used in turn (one connection already
 *     carries many requests at once; more spread the work over the server's I/O threads)
 * @param maxFrameBytes the server's frame limit: larger requests fail before being sent
 * @param tlsTrust PEM certificates to trust, which turns TLS on (null: plain TCP)
 * @param localReads read blobs from the node's files directly when this process sees them
 *     (same host and file system, same user), falling back to the connection otherwise;
 *     see {@link LocalReads}
 * @param localReadFds the segment files this client's local-read snapshots may hold open at
 *     once ({@link #DEFAULT_LOCAL_READ_FDS}, as HDFS's short-circuit cache); a snapshot that
 *     would hold more is not opened and its reads go over the connection
 * @param localReadIdle a local-read snapshot not read for this long is closed, so that a
 *     stream left open does not hold a deleted segment's disk for ever; its next read opens
 *     another ({@link #DEFAULT_LOCAL_READ_IDLE}; zero: never)
 */
public record ClientConfig(String host, int port, byte[] secret, Duration connectTimeout,
    Duration requestTimeout, int connections, int maxFrameBytes, Path tlsTrust,
    boolean localReads, int localReadFds, Duration localReadIdle) {
  /** HDFS's dfs.client.read.shortcircuit.streams.cache.size: 256 file descriptors. */
  public static final int DEFAULT_LOCAL_READ_FDS = 256;
  public static final Duration DEFAULT_LOCAL_READ_IDLE = Duration.ofSeconds(30);

  /** With the default limits of local reads. */
  public ClientConfig(String host, int port, byte[] secret, Duration connectTimeout,
      Duration requestTimeout, int connections, int maxFrameBytes, Path tlsTrust,
      boolean localReads) {
    this(host, port, secret, connectTimeout, requestTimeout, connections, maxFrameBytes,
        tlsTrust, localReads, DEFAULT_LOCAL_READ_FDS, DEFAULT_LOCAL_READ_IDLE);
  }

  /** Without local reads. */
  public ClientConfig(String host, int port, byte[] secret, Duration connectTimeout,
      Duration requestTimeout, int connections, int maxFrameBytes, Path tlsTrust) {
    this(host, port, secret, connectTimeout, requestTimeout, connections, maxFrameBytes,
        tlsTrust, false);
  }

  public ClientConfig {
    Objects.requireNonNull(host, "host");
    Objects.requireNonNull(connectTimeout, "connectTimeout");
    Objects.requireNonNull(requestTimeout, "requestTimeout");
    Objects.requireNonNull(localReadIdle, "localReadIdle");
    secret = Authenticator.checked(secret, "the Týr client's secret");
    boolean portOk = Transport.inJvm(host) || (port >= 1 && port <= 65535);
    if (!portOk || connections < 1 || maxFrameBytes < 4096 || localReadFds < 0
        || localReadIdle.isNegative()) {
      throw new IllegalArgumentException("bad client settings: port " + port
          + ", connections " + connections + ", max frame " + maxFrameBytes
          + ", local-read fds " + localReadFds + ", local-read idle " + localReadIdle);
    }
  }

  public static ClientConfig of(String host, int port) {
    return new ClientConfig(host, port, null, Duration.ofSeconds(10), Duration.ofSeconds(60),
        2, 80 << 20, null);
  }

  public ClientConfig withSecret(byte[] s) {
    return new ClientConfig(host, port, s, connectTimeout, requestTimeout, connections,
        maxFrameBytes, tlsTrust, localReads, localReadFds, localReadIdle);
  }

  public ClientConfig withTimeouts(Duration connect, Duration request) {
    return new ClientConfig(host, port, secret, connect, request, connections, maxFrameBytes,
        tlsTrust, localReads, localReadFds, localReadIdle);
  }

  public ClientConfig withConnections(int n) {
    return new ClientConfig(host, port, secret, connectTimeout, requestTimeout, n,
        maxFrameBytes, tlsTrust, localReads, localReadFds, localReadIdle);
  }

  public ClientConfig withMaxFrameBytes(int n) {
    return new ClientConfig(host, port, secret, connectTimeout, requestTimeout, connections,
        n, tlsTrust, localReads, localReadFds, localReadIdle);
  }

  public ClientConfig withTlsTrust(Path pem) {
    return new ClientConfig(host, port, secret, connectTimeout, requestTimeout, connections,
        maxFrameBytes, pem, localReads, localReadFds, localReadIdle);
  }

  public ClientConfig withLocalReads(boolean on) {
    return new ClientConfig(host, port, secret, connectTimeout, requestTimeout, connections,
        maxFrameBytes, tlsTrust, on, localReadFds, localReadIdle);
  }

  /** At most {@code fds} segment files held open by local-read snapshots (0: none). */
  public ClientConfig withLocalReadFds(int fds) {
    return new ClientConfig(host, port, secret, connectTimeout, requestTimeout, connections,
        maxFrameBytes, tlsTrust, localReads, fds, localReadIdle);
  }

  /** Local-read snapshots not read for {@code idle} are closed (zero: never). */
  public ClientConfig withLocalReadIdle(Duration idle) {
    return new ClientConfig(host, port, secret, connectTimeout, requestTimeout, connections,
        maxFrameBytes, tlsTrust, localReads, localReadFds, idle);
  }

  public String address() {
    return Transport.inJvm(host) ? host : host + ":" + port;
  }
}
