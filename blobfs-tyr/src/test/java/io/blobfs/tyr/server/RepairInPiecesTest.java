package io.blobfs.tyr.server;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.blobfs.tyr.api.BackupUnconfirmedException;
import io.blobfs.tyr.api.TxOp;
import io.blobfs.tyr.api.TxRequest;
import io.blobfs.tyr.engine.EngineConfig;
import io.blobfs.tyr.engine.SyncPolicy;
import io.blobfs.tyr.protocol.Request;
import io.blobfs.tyr.ring.Member;
import io.blobfs.tyr.ring.Ring;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Issue 13's review, M4: a key too large for the repair's put in one frame (here 5 MiB
 * with {@code max-frame} 3 MiB, as 79 MiB and more are with the default 80 MiB) whose
 * backup fenced it (it refused W1). W2, a write at an offset, is refused there and owed;
 * the primary repairs the key in pieces, which the backup stages and applies at the last
 * as one whole write: the backup's copy equals the primary's, the fence is lifted and the
 * next write at an offset is confirmed. Failed before: the key stayed owed and fenced,
 * and every write in part of it failed until it was written whole.
 */
class RepairInPiecesTest {
  private static final int MAX_FRAME = 3 << 20;

  @TempDir
  Path dir;

  @Test
  void aFencedKeyLargerThanAFrameIsRepairedInPiecesAndTheFenceLifted() throws Exception {
    Member p = member();
    Member b = member();
    Ring ring = new Ring(1, List.of(p, b), 16, 2);
    String key = keyOwnedBy(ring, null, p, b);
    String small = keyOwnedBy(ring, key, p, b);
    byte[] big = new byte[5 << 20];
    new Random(13).nextBytes(big);
    try (TyrServer np = start(p, ring, "p"); TyrServer nb = start(b, ring, "b")) {
      // Both replicas hold the big key (as after a catch-up), and the stream runs.
      np.engine().commit(TxRequest.of(new TxOp.Put(key, ByteBuffer.wrap(big), false)))
          .get(1, TimeUnit.MINUTES);
      nb.engine().commit(TxRequest.of(new TxOp.Put(key, ByteBuffer.wrap(big), false)))
          .get(1, TimeUnit.MINUTES);
      Replicator primary = np.replicator();
      primary.commit(TxRequest.of(new TxOp.Put(small, utf8("s"), false)))
          .get(1, TimeUnit.MINUTES);
      // W1: applied on the primary, refused by the backup (as for a ring it was ahead on).
      TxRequest w1 = TxRequest.of(new TxOp.Write(key, 0, utf8("BB")));
      np.engine().commit(w1).get(1, TimeUnit.MINUTES);
      nb.replicator().refused(new Request.Replicate(1, p.id(), 7, 1, List.of(w1)));

      assertThatThrownBy(() -> primary.commit(TxRequest.of(new TxOp.Write(key, 2,
          utf8("C")))).get(1, TimeUnit.MINUTES)) // W2
          .isInstanceOf(ExecutionException.class)
          .hasCauseInstanceOf(BackupUnconfirmedException.class);

      long end = System.nanoTime() + Duration.ofSeconds(30).toNanos();
      while (!(Arrays.equals(bytes(np, key), bytes(nb, key))
          && nb.replicator().staleHere(key) == null)) {
        assertThat(System.nanoTime()).as("the repair in pieces reaches the backup")
            .isLessThan(end);
        Thread.sleep(50);
      }
      primary.commit(TxRequest.of(new TxOp.Write(key, 3, utf8("D"))))
          .get(1, TimeUnit.MINUTES);
      byte[] want = big.clone();
      System.arraycopy("BBCD".getBytes(StandardCharsets.UTF_8), 0, want, 0, 4);
      assertThat(Arrays.equals(bytes(np, key), want)).as("the primary's copy").isTrue();
      assertThat(Arrays.equals(bytes(nb, key), want)).as("the backup's copy").isTrue();
      assertThat(primary.owedTo(b)).isEmpty();
    }
  }

  private static byte[] bytes(TyrServer n, String key) throws IOException {
    ByteBuffer buf = ByteBuffer.allocate((int) n.engine().stat(key).size());
    n.engine().read(key, 0, buf);
    return buf.array();
  }

  private static ByteBuffer utf8(String s) {
    return ByteBuffer.wrap(s.getBytes(StandardCharsets.UTF_8));
  }

  private static String keyOwnedBy(Ring ring, String not, Member... owners) {
    for (int i = 0; ; i++) {
      if (ring.owners("k/" + i).equals(List.of(owners)) && !("k/" + i).equals(not)) {
        return "k/" + i;
      }
    }
  }

  private static Member member() throws IOException {
    return new Member("127.0.0.1", io.blobfs.tyr.TestPorts.free());
  }

  private TyrServer start(Member m, Ring ring, String name) throws IOException {
    EngineConfig engine = EngineConfig.defaults(dir.resolve(name))
        .withSyncPolicy(SyncPolicy.NONE);
    ServerConfig config = new ServerConfig("127.0.0.1", m.port(), engine, MAX_FRAME, null, 8,
        64, Duration.ofSeconds(60), 512L << 20, 128L << 20, Duration.ofSeconds(60), null);
    return TyrServer.start(config, new Membership(m, ring));
  }
}
