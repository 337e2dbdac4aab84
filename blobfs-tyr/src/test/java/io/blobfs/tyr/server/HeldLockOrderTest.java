package io.blobfs.tyr.server;

import static org.assertj.core.api.Assertions.assertThat;

import io.blobfs.tyr.api.TxOp;
import io.blobfs.tyr.api.TxRequest;
import io.blobfs.tyr.client.TyrClient;
import io.blobfs.tyr.engine.EngineConfig;
import io.blobfs.tyr.engine.SyncPolicy;
import io.blobfs.tyr.protocol.Request;
import io.blobfs.tyr.ring.Member;
import io.blobfs.tyr.ring.Ring;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Review of tyr-held (session 11): the lock-order cycle the author noted. A backup
 * refusing a batch (Replicator.apply, under the Replicator's monitor) records the refusal
 * under the membership's lock (refused: membership.withRing); an install holds the
 * membership's lock and takes the Replicator's (restartStreamsToDown, and a takeover's
 * hand-on in replicatePrepare). Here the install's thread holds the membership's lock
 * as install does, a refused batch comes in, then the install runs: the two threads
 * deadlock. (The refusal at a stream gap is on stage6 already; tyr-held adds the one
 * after a failed share record.) On failure the two daemon threads stay blocked. Written
 * by the review of tyr-held; the fix records the refusal out of the Replicator's lock.
 */
class HeldLockOrderTest {
  @TempDir Path dir;

  @Test
  void aRefusedBatchDuringAnInstallDoesNotDeadlock() throws Exception {
    Member p = new Member("127.0.0.1", io.blobfs.tyr.TestPorts.free());
    Member b = new Member("127.0.0.1", io.blobfs.tyr.TestPorts.free());
    Ring ring = new Ring(1, List.of(p, b), 16, 2);
    TyrServer nb = start(b, ring);
    Replicator r = nb.replicator();
    Membership m = nb.membership();
    long inc = 42;
    TyrClient.await(r.apply(new Request.Replicate(1, p.id(), inc, 1, List.of(put("a")))));
    CountDownLatch held = new CountDownLatch(1);
    Thread refusing = new Thread(() -> {
      try {
        held.await();
        r.apply(new Request.Replicate(1, p.id(), inc, 5, List.of(put("a")))); // a gap
      } catch (Exception e) {
        // the refusal's answer: not what this test looks at
      }
    }, "refusing-batch");
    Thread installing = new Thread(() -> {
      synchronized (m) { // what install holds while its listeners run
        held.countDown();
        while (refusing.getState() != Thread.State.BLOCKED && refusing.isAlive()) {
          Thread.onSpinWait();
        }
        m.install(ring.withEpoch(2));
      }
    }, "installing");
    refusing.setDaemon(true);
    installing.setDaemon(true);
    installing.start();
    refusing.start();
    ThreadMXBean mx = ManagementFactory.getThreadMXBean();
    long end = System.nanoTime() + Duration.ofSeconds(30).toNanos();
    long[] deadlocked = null;
    while ((installing.isAlive() || refusing.isAlive()) && System.nanoTime() < end) {
      deadlocked = mx.findMonitorDeadlockedThreads();
      if (deadlocked != null) {
        break;
      }
      Thread.sleep(20);
    }
    assertThat(deadlocked).as("threads deadlocked: the install (membership -> Replicator) "
        + "and the refused batch (Replicator -> membership)").isNull();
    installing.join();
    refusing.join();
    nb.close();
  }

  private static TxRequest put(String key) {
    return new TxRequest(List.of(), List.of(new TxOp.Put(key, ByteBuffer.wrap(new byte[] {1}),
        false)));
  }

  private TyrServer start(Member m, Ring ring) throws Exception {
    EngineConfig engine = EngineConfig.defaults(dir.resolve("b"))
        .withSyncPolicy(SyncPolicy.NONE);
    ServerConfig config = new ServerConfig("127.0.0.1", m.port(), engine, 80 << 20, null, 8,
        64, Duration.ofSeconds(60), 512L << 20, 128L << 20, Duration.ofSeconds(60), null);
    return TyrServer.start(config, new Membership(m, ring));
  }
}
