package io.blobfs.tyr.server;

import static org.assertj.core.api.Assertions.assertThat;

import io.blobfs.tyr.api.CommitResult;
import io.blobfs.tyr.api.TxOp;
import io.blobfs.tyr.api.TxRequest;
import io.blobfs.tyr.engine.EngineConfig;
import io.blobfs.tyr.engine.SyncPolicy;
import io.blobfs.tyr.protocol.Request;
import io.blobfs.tyr.protocol.TxDecision;
import io.blobfs.tyr.ring.Member;
import io.blobfs.tyr.ring.Ring;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Waking the next holder (issue 13, PLAN step 7): b takes over two shares of one key, X
 * (coordinator q, down; aborted) ahead of Y (decided commit). Y's apply meets X's hold and
 * is retried after a pause, here set to 30 minutes for its first one. Once X is aborted
 * (q comes up and answers b's query) Y must apply within seconds, not after its pause:
 * before, a blocked key waited out the pause (up to 30 s in production), the key reserved
 * (writes and checks of it CONFLICT) all that time.
 */
class NextHolderWakeTest {
  private static final Duration LONG = Duration.ofSeconds(120);
  private static final String X = "1a1e2d3c-4b5a-4978-8695-a4b3c2d1e0f9";
  private static final String Y = "0f1e2d3c-4b5a-4978-8695-a4b3c2d1e0f9";

  @TempDir Path dir;

  @Test
  void theNextHolderAppliesOnceThePartAheadIsAbortedNotAfterItsPause() throws Exception {
    Member p = new Member("127.0.0.1", io.blobfs.tyr.TestPorts.free());
    Member b = new Member("127.0.0.1", io.blobfs.tyr.TestPorts.free());
    Member q = new Member("127.0.0.1", io.blobfs.tyr.TestPorts.free());
    Ring ring = new Ring(1, List.of(p, b), 16, 2);
    String key = null;
    for (int i = 0; key == null; i++) {
      key = ring.owners("k/" + i).equals(List.of(p, b)) ? "k/" + i : null;
    }
    try (TyrServer np = start(p, ring, "p", LONG);
        TyrServer nb = start(b, ring, "b", Duration.ofSeconds(1))) {
      nb.transactions().firstRetryPause(Duration.ofMinutes(30));
      np.transactions().prepare(new Request.Prepare(X, q.id(), List.of(p.id(), q.id()),
          put(key, 1))).join();
      np.transactions().decide(new Request.Decide(X, TxDecision.APPLY_ABORT)).join();
      np.transactions().prepare(new Request.Prepare(Y, p.id(), List.of(p.id()),
          put(key, 2))).join();
      assertThat(nb.transactions().held()).hasSize(2);
      nb.membership().install(ring.withEpoch(2)); // b refuses p's apply of Y
      Object answer = np.transactions().decide(new Request.Decide(Y,
          TxDecision.DECIDE_COMMIT)).thenApply(r -> ((CommitResult) r).version()).join();
      assertThat(answer).isEqualTo((long) TxDecision.COMMITTED_NOT_APPLIED);
      nb.membership().install(ring.withState(p, Ring.State.DOWN, 3)); // b takes both over
      long end = System.nanoTime() + Duration.ofSeconds(60).toNanos();
      while (nb.transactions().retries() == 0) {
        assertThat(System.nanoTime()).as("Y's apply refused behind X's hold").isLessThan(end);
        Thread.sleep(20);
      }
      assertThat(nb.engine().stat(key).exists()).isFalse();
      try (TyrServer nq = start(q, new Ring(1, List.of(q), 16, 1), "q", LONG)) {
        long t0 = System.nanoTime();
        end = t0 + Duration.ofSeconds(60).toNanos();
        while (!nb.engine().stat(key).exists() || !nb.transactions().prepared().isEmpty()) {
          assertThat(System.nanoTime()).as("Y applied on b, parts "
              + nb.transactions().prepared()).isLessThan(end);
          Thread.sleep(20);
        }
        assertThat(Duration.ofNanos(System.nanoTime() - t0)).as("from q's start to Y's apply")
            .isLessThan(Duration.ofSeconds(5));
      }
      ByteBuffer got = ByteBuffer.allocate(1);
      nb.engine().read(key, 0, got);
      assertThat(got.array()).containsExactly(2);
    }
  }

  private static TxRequest put(String key, int v) {
    return new TxRequest(List.of(), List.of(new TxOp.Put(key,
        ByteBuffer.wrap(new byte[] {(byte) v}), false)));
  }

  private TyrServer start(Member m, Ring ring, String name, Duration txTimeout)
      throws IOException {
    EngineConfig engine = EngineConfig.defaults(dir.resolve(name))
        .withSyncPolicy(SyncPolicy.NONE);
    ServerConfig config = new ServerConfig("127.0.0.1", m.port(), engine, 80 << 20, null, 8,
        64, Duration.ofSeconds(60), 512L << 20, 128L << 20, Duration.ofSeconds(60), null);
    return TyrServer.start(config, new Membership(m, ring).withTxTimeout(txTimeout));
  }
}
