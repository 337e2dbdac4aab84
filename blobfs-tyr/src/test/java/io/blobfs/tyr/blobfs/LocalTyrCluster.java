package io.blobfs.tyr.blobfs;

import io.blobfs.store.StoreOptions;
import io.blobfs.tyr.engine.EngineConfig;
import io.blobfs.tyr.engine.SyncPolicy;
import io.blobfs.tyr.ring.Member;
import io.blobfs.tyr.ring.Ring;
import io.blobfs.tyr.server.Membership;
import io.blobfs.tyr.server.ServerConfig;
import io.blobfs.tyr.server.TyrServer;
import java.io.IOException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * Test fixture: N Týr nodes in this JVM on loopback TCP, each a member of one ring, and
 * the cluster store on them opened through the provider users configure.
 */
final class LocalTyrCluster implements AutoCloseable {
  final List<TyrServer> servers = new ArrayList<>();
  private final java.util.Set<TyrServer> stopped = new java.util.HashSet<>();
  final List<Member> members = new ArrayList<>();
  private final List<ServerConfig> configs = new ArrayList<>();
  final Ring ring;
  private final Duration txTimeout;

  LocalTyrCluster(Path dir, int n, int vnodes, int replication) throws IOException {
    this(dir, n, vnodes, replication, null);
  }

  /** Nodes that demand {@code secret} of every peer, clients and other nodes alike. */
  LocalTyrCluster(Path dir, int n, int vnodes, int replication, byte[] secret)
      throws IOException {
    this(dir, n, vnodes, replication, secret, Membership.DEFAULT_TX_TIMEOUT);
  }

  /** With {@code txTimeout} for the nodes' prepared cross-node transactions. */
  LocalTyrCluster(Path dir, int n, int vnodes, int replication, byte[] secret,
      Duration txTimeout) throws IOException {
    this.txTimeout = txTimeout;
    for (int i = 0; i < n; i++) {
      members.add(new Member("127.0.0.1", freePort()));
    }
    ring = new Ring(1, members, vnodes, replication);
    try {
      for (int i = 0; i < n; i++) {
        EngineConfig engine = EngineConfig.defaults(dir.resolve("node" + i))
            .withSyncPolicy(SyncPolicy.NONE);
        ServerConfig config = new ServerConfig("127.0.0.1", members.get(i).port(), engine,
            80 << 20, null, 8, 64, Duration.ofSeconds(60), 512L << 20, 128L << 20,
            Duration.ofSeconds(60), null).withSecret(secret);
        configs.add(config);
        servers.add(TyrServer.start(config,
            new Membership(members.get(i), ring).withTxTimeout(txTimeout)));
      }
    } catch (IOException | RuntimeException e) {
      close();
      throw e;
    }
  }

  private static int freePort() throws IOException {
    return io.blobfs.tyr.TestPorts.free();
  }

  /** The node that is {@code m}. */
  TyrServer server(Member m) {
    return servers.get(members.indexOf(m));
  }

  /** Installs {@code next} on every node. */
  void install(Ring next) {
    for (TyrServer s : servers) {
      s.membership().install(next);
    }
  }

  TyrClusterBlobStore store(String name, String... extra) throws IOException {
    Map<String, String> options = new HashMap<>();
    StringBuilder nodes = new StringBuilder();
    for (Member m : members) {
      nodes.append(nodes.length() == 0 ? "" : ",").append(m.id());
    }
    options.put("nodes", nodes.toString());
    options.put("op-timeout", "20s");
    for (int i = 0; i < extra.length; i += 2) {
      options.put(extra[i], extra[i + 1]);
    }
    return (TyrClusterBlobStore) new TyrBlobStoreProvider().open(name,
        new StoreOptions("fs.blob.store." + name + ".", options));
  }

  /** Stops node {@code i} (as if its host went away): it listens no more. */
  void stop(int i) throws IOException {
    if (stopped.add(servers.get(i))) {
      servers.get(i).close();
    }
  }

  /** Starts stopped node {@code i} again on its directory and port. */
  void restart(int i) throws IOException {
    restart(i, ring);
  }

  /** Starts stopped node {@code i} again, under {@code under}. */
  void restart(int i, Ring under) throws IOException {
    TyrServer old = servers.get(i);
    if (!stopped.contains(old)) {
      throw new IllegalStateException("node " + i + " is running");
    }
    servers.set(i, TyrServer.start(configs.get(i),
        new Membership(members.get(i), under).withTxTimeout(txTimeout)));
  }

  /** Installs {@code next} on the running nodes only. */
  void installOnRunning(Ring next) {
    for (TyrServer s : servers) {
      if (!stopped.contains(s)) {
        s.membership().install(next);
      }
    }
  }

  @Override
  public void close() throws IOException {
    for (TyrServer s : servers) {
      if (stopped.add(s)) {
        s.close();
      }
    }
  }
}
