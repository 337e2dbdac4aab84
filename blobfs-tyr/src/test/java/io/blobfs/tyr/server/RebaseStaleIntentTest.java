package io.blobfs.tyr.server;

import static org.assertj.core.api.Assertions.assertThat;

import io.blobfs.tyr.api.TxOp;
import io.blobfs.tyr.api.TxRequest;
import io.blobfs.tyr.client.TyrClient;
import io.blobfs.tyr.engine.EngineConfig;
import io.blobfs.tyr.engine.SyncPolicy;
import io.blobfs.tyr.engine.TyrEngine;
import io.blobfs.tyr.protocol.Request;
import io.blobfs.tyr.ring.Member;
import io.blobfs.tyr.ring.Ring;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.function.BooleanSupplier;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A rebase's intent that outlives its batch (review of b3af1b1, MF2). c holds X's and Y's
 * shares (Y an Append behind X on b). X's item with its rebase of Y applies on c, but the
 * rewrite of Y's record fails (an I/O error: here its temporary file cannot be made), so
 * the batch fails and the intent stays on disk. Y's own apply then reaches c (k = "xy").
 * c restarts (b lost): recover() applies the stale intent, Y's share takes k's current
 * version, which already includes Y's own write; Y is taken for not applied, taken over
 * and applied again: "xyy". recover's rule is sound only for an intent of the last,
 * unanswered batch, so the failed rewrite fails the store: Y's own apply is refused until
 * the restart, which rebases Y to "x"; Y is taken over and applied once: "xy".
 */
class RebaseStaleIntentTest {
  private static final String Y = "0f1e2d3c-4b5a-4978-8695-a4b3c2d1e0f9";
  private static final String X = "1a1e2d3c-4b5a-4978-8695-a4b3c2d1e0f9";
  private static final Duration LONG = Duration.ofSeconds(120);

  @TempDir Path dir;

  private Member p;
  private Member b;
  private Member c;
  private Member q;
  private Ring ring;
  private String k;

  private void members() throws IOException {
    p = new Member("127.0.0.1", io.blobfs.tyr.TestPorts.free());
    b = new Member("127.0.0.1", io.blobfs.tyr.TestPorts.free());
    c = new Member("127.0.0.1", io.blobfs.tyr.TestPorts.free());
    q = new Member("127.0.0.1", io.blobfs.tyr.TestPorts.free());
    ring = new Ring(1, List.of(p, b, c), 16, 3);
    for (int i = 0; k == null; i++) {
      if (ring.owners("k/" + i).equals(List.of(p, b, c))) {
        k = "k/" + i;
      }
    }
  }

  private TyrServer startCoordinator(Member m, String name, String... committed)
      throws IOException {
    Path data = dir.resolve(name);
    try (TyrEngine e = TyrEngine.open(EngineConfig.defaults(data)
        .withSyncPolicy(SyncPolicy.NONE))) {
      TxRecords recs = new TxRecords(e.config().directory());
      for (String id : committed) {
        recs.writeDecision(id, true);
      }
    }
    return start(m, new Ring(1, List.of(m), 16, 1), name, LONG);
  }

