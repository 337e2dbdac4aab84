package io.blobfs.tyr.server;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.blobfs.store.StoreOptions;
import io.blobfs.tyr.client.ClientConfig;
import io.blobfs.tyr.ring.Member;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * The node-to-node side of a server's TLS settings: what its peer connections use, and the
 * combinations refused before anything starts (the files are not read by parse).
 */
class PeerTlsConfigTest {
  private static ServerConfig parse(Map<String, String> extra) throws Exception {
    Map<String, String> o = new HashMap<>(Map.of("data-dir", "/nonexistent/tyr"));
    o.putAll(extra);
    return ServerConfig.parse(new StoreOptions("", o), "peer-secret");
  }

  @Test
  void aTlsNodeConnectsToItsPeersOverTlsWithItsSecret() throws Exception {
    ServerConfig c = parse(Map.of("tls-keystore", "/k.p12",
        "tls-keystore-password-file", "/pw", "tls-peer-trust", "/peers.pem"));
    c.checkPeerTls(true);
    ClientConfig peer = c.peerAccess().client(new Member("10.0.0.2", 7400));
    assertThat(peer.tlsTrust()).isEqualTo(Path.of("/peers.pem"));
    assertThat(peer.secret()).isEqualTo("peer-secret".getBytes(StandardCharsets.UTF_8));
    assertThat(peer.address()).isEqualTo("10.0.0.2:7400");
  }

  @Test
  void aNodeWithoutTlsConnectsToItsPeersInPlainText() throws Exception {
    ServerConfig c = parse(Map.of());
    c.checkPeerTls(true);
    assertThat(c.peerAccess().client(new Member("10.0.0.2", 7400)).tlsTrust()).isNull();
  }

  @Test
  void aClusterMemberWithTlsButNoPeerTrustIsRefused() throws Exception {
    ServerConfig c = parse(Map.of("tls-keystore", "/k.p12",
        "tls-keystore-password-file", "/pw"));
    c.checkPeerTls(false); // a lone node has no peers
    assertThatThrownBy(() -> c.checkPeerTls(true))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("tls-peer-trust");
  }

  @Test
  void peerTrustWithoutAKeyStoreIsRefused() {
    // It would speak TLS to its peers while taking plain text itself.
    assertThatThrownBy(() -> parse(Map.of("tls-peer-trust", "/peers.pem")))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("tls-keystore");
  }
}
