package io.blobfs.tyr.server;

import io.blobfs.tyr.client.ClientConfig;
import io.blobfs.tyr.protocol.Tls;
import io.blobfs.tyr.ring.Member;
import java.io.IOException;
import java.nio.file.Path;

/**
 * How a node, or the monitor, connects to the other nodes: as a client does, proving the
 * cluster's shared secret, and over TLS when the cluster uses it, trusting the peers'
 * certificates in {@code tlsTrust} and checking that each names the member's host. A node
 * with TLS on accepts no plain-text connection, from a client or a peer alike, so every
 * node-to-node connection of a TLS cluster must be TLS too.
 *
 * @param secret the shared secret, or null for none
 * @param tlsTrust PEM certificates trusted for the peers (null: plain TCP)
 */
public record PeerAccess(byte[] secret, Path tlsTrust) {
  /** No secret, plain TCP: a cluster without either. */
  public static final PeerAccess NONE = new PeerAccess(null, null);

  public PeerAccess {
    secret = Authenticator.checked(secret, "the cluster's secret");
  }

  /**
   * Reads the trusted certificates once, so that a missing or garbled file stops the node
   * (or the monitor) at start, under the name of its option, rather than failing each peer
   * connection later, in the middle of a write.
   *
   * @param option the option that named the file, for the message
   * @throws IOException if TLS is on and the file cannot be used
   */
  public void check(String option) throws IOException {
    if (tlsTrust != null) {
      try {
        Tls.client(tlsTrust);
      } catch (IOException e) {
        throw new IOException(option + " " + tlsTrust + " cannot be used to trust the "
            + "peers' certificates: " + e.getMessage(), e);
      }
    }
  }

  /** A client's settings for {@code peer}, before the caller's timeouts and limits. */
  public ClientConfig client(Member peer) {
    return ClientConfig.of(peer.host(), peer.port()).withSecret(secret).withTlsTrust(tlsTrust);
  }
}
