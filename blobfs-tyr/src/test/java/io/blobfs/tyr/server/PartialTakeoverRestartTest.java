package io.blobfs.tyr.server;

import static org.assertj.core.api.Assertions.assertThat;

import io.blobfs.tyr.api.TxOp;
import io.blobfs.tyr.api.TxRequest;
import io.blobfs.tyr.engine.EngineConfig;
import io.blobfs.tyr.engine.SyncPolicy;
import io.blobfs.tyr.engine.TyrEngine;
import io.blobfs.tyr.protocol.Request;
import io.blobfs.tyr.ring.Member;
import io.blobfs.tyr.ring.Ring;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A share taken over in part (some of its keys now another node's primary) and read back at
 * a restart beside the part it became: it is not taken over again (the review of the
 * second fix of tyr-bug1, session 10).
 */
class PartialTakeoverRestartTest {
  @TempDir Path dir;

  private static final String X = "1a1e2d3c-4b5a-4978-8695-a4b3c2d1e0f9";
  private final Member p = new Member("127.0.0.1", 1);
  private final Member b = new Member("127.0.0.1", 2);
  private final Member c = new Member("127.0.0.1", 3);

  /**
   * The guard of 6fb054e ("a share read back beside the part it was taken over as")
   * checks the share's own name; a share taken over in part (some keys now another
   * node's) became a part under shareName(mine), another name. A crash between that part's
   * record and the share's deletion: at the restart the whole share is taken over again,
   * its part replaces the live one of the same name (reserve appends, the count as running
   * of the first leaks) and a later ring never settles.
   */
  @Test
  void aShareTakenOverInPartAndReadBackBesideItsPartIsNotTakenOverAgain() throws Exception {
    Ring ring = new Ring(1, List.of(p, b, c), 16, 2);
    String k1 = keyOwnedBy(ring, p, b);
    String k2 = null;
    Ring down = ring.withState(p, Ring.State.DOWN, 2);
    for (int i = 0; k2 == null; i++) {
      String cand = "j/" + i;
      if (ring.owners(cand).get(0).equals(p) && down.primary(cand).equals(c)) {
        k2 = cand;
      }
    }
    assertThat(down.primary(k1)).isEqualTo(b);
    try (TyrEngine engine = open(dir.resolve("b"))) {
      TxRecords recs = new TxRecords(engine.config().directory());
      TxRequest both = new TxRequest(List.of(), List.of(
          new TxOp.Put(k1, ByteBuffer.wrap(new byte[] {1}), false),
          new TxOp.Put(k2, ByteBuffer.wrap(new byte[] {1}), false)));
      Request.Prepare whole = new Request.Prepare(X, b.id(), List.of(b.id()), both);
      Request.Prepare mine = new Request.Prepare(X, b.id(), List.of(b.id()), put(k1, 1));
      Request.Prepare rest = new Request.Prepare(X, b.id(), List.of(b.id()), put(k2, 1));
      String wholeName = X + "-s" + Integer.toHexString(sorted(k1, k2).hashCode());
      recs.writeReplica(wholeName, TxRecords.encode(whole, Map.of(k1, 0L, k2, 0L), 0));
      recs.writeReplica(share(X, k2), TxRecords.encode(rest, Map.of(k2, 0L), 0));
      recs.writePrepared(share(X, k1), TxRecords.encode(mine, Map.of(k1, 0L), 0));
      recs.writeDecision(X, true);
      Membership m = new Membership(b, down).withTxTimeout(Duration.ofSeconds(1));
      try (Transactions t = new Transactions(engine, m, null, PeerAccess.NONE, 1 << 20)) {
        long end = System.nanoTime() + Duration.ofSeconds(60).toNanos();
        while (!t.prepared().isEmpty()) {
          assertThat(System.nanoTime()).isLessThan(end);
          Thread.sleep(20);
        }
        assertThat(read(engine, k1)).isEqualTo((byte) 1);
        m.install(down.withState(p, Ring.State.DOWN, 3));
        assertThat(m.settled(3).get(30, java.util.concurrent.TimeUnit.SECONDS).epoch())
            .as("nothing left counted as running under epoch 2").isEqualTo(3);
      }
    }
  }

  private static List<String> sorted(String a, String b) {
    List<String> l = new ArrayList<>(List.of(a, b));
    l.sort(null);
    return l;
  }

  private static TyrEngine open(Path data) throws Exception {
    return TyrEngine.open(EngineConfig.defaults(data).withSyncPolicy(SyncPolicy.NONE));
  }

  private static byte read(TyrEngine e, String k) throws Exception {
    ByteBuffer got = ByteBuffer.allocate(1);
    e.read(k, 0, got);
    return got.array()[0];
  }

  private static String share(String id, String k) {
    return id + "-s" + Integer.toHexString(List.of(k).hashCode());
  }

  private static String keyOwnedBy(Ring ring, Member... owners) {
    for (int i = 0; ; i++) {
      if (ring.owners("k/" + i).equals(List.of(owners))) {
        return "k/" + i;
      }
    }
  }

  private static TxRequest put(String key, int v) {
    return new TxRequest(List.of(), List.of(new TxOp.Put(key,
        ByteBuffer.wrap(new byte[] {(byte) v}), false)));
  }
}
