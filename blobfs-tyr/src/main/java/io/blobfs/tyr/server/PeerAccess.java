package io.blobfs.tyr.server;

import io.blobfs.tyr.client.ClientConfig;
import io.blobfs.tyr.ring.Member;
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

  /** A client's settings for {@code peer}, before the caller's timeouts and limits. */
  public ClientConfig client(Member peer) {
    return ClientConfig.of(peer.host(), peer.port()).withSecret(secret).withTlsTrust(tlsTrust);
  }
}
