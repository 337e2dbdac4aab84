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
 * Issue 13, bug 3 (wip/tyr-held/ALTERNATIVE.md section 4): c, a backup of k holding X's and
 * Y's shares (Y an Append, behind X on b, which took them over), crashes after X's write
 * (with its rebase of Y) is logged and before Y's record is written again. At restart the
 * rebase's intent, forced before the write, makes recover() move Y's share to k's current
 * version: b then lost, c takes Y over and applies it once ("xy"). Without the intent Y's
 * record says k's version from before X: Y taken for applied, "x" for good.
 */
class RebaseCrashTest {
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
  void aCrashBetweenTheWriteAndTheRewriteIsFinishedAtRestart() throws Exception {
    members();
    Ring down = ring.withState(p, Ring.State.DOWN, 2);
    TyrServer nq = null;
    TyrServer nc = start(c, down, "c", Duration.ofSeconds(1));
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
      Path image = dir.resolve("c-crashed");
      TyrServer running = nc;
      r.beforeRewriteForTest = () -> copy(running.engine().config().directory(), image);
      TyrClient.await(r.apply(new Request.Replicate(2, b.id(), inc, 3,
          List.of(new TxRequest(List.of(), List.of(put("x")))), Map.of(), true,
          Map.of(), Map.of(0, Map.of(Y, List.of(k))))));
      nc.close();
      nc = start(c, down.withState(b, Ring.State.DOWN, 3), "c-crashed", LONG); // b lost
      assertThat(new String(bytes(nc.engine()), StandardCharsets.UTF_8)).isEqualTo("x");
      assertThat(nc.transactions().prepared()).as("Y taken over at the restart").hasSize(1);
      nq = startCoordinator(q, "q", X, Y);
      TyrServer back = nc;
      waitFor("Y applied on c", () -> back.transactions().prepared().isEmpty());
      Thread.sleep(1000); // nothing applies it again
      assertThat(new String(bytes(nc.engine()), StandardCharsets.UTF_8)).isEqualTo("xy");
    } finally {
      nc.close();
      if (nq != null) {
        nq.close();
      }
    }
  }

  /** A copy of a running node's data directory: what a crash there leaves on disk. */
  private static void copy(Path from, Path to) {
    try (java.util.stream.Stream<Path> files = java.nio.file.Files.walk(from)) {
      for (Path f : (Iterable<Path>) files::iterator) {
        Path target = to.resolve(from.relativize(f).toString());
        if (java.nio.file.Files.isDirectory(f)) {
          java.nio.file.Files.createDirectories(target);
        } else if (!f.getFileName().toString().endsWith(".lock")) {
          java.nio.file.Files.copy(f, target);
        }
      }
    } catch (IOException e) {
      throw new java.io.UncheckedIOException(e);
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
