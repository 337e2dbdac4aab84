package io.blobfs.tyr.cluster;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.blobfs.store.BlobMutation;
import io.blobfs.store.PutMode;
import io.blobfs.store.StoreOptions;
import io.blobfs.tyr.api.ErrorCode;
import io.blobfs.tyr.api.ReadResult;
import io.blobfs.tyr.api.TyrException;
import io.blobfs.tyr.blobfs.TyrBlobStoreProvider;
import io.blobfs.tyr.blobfs.TyrClusterBlobStore;
import io.blobfs.tyr.client.ClientConfig;
import io.blobfs.tyr.client.TyrClient;
import io.blobfs.tyr.it.SelfSigned;
import io.blobfs.tyr.ring.Member;
import io.blobfs.tyr.ring.Ring;
import io.blobfs.tyr.server.ClusterMonitor;
import io.blobfs.tyr.server.PeerAccess;
import io.blobfs.tyr.server.TyrServerProcess;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.function.Predicate;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Issue 13's "the node-to-node traffic is authenticated like client traffic", with TLS:
 * three server processes (hosts of their own where namespaces work), R = 2, each with the
 * shared secret, a TLS key store of its own (its certificate names its address only), and
 * {@code tls-peer-trust} holding the three certificates; the monitor probes them over TLS
 * too. A node with TLS on has the TLS handler in front of every connection it accepts,
 * from a client or a peer alike, so a replicated write that is acknowledged went to its
 * backup over TLS: before node-to-node TLS every such write failed (the primary's
 * plain-text stream to its backup was refused), which is what this test's writes catch.
 * A transaction over keys of all three primaries commits across the nodes. Each replica's
 * own copy is read back; a plain-text connection with the right secret is
 * refused by every node; and a node killed, written past, and restarted catches up from
 * its peers over TLS and comes back UP (the monitor's TLS probes see it). A peer whose
 * trusted certificate names another host is refused.
 */
class TyrClusterTlsIT {
  private static final Duration WAIT = Duration.ofSeconds(120);

  @TempDir
  Path dir;

  @Test
  void replicationCatchUpAndProbesRunOverTlsAndPlainTextIsRefused() throws Exception {
    Hosts hosts = Hosts.up(3);
    // A key pair per node, its certificate naming that node's address only, and one
    // cluster.pem holding the three: a peer connection that skipped the host check would
    // still pass with one certificate naming every host, not with these.
    StringBuilder pems = new StringBuilder();
    for (int i = 1; i <= 3; i++) {
      SelfSigned.keypair("tyr-node" + i, dir.resolve("node" + i + ".p12"),
          dir.resolve("node" + i + ".pem"), "ip:" + hosts.address(i));
      pems.append(Files.readString(dir.resolve("node" + i + ".pem")));
    }
    Path trust = Files.writeString(dir.resolve("cluster.pem"), pems);
    Path password = Files.writeString(dir.resolve("password"), SelfSigned.PASSWORD + "\n");
    Path secretFile = Files.writeString(dir.resolve("secret"), "node-and-client-secret\n");
    byte[] secret = "node-and-client-secret".getBytes(StandardCharsets.UTF_8);
    try (TyrProcessCluster c = TyrProcessCluster.startOn(hosts,
            Files.createDirectories(dir.resolve("tyr")), 3, 64, 2,
            i -> List.of("--tls-keystore", dir.resolve("node" + i + ".p12").toString()),
            "--secret-file", secretFile.toString(),
            "--tls-keystore-password-file", password.toString(),
            "--tls-peer-trust", trust.toString());
        ClusterMonitor monitor = new ClusterMonitor(c.ringFile(), new PeerAccess(secret, trust),
            Duration.ofSeconds(5), Duration.ofMillis(300));
        TyrClusterBlobStore store = (TyrClusterBlobStore) new TyrBlobStoreProvider().open(
            "tls", new StoreOptions("fs.blob.store.tls.", Map.of("nodes", c.nodesOption(),
                "secret-file", secretFile.toString(), "tls-trust", trust.toString(),
                "connect-timeout", "5s", "op-timeout", "20s")))) {
      Map<String, String> want = new TreeMap<>();
      for (int i = 0; i < 200; i++) {
        want.put("t/" + i, "over TLS " + i);
        store.put("t/" + i, utf8(want.get("t/" + i)), PutMode.OVERWRITE);
      }
      // The monitor's probes are TLS: every node UP by them (under load a slow first
      // handshake may have marked one DOWN for a while; it is then RECOVERING, caught up
      // from its peers over TLS, and UP again).
      Ring ring = awaitRing(c, Rings::allUp, "every node UP");
      // One transaction over keys whose primaries are the three nodes: a cross-node
      // commit, each part applied and replicated by its node over TLS.
      List<BlobMutation> tx = new ArrayList<>();
      Set<Member> primaries = new HashSet<>();
      for (int i = 0; primaries.size() < c.members().size(); i++) {
        String k = "x/" + i;
        if (primaries.add(ring.primary(k))) {
          want.put(k, "one transaction, " + k);
          tx.add(new BlobMutation.Put(k, utf8(want.get(k)), PutMode.OVERWRITE));
        }
      }
      store.commit(tx);
      int copies = Rings.underStableRing(c.ringFile(), WAIT,
          r -> checkEachReplica(r, want, secret, trust));
      assertThat(copies).as("replica copies read back").isEqualTo(2 * want.size());

      for (Member m : c.members()) {
        try (TyrClient plain = new TyrClient(new PeerAccess(secret, null).client(m)
            .withTimeouts(Duration.ofSeconds(5), Duration.ofSeconds(5)))) {
          assertThatThrownBy(() -> TyrClient.await(plain.ping()))
              .as("a plain-text connection to %s, as a node without TLS would make", m)
              .isInstanceOf(TyrException.class);
        }
      }

      Member lost = c.members().get(2);
      c.node(2).kill();
      awaitRing(c, r -> r.state(lost) == Ring.State.DOWN, lost + " DOWN");
      for (int i = 0; i < 200; i += 2) {
        want.put("t/" + i, "while " + lost + " was down " + i);
        store.put("t/" + i, utf8(want.get("t/" + i)), PutMode.OVERWRITE);
      }
      c.node(2).start(); // catches up from its peers, over TLS, then UP
      awaitRing(c, Rings::allUp, lost + " UP again");
      int after = Rings.underStableRing(c.ringFile(), WAIT,
          r -> checkEachReplica(r, want, secret, trust));
      assertThat(after).as("replica copies read back after the catch-up")
          .isEqualTo(2 * want.size());
      System.out.println("TLS-CLUSTER-IT " + want.size() + " keys written over TLS, R = 2, "
          + "each replica's copy read back before and after " + lost + " was killed and "
          + "caught up; plain text refused by all " + c.members().size() + " nodes ("
          + (c.onOwnHosts() ? "namespaces" : "loopback") + ")");
    }
  }

  /**
   * The host check of a peer connection: a node whose certificate is trusted but names
   * another host is refused by a client built as the nodes build theirs ({@link
   * PeerAccess}), and accepted once its certificate names its own address.
   */
  @Test
  void aPeerWhoseCertificateNamesAnotherHostIsRefused() throws Exception {
    Path password = Files.writeString(dir.resolve("password"), SelfSigned.PASSWORD + "\n");
    Path secretFile = Files.writeString(dir.resolve("secret"), "node-and-client-secret\n");
    byte[] secret = "node-and-client-secret".getBytes(StandardCharsets.UTF_8);
    for (boolean misnamed : List.of(true, false)) {
      String name = misnamed ? "misnamed" : "named";
      // 192.0.2.1 (TEST-NET-1) is no host here: the certificate is for someone else.
      SelfSigned.keypair(name, dir.resolve(name + ".p12"), dir.resolve(name + ".pem"),
          misnamed ? "ip:192.0.2.1" : "ip:127.0.0.1");
      try (TyrServerProcess node = new TyrServerProcess(
              Files.createDirectories(dir.resolve(name)), "--secret-file",
              secretFile.toString(), "--tls-keystore", dir.resolve(name + ".p12").toString(),
              "--tls-keystore-password-file", password.toString()).start();
          TyrClient peer = new TyrClient(new PeerAccess(secret, dir.resolve(name + ".pem"))
              .client(new Member("127.0.0.1", node.port()))
              .withTimeouts(Duration.ofSeconds(30), Duration.ofSeconds(30)))) {
        if (misnamed) {
          assertThatThrownBy(() -> TyrClient.await(peer.ping()))
              .as("a peer whose trusted certificate names 192.0.2.1, reached at 127.0.0.1")
              .isInstanceOfSatisfying(TyrException.class,
                  e -> assertThat(e.code()).isEqualTo(ErrorCode.UNAUTHENTICATED))
              .hasMessageContaining("TLS");
        } else {
          TyrClient.await(peer.ping());
        }
      }
    }
  }

  /** Reads every key from each of its replicas alone; returns the number of copies read. */
  private static int checkEachReplica(Ring ring, Map<String, String> want, byte[] secret,
      Path trust) throws Exception {
    int copies = 0;
    for (Member m : ring.members()) {
      ClientConfig cc = new PeerAccess(secret, trust).client(m);
      try (TyrClient raw = new TyrClient(cc)) {
        raw.routeUnder(ring::epoch);
        for (Map.Entry<String, String> e : want.entrySet()) {
          if (!ring.isReplica(m, e.getKey())) {
            continue;
          }
          ReadResult r = Rings.underEpoch(ring, () -> raw.read(e.getKey(), 0, 1000));
          byte[] b = new byte[r.data().remaining()];
          r.data().get(b);
          assertThat(new String(b, StandardCharsets.UTF_8)).as("%s on %s", e.getKey(), m)
              .isEqualTo(e.getValue());
          copies++;
        }
      }
    }
    return copies;
  }

  private static Ring awaitRing(TyrProcessCluster c, Predicate<Ring> p, String what)
      throws Exception {
    return Rings.await(c.ringFile(), p, what, WAIT);
  }

  private static ByteBuffer utf8(String s) {
    return ByteBuffer.wrap(s.getBytes(StandardCharsets.UTF_8));
  }
}
