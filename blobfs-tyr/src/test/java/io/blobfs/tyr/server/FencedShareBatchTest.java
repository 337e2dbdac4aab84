package io.blobfs.tyr.server;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.blobfs.tyr.api.CommitResult;
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
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Review 2, N3: a fenced backup refuses whole a batch that carries a prepared share
 * changing a fenced key in part (a batch with a share cannot say it reads a refusal of
 * part of it). It used to answer UNAVAILABLE, which the primary took for a broken stream:
 * it numbered afresh and failed every write queued behind the share, unsent, so the
 * backup never saw them and did not fence their keys (a later write in part of one of
 * them, applied there on a copy lacking the dropped write, was the skip state if the
 * backup was promoted before the repair). Now the refusal is typed (FENCED): the share
 * fails alone and the writes behind it reach the backup. Two real nodes; the order is
 * fixed by holding the write before the share in its local commit until the share and the
 * writes behind it are numbered (as QueuedBehindRefusedShareTest does).
 */
class FencedShareBatchTest {
  private static final int FRAME = 2 << 20;

  @TempDir
  Path dir;

  @Test
  void writesQueuedBehindAShareRefusedAsFencedReachTheBackup() throws Exception {
    Member p = member();
    Member b = member();
    Ring ring = new Ring(1, List.of(p, b), 16, 2);
    List<String> keys = new ArrayList<>();
    for (int i = 0; keys.size() < 12; i++) {
      if (ring.owners("k/" + i).equals(List.of(p, b))) {
        keys.add("k/" + i);
      }
    }
    String fencedKey = keys.remove(0);
    try (TyrServer np = start(p, ring, "p"); TyrServer nb = start(b, ring, "b")) {
      // b refused a write of fencedKey that p applied: fenced there until written whole.
      nb.replicator().refused(new Request.Replicate(ring.epoch(), p.id(), 7, 1,
          List.of(TxRequest.of(new TxOp.Write(fencedKey, 0, utf8("BB"))))));
      assertThat(nb.replicator().staleHere(fencedKey)).isNotNull();

      Replicator r = np.replicator();
      CompletableFuture<Void> gate = new CompletableFuture<>();
      CompletableFuture<CommitResult> before = r.commit(put(keys.get(0), "w"),
          tx -> gate.thenCompose(x -> np.engine().commit(tx)));
      CompletableFuture<Void> share = r.replicatePrepare(new Request.Prepare("tx-share",
          p.id(), List.of(p.id()), TxRequest.of(new TxOp.Write(fencedKey, 2, utf8("C")))));
      List<CompletableFuture<CommitResult>> behind = new ArrayList<>();
      for (String k : keys.subList(1, keys.size())) {
        behind.add(r.commit(put(k, "w")));
      }
      gate.complete(null); // sends the first write; then the share alone; then the rest

      before.get(1, TimeUnit.MINUTES);
      assertThatThrownBy(() -> share.get(1, TimeUnit.MINUTES))
          .isInstanceOf(ExecutionException.class)
          .hasMessageContaining("did not confirm its share");
      List<String> failed = new ArrayList<>();
      for (int i = 0; i < behind.size(); i++) {
        try {
          behind.get(i).get(1, TimeUnit.MINUTES);
        } catch (ExecutionException e) {
          failed.add(keys.get(i + 1) + ": " + e.getCause());
        }
      }
      assertThat(failed).as("writes queued behind the share refused as fenced").isEmpty();
      for (String k : keys) {
        assertThat(value(nb, k)).as(k + " on the backup").isEqualTo("w");
        assertThat(nb.replicator().staleHere(k)).as(k + " not fenced").isNull();
      }
      assertThat(nb.replicator().staleHere(fencedKey)).as("still fenced").isNotNull();
    }
  }

  private static TxRequest put(String key, String value) {
    return TxRequest.of(new TxOp.Put(key, utf8(value), false));
  }

  private static ByteBuffer utf8(String s) {
    return ByteBuffer.wrap(s.getBytes(StandardCharsets.UTF_8));
  }

  private static String value(TyrServer n, String key) throws IOException {
    if (!n.engine().stat(key).exists()) {
      return null;
    }
    ByteBuffer b = ByteBuffer.allocate((int) n.engine().stat(key).size());
    n.engine().read(key, 0, b);
    return new String(b.array(), StandardCharsets.UTF_8);
  }

  private static Member member() throws IOException {
    return new Member("127.0.0.1", io.blobfs.tyr.TestPorts.free());
  }

  private TyrServer start(Member m, Ring ring, String name) throws IOException {
    EngineConfig engine = EngineConfig.defaults(dir.resolve(name))
        .withSyncPolicy(SyncPolicy.NONE);
    ServerConfig config = new ServerConfig("127.0.0.1", m.port(), engine, FRAME, null, 8,
        64, Duration.ofSeconds(60), 512L << 20, 128L << 20, Duration.ofSeconds(60), null);
    return TyrServer.start(config, new Membership(m, ring));
  }
}