  @Test
  void anIntentLeftByAFailedRewriteIsNotAppliedAfterLaterWrites() throws Exception {
    members();
    Ring down = ring.withState(p, Ring.State.DOWN, 2);
    TyrServer nq = null;
    TyrServer nc = start(c, down, "c", LONG);
    Path records = nc.engine().config().directory().resolve("transactions");
    try {
      Replicator r = nc.replicator();
      long inc = 9;
      TxRequest none = new TxRequest(List.of(), List.of());
      Request.Prepare px = new Request.Prepare(X, q.id(), List.of(p.id(), q.id()),
          new TxRequest(List.of(), List.of(put("x"))));
      Request.Prepare py = new Request.Prepare(Y, q.id(), List.of(p.id(), q.id()),
          new TxRequest(List.of(), List.of(append("y"))));
      TyrClient.await(r.apply(new Request.Replicate(2, b.id(), inc, 1, List.of(none),
          Map.of(0, px))));
      TyrClient.await(r.apply(new Request.Replicate(2, b.id(), inc, 2, List.of(none),
          Map.of(0, py))));
      List<Path> blocks = new java.util.ArrayList<>();
      r.beforeRewriteForTest = () -> {
        try (java.util.stream.Stream<Path> fs = java.nio.file.Files.list(records)) {
          for (Path f : (Iterable<Path>) fs::iterator) {
            if (f.getFileName().toString().endsWith(".replica")) {
              Path tmp = f.resolveSibling(f.getFileName() + ".tmp");
              java.nio.file.Files.createDirectories(tmp); // the record cannot be written
              blocks.add(tmp);
            }
          }
        } catch (IOException e) {
          throw new java.io.UncheckedIOException(e);
        }
      };
      try {
        TyrClient.await(r.apply(new Request.Replicate(2, b.id(), inc, 3,
            List.of(new TxRequest(List.of(), List.of(put("x")))), Map.of(), true,
            Map.of(), Map.of(0, Map.of(Y, List.of(k))))));
      } catch (Exception e) {
        // the batch fails: its rebase's record could not be written again
      }
      r.beforeRewriteForTest = null;
      for (Path tmp : blocks) {
        java.nio.file.Files.delete(tmp); // the disk error was passing
      }
      try (java.util.stream.Stream<Path> fs = java.nio.file.Files.list(records)) {
        assertThat(fs.filter(f -> f.toString().endsWith(".rebase")).count())
            .as("the intent left on disk").isEqualTo(1);
      }
      // Y's own apply (b applied it after X; here on the same stream, or its repair):
      // refused, the store failed with the rewrite, so the intent still describes the last
      // write of k applied here when the restart reads it. Applied, it ended 'xyy'.
      Throwable refused = null;
      try {
        TyrClient.await(r.apply(new Request.Replicate(2, b.id(), inc, 4,
            List.of(new TxRequest(List.of(), List.of(put("xy")))), Map.of(), true, Map.of())));
      } catch (Exception e) {
        refused = e;
      }
      assertThat(refused).as("a write after the failed rewrite, before the restart").isNotNull();
      nc.close();
      nc = start(c, down.withState(b, Ring.State.DOWN, 3), "c", LONG); // b lost
      nq = startCoordinator(q, "q", X, Y);
      TyrServer back = nc;
      waitFor("nothing left to apply on c", () -> back.transactions().prepared().isEmpty());
      Thread.sleep(1000);
      assertThat(new String(bytes(nc.engine()), StandardCharsets.UTF_8))
          .as("Y applied once").isEqualTo("xy");
    } finally {
      nc.close();
      if (nq != null) {
        nq.close();
      }
    }
  }

  private byte[] bytes(TyrEngine e) {
    try {
      if (!e.stat(k).exists()) {
        return new byte[1];
      }
      ByteBuffer got = ByteBuffer.allocate((int) e.stat(k).size());
      e.read(k, 0, got);
      return got.array();
    } catch (IOException err) {
      throw new java.io.UncheckedIOException(err);
    }
  }

  private TxOp put(int v) {
    return new TxOp.Put(k, ByteBuffer.wrap(new byte[] {(byte) v}), false);
  }

  private TxOp put(String s) {
    return new TxOp.Put(k, ByteBuffer.wrap(s.getBytes(StandardCharsets.UTF_8)), false);
  }

  private TxOp append(String s) {
    return new TxOp.Append(k, ByteBuffer.wrap(s.getBytes(StandardCharsets.UTF_8)));
  }

  private static void waitFor(String what, BooleanSupplier done) throws InterruptedException {
    long end = System.nanoTime() + Duration.ofSeconds(60).toNanos();
    while (!done.getAsBoolean()) {
      assertThat(System.nanoTime()).as(what).isLessThan(end);
      Thread.sleep(20);
    }
  }

  private TyrServer start(Member m, Ring r, String name, Duration txTimeout)
      throws IOException {
    EngineConfig engine = EngineConfig.defaults(dir.resolve(name))
        .withSyncPolicy(SyncPolicy.NONE);
    ServerConfig config = new ServerConfig("127.0.0.1", m.port(), engine, 80 << 20, null, 8,
        64, Duration.ofSeconds(60), 512L << 20, 128L << 20, Duration.ofSeconds(60), null);
    return TyrServer.start(config, new Membership(m, r).withTxTimeout(txTimeout));
  }
}
