package io.blobfs.e2e;

import static org.assertj.core.api.Assertions.assertThat;

import io.blobfs.tyr.api.ReadResult;
import io.blobfs.tyr.api.ScanResult;
import io.blobfs.tyr.client.ClientConfig;
import io.blobfs.tyr.client.TyrClient;
import io.blobfs.tyr.cluster.Rings;
import io.blobfs.tyr.ring.Member;
import io.blobfs.tyr.ring.Ring;
import java.io.IOException;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;
import java.util.TreeSet;

/**
 * What two replicas of a Týr cluster hold, read from each node alone (raw clients routed
 * under the ring's epoch): after a node's catch-up its copy of every key it shares with a
 * peer must be the peer's, byte for byte, and neither may hold a key the other lacks. Run
 * it under {@link Rings#underStableRing}: a ring change during the comparison redoes it.
 */
final class TyrReplicas {
  private static final int PAGE = 1000;
  private static final int PIECE = 4 << 20;

  private TyrReplicas() {}

  /**
   * Checks {@code node}'s copies against each other member's, for the keys both own under
   * {@code ring}; returns how many keys were compared.
   */
  static int assertSameAsPeers(Ring ring, Member node) throws IOException {
    int compared = 0;
    try (TyrClient mine = raw(node, ring)) {
      for (Member peer : ring.members()) {
        if (peer.equals(node)) {
          continue;
        }
        try (TyrClient theirs = raw(peer, ring)) {
          TreeSet<String> onMine = shared(mine, ring, node, peer);
          TreeSet<String> onTheirs = shared(theirs, ring, node, peer);
          assertThat(onMine).as("keys %s and %s both own, as %s holds them", node, peer, node)
              .isEqualTo(onTheirs);
          for (String key : onMine) {
            assertThat(digest(mine, ring, key)).as("%s on %s against %s", key, node, peer)
                .isEqualTo(digest(theirs, ring, key));
            compared++;
          }
        }
      }
    }
    return compared;
  }

  private static TyrClient raw(Member m, Ring ring) {
    TyrClient c = new TyrClient(ClientConfig.of(m.host(), m.port()));
    c.routeUnder(ring::epoch);
    return c;
  }

  /** The keys {@code c} holds that both {@code a} and {@code b} own under {@code ring}. */
  private static TreeSet<String> shared(TyrClient c, Ring ring, Member a, Member b)
      throws IOException {
    TreeSet<String> keys = new TreeSet<>();
    String cursor = null;
    do {
      String from = cursor;
      ScanResult page = Rings.underEpoch(ring, () -> c.scan("", from, PAGE));
      for (String k : page.keys()) {
        if (ring.isReplica(a, k) && ring.isReplica(b, k)) {
          keys.add(k);
        }
      }
      cursor = page.nextCursor();
    } while (cursor != null);
    return keys;
  }

  private static String digest(TyrClient c, Ring ring, String key) throws IOException {
    MessageDigest md;
    try {
      md = MessageDigest.getInstance("SHA-256");
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException(e);
    }
    long offset = 0;
    long size;
    do {
      long from = offset;
      ReadResult r = Rings.underEpoch(ring, () -> c.read(key, from, PIECE));
      size = r.size();
      int n = r.data().remaining();
      md.update(r.data());
      offset += n;
      if (n == 0) {
        break; // the size says more, the read gives nothing: the digest will differ
      }
    } while (offset < size);
    return size + ":" + HexFormat.of().formatHex(md.digest());
  }
}
