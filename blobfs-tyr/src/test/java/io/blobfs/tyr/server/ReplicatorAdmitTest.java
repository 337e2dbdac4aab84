package io.blobfs.tyr.server;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.junit.jupiter.api.Assertions.assertEquals;

import io.blobfs.tyr.api.CommitResult;
import io.blobfs.tyr.api.TxOp;
import io.blobfs.tyr.api.TxRequest;
import io.blobfs.tyr.client.TyrClient;
import io.blobfs.tyr.engine.EngineConfig;
import io.blobfs.tyr.engine.SyncPolicy;
import io.blobfs.tyr.protocol.Request;
import io.blobfs.tyr.protocol.TxDecision;
import io.blobfs.tyr.ring.Member;
import io.blobfs.tyr.ring.Ring;
import io.blobfs.tyr.ring.WrongEpochException;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A commit that reaches the replicator under a ring newer than the one its request was
 * checked under (review must-fix 3): the node must be UP and the key's primary under the
 * ring the commit is admitted under, or nothing is applied, not even locally.
 */
class ReplicatorAdmitTest {
  @TempDir
  Path dir;

  private static int freePort() throws IOException {
    return io.blobfs.tyr.TestPorts.free();
  }

  /** P checked the request while UP; P is DOWN when it admits it: B alone is the key's writer. */
  @Test
  void aNodeMarkedDownSinceTheCheckDoesNotCommitNorAcknowledge() throws Exception {
    Member p = new Member("127.0.0.1", freePort());
    Member b = new Member("127.0.0.1", freePort());
    Ring ring = new Ring(1, List.of(p, b), 16, 2);
    String key = keyWithPrimary(ring, p);
    try (TyrServer node = start(p, ring, "p")) {
      Ring down = ring.withState(p, Ring.State.DOWN, 2);
      node.membership().install(down); // after the check, before the admit
      assertThatThrownBy(() -> TyrClient.await(node.replicator().commit(put(key))))
          .isInstanceOf(WrongEpochException.class).hasMessageContaining("DOWN");
      assertEquals(0, node.engine().stat(key).version(), "applied on a DOWN node");
    }
  }

  /** An UP node that is only a backup of the key under the admitted ring applies nothing. */
  @Test
  void aNodeThatIsNoLongerTheKeysPrimaryAppliesNothing() throws Exception {
    Member p = new Member("127.0.0.1", freePort());
    Member b = new Member("127.0.0.1", freePort());
    Ring ring = new Ring(1, List.of(p, b), 16, 2);
    String key = keyWithPrimary(ring, b); // p holds a replica; b is primary
    try (TyrServer node = start(p, ring, "p")) {
      assertThatThrownBy(() -> TyrClient.await(node.replicator().commit(put(key))))
          .isInstanceOf(WrongEpochException.class).hasMessageContaining("not the primary");
      assertEquals(0, node.engine().stat(key).version(), "applied by a backup");
    }
  }

  /**
   * A prepared cross-node part whose node is RECOVERING when the commit decision comes
   * (review should-fix 4c): the part is not applied to the engine of a node that is no
   * longer its keys' UP primary. It is dropped with the ring (its keys' new primary holds
   * its replicated share and resolves it), so this node, the coordinator, decides abort:
   * it has no part left to commit. (The backup is DOWN, so the prepare needs no copy.)
   */
  @Test
  void aCommitDecisionOnANodeThatIsNotUpAppliesNothing() throws Exception {
    Member p = new Member("127.0.0.1", freePort());
    Member b = new Member("127.0.0.1", freePort());
    Ring ring = new Ring(1, List.of(p, b), 16, 2).withState(b, Ring.State.DOWN, 1);
    String key = keyWithPrimary(ring, p);
    try (TyrServer node = start(p, ring, "p")) {
      Transactions t = node.transactions();
      String id = "5e4d3c2b-1a09-4f8e-9d7c-6b5a4f3e2d1c";
      t.prepare(new Request.Prepare(id, p.id(), List.of(p.id()), put(key))).join();
      node.membership().install(ring.withState(p, Ring.State.RECOVERING, 2));
      assertThat(t.prepared()).isEmpty(); // dropped with the ring, its keys released
      Object answer = t.decide(new Request.Decide(id, TxDecision.DECIDE_COMMIT)).handle(
          (r, e) -> e != null ? e : ((CommitResult) r).version()).join();
      assertThat(answer).isEqualTo((long) TxDecision.ABORTED);
      assertEquals(0, node.engine().stat(key).version(), "applied on a RECOVERING node");
    }
  }

  private static String keyWithPrimary(Ring ring, Member m) {
    for (int i = 0; ; i++) {
      if (ring.primary("k/" + i).equals(m)) {
        assertThat(ring.isReplica(m, "k/" + i)).isTrue();
        return "k/" + i;
      }
    }
  }

  private static TxRequest put(String key) {
    return new TxRequest(List.of(), List.of(new TxOp.Put(key, ByteBuffer.wrap(new byte[] {1}),
        false)));
  }

  private TyrServer start(Member m, Ring ring, String name) throws IOException {
    EngineConfig engine = EngineConfig.defaults(dir.resolve(name))
        .withSyncPolicy(SyncPolicy.NONE);
    ServerConfig config = new ServerConfig("127.0.0.1", m.port(), engine, 80 << 20, null, 8,
        64, Duration.ofSeconds(60), 512L << 20, 128L << 20, Duration.ofSeconds(60), null);
    return TyrServer.start(config, new Membership(m, ring));
  }
}
