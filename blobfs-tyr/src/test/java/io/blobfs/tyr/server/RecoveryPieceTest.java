package io.blobfs.tyr.server;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assertions.assertEquals;

import io.blobfs.tyr.api.TxOp;
import io.blobfs.tyr.api.TxRequest;
import io.blobfs.tyr.client.TyrClient;
import io.blobfs.tyr.engine.EngineConfig;
import io.blobfs.tyr.engine.SyncPolicy;
import io.blobfs.tyr.ring.Member;
import io.blobfs.tyr.ring.Ring;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.ServerSocket;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Random;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A catch-up that fails between the pieces of a blob leaves the returning node's old copy
 * whole (stale, not truncated); the next run copies the new one.
 */
class RecoveryPieceTest {
  @TempDir
  Path dir;

  @Test
  void aCopyThatFailsBetweenPiecesLeavesTheOldCopyWhole() throws Exception {
    Member a = new Member("127.0.0.1", freePort());
    Member b = new Member("127.0.0.1", freePort());
    Ring ring = new Ring(1, List.of(a, b), 16, 2);
    String key = null;
    for (int i = 0; key == null; i++) {
      key = ring.primary("big/" + i).equals(a) ? "big/" + i : null;
    }
    byte[] stale = bytes(1, (5 << 20) + 3); // two pieces
    byte[] current = bytes(2, (9 << 20) + 12345); // three pieces
    try (TyrServer na = TyrServer.start(config(a, "a"), new Membership(a, ring));
        TyrServer nb = TyrServer.start(config(b, "b"), new Membership(b, ring))) {
      put(nb, key, stale); // b's copy from before it went away
      put(na, key, current); // written on the primary while b was away
      CountDownLatch reached = new CountDownLatch(1);
      CountDownLatch release = new CountDownLatch(1);
      AtomicInteger calls = new AtomicInteger();
      nb.recovery().betweenPieces = () -> {
        if (calls.incrementAndGet() == 1) {
          reached.countDown();
          try {
            release.await(60, TimeUnit.SECONDS);
          } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
          }
          throw new UncheckedIOException(new IOException("injected: the primary is lost"));
        }
      };
      Ring recovering = ring.withState(b, Ring.State.RECOVERING, 2);
      na.membership().install(recovering);
      nb.membership().install(recovering);
      assertThat(reached.await(60, TimeUnit.SECONDS)).as("the copy reached a second piece")
          .isTrue();
      assertThat(local(nb, key)).as("b's copy while the first piece is in").isEqualTo(stale);
      release.countDown(); // that run fails; the next one (1 s later) copies the blob
      long deadline = System.nanoTime() + 60_000_000_000L;
      while (nb.caughtUpEpoch() < 2 && System.nanoTime() < deadline) {
        assertThat(local(nb, key).length).as("never a prefix").isIn(stale.length,
            current.length);
        Thread.sleep(50);
      }
      assertEquals(2, nb.caughtUpEpoch());
      assertThat(calls.get()).isGreaterThan(1);
      assertThat(local(nb, key)).isEqualTo(current);
      assertThat(Files.exists(dir.resolve("b").resolve("recovery-spool"))).isFalse();
    }
  }

  /**
   * A write to the blob while it is copied, between its pieces: on the primary only, or
   * replicated to this node as well. The next piece is of another version than the first,
   * so the copy starts again (with the replicated write, the fresh attempt finds the local
   * copy already equal); either way the node ends with the last written bytes, never a
   * mix of the two versions.
   */
  @Test
  void aWriteBetweenPiecesMakesTheCopyStartAgain() throws Exception {
    for (boolean replicated : new boolean[] {false, true}) {
      Path root = Files.createDirectories(dir.resolve("replicated-" + replicated));
      Member a = new Member("127.0.0.1", freePort());
      Member b = new Member("127.0.0.1", freePort());
      Ring ring = new Ring(1, List.of(a, b), 16, 2);
      String key = null;
      for (int i = 0; key == null; i++) {
        key = ring.primary("big/" + i).equals(a) ? "big/" + i : null;
      }
      String k = key;
      byte[] stale = bytes(1, (5 << 20) + 3);
      byte[] current = bytes(2, (9 << 20) + 12345);
      byte[] newer = bytes(3, (6 << 20) + 77);
      try (TyrServer na = TyrServer.start(config(a, root.resolve("a")), new Membership(a, ring));
          TyrServer nb = TyrServer.start(config(b, root.resolve("b")),
              new Membership(b, ring))) {
        put(nb, k, stale);
        put(na, k, current);
        AtomicInteger calls = new AtomicInteger();
        nb.recovery().betweenPieces = () -> {
          if (calls.incrementAndGet() == 1) {
            try {
              put(na, k, newer);
              if (replicated) {
                put(nb, k, newer);
              }
            } catch (IOException e) {
              throw new UncheckedIOException(e);
            }
          }
        };
        Ring recovering = ring.withState(b, Ring.State.RECOVERING, 2);
        na.membership().install(recovering);
        nb.membership().install(recovering);
        long deadline = System.nanoTime() + 60_000_000_000L;
        while (nb.caughtUpEpoch() < 2 && System.nanoTime() < deadline) {
          Thread.sleep(50);
        }
        assertEquals(2, nb.caughtUpEpoch(), "replicated " + replicated);
        assertThat(calls.get()).isPositive();
        assertThat(local(nb, k)).as("replicated " + replicated).isEqualTo(newer);
      }
    }
  }

  private static byte[] bytes(int seed, int n) {
    byte[] b = new byte[n];
    new Random(seed).nextBytes(b);
    return b;
  }

  private static byte[] local(TyrServer n, String key) throws IOException {
    long size = n.engine().stat(key).size();
    ByteBuffer dst = ByteBuffer.allocate((int) size);
    n.engine().read(key, 0, dst);
    return dst.array();
  }

  private static void put(TyrServer n, String key, byte[] value) throws IOException {
    TyrClient.await(n.engine().commit(TxRequest.of(new TxOp.Put(key, ByteBuffer.wrap(value),
        false))));
  }

  private static int freePort() throws IOException {
    try (ServerSocket s = new ServerSocket(0)) {
      return s.getLocalPort();
    }
  }

  private ServerConfig config(Member m, String name) {
    return config(m, dir.resolve(name));
  }

  private static ServerConfig config(Member m, Path data) {
    EngineConfig engine = EngineConfig.defaults(data)
        .withSyncPolicy(SyncPolicy.NONE);
    return new ServerConfig("127.0.0.1", m.port(), engine, 80 << 20, null, 8,
        64, Duration.ofSeconds(60), 512L << 20, 128L << 20, Duration.ofSeconds(60), null);
  }
}
