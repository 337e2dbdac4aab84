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
import java.util.List;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Issue 13, the fenced backup's side seen from its primary (two real nodes, their real
 * replication stream): the backup refused W1 ("BB" at 0 over "AAAA"), which its primary
 * applied; the primary then writes W2 ("C" at 2). The backup refuses W2 (nothing applied:
 * a skip state "AACA" would be served once it is promoted), so the primary does not
 * acknowledge W2 (its client hears {@code UNAVAILABLE}, typed
 * {@link BackupUnconfirmedException}, and may make it again), owes the key to the backup,
 * and its repair puts it whole ("BBCA"), which lifts the fence: the next write at an
 * offset is confirmed. Failed before (W2 was confirmed, the backup holding "AACA").
 */
class FencedPartialWriteTest {
  @TempDir
  Path dir;

  @Test
  void aPartialWriteRefusedByAFencedBackupIsNotAcknowledgedAndTheRepairLiftsTheFence()
      throws Exception {
    Member p = member();
    Member b = member();
    Ring ring = new Ring(1, List.of(p, b), 16, 2);
    String key = null;
    for (int i = 0; key == null; i++) {
      key = ring.owners("k/" + i).equals(List.of(p, b)) ? "k/" + i : null;
    }
    try (TyrServer np = start(p, ring, "p"); TyrServer nb = start(b, ring, "b")) {
      Replicator primary = np.replicator();
      primary.commit(TxRequest.of(new TxOp.Put(key, utf8("AAAA"), false)))
          .get(1, TimeUnit.MINUTES);
      // W1: applied on the primary, refused by the backup (as for a ring it was ahead on).
      TxRequest w1 = TxRequest.of(new TxOp.Write(key, 0, utf8("BB")));
      np.engine().commit(w1).get(1, TimeUnit.MINUTES);
      nb.replicator().refused(new Request.Replicate(1, p.id(), 7, 1, List.of(w1)));

      String k = key;
      assertThatThrownBy(() -> primary.commit(TxRequest.of(new TxOp.Write(k, 2, utf8("C"))))
          .get(1, TimeUnit.MINUTES)) // W2
          .isInstanceOf(ExecutionException.class)
          .hasCauseInstanceOf(BackupUnconfirmedException.class)
          .hasMessageContaining("fenced there");
      assertThat(value(np, key)).isEqualTo("BBCA");
      assertThat(value(nb, key)).as("the backup's copy: never the skip state")
          .isIn("AAAA", "BBCA");

      long end = System.nanoTime() + Duration.ofSeconds(30).toNanos();
      while (!("BBCA".equals(value(nb, key)) && nb.replicator().staleHere(key) == null)) {
        assertThat(System.nanoTime()).as("the repair reaches the backup").isLessThan(end);
        Thread.sleep(20);
      }
      primary.commit(TxRequest.of(new TxOp.Write(key, 3, utf8("D"))))
          .get(1, TimeUnit.MINUTES);
      assertThat(value(nb, key)).isEqualTo("BBCD");
      assertThat(value(np, key)).isEqualTo("BBCD");
      assertThat(primary.owedTo(b)).isEmpty();
    }
  }

  private static ByteBuffer utf8(String s) {
    return ByteBuffer.wrap(s.getBytes(StandardCharsets.UTF_8));
  }

  private static String value(TyrServer n, String key) throws IOException {
    if (!n.engine().stat(key).exists()) {
      return null;
    }
    ByteBuffer buf = ByteBuffer.allocate((int) n.engine().stat(key).size());
    n.engine().read(key, 0, buf);
    return new String(buf.array(), StandardCharsets.UTF_8);
  }

  private static Member member() throws IOException {
    return new Member("127.0.0.1", io.blobfs.tyr.TestPorts.free());
  }

  private TyrServer start(Member m, Ring ring, String name) throws IOException {
    EngineConfig engine = EngineConfig.defaults(dir.resolve(name))
        .withSyncPolicy(SyncPolicy.NONE);
    ServerConfig config = new ServerConfig("127.0.0.1", m.port(), engine, 80 << 20, null, 8,
        64, Duration.ofSeconds(60), 512L << 20, 128L << 20, Duration.ofSeconds(60), null);
    return TyrServer.start(config, new Membership(m, ring));
  }
}
