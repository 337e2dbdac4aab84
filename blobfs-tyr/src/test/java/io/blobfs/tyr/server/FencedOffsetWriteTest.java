package io.blobfs.tyr.server;

import static org.assertj.core.api.Assertions.assertThat;

import io.blobfs.store.StoreLimits;
import io.blobfs.tyr.api.TxOp;
import io.blobfs.tyr.api.TxRequest;
import io.blobfs.tyr.blobfs.TyrClusterBlobStore;
import io.blobfs.tyr.client.ClientConfig;
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
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Through the cluster store, as BlobFS writes a file (a write at an offset, a truncate), on
 * a key its backup fences: the primary's repair lifts the fence about a second after the
 * refusal, and the write succeeds well within the op timeout (6 s here). Before the first
 * review's fix the client waited for a newer ring until its op timeout and failed the
 * write at an offset; the truncate beside it succeeded.
 */
class FencedOffsetWriteTest {
  @TempDir
  Path dir;

  @Test
  void anOffsetWriteToAFencedKeySucceedsOnceTheRepairIsIn() throws Exception {
    Member p = member();
    Member b = member();
    Ring ring = new Ring(1, List.of(p, b), 16, 2);
    String key = null;
    for (int i = 0; key == null; i++) {
      key = ring.owners("k/" + i).equals(List.of(p, b)) ? "k/" + i : null;
    }
    try (TyrServer np = start(p, ring, "p"); TyrServer nb = start(b, ring, "b");
        TyrClusterBlobStore store = TyrClusterBlobStore.open("s", List.of(p),
            ClientConfig.of(p.host(), p.port()).withTimeouts(Duration.ofSeconds(5),
                Duration.ofSeconds(6)), new StoreLimits(1024, 1L << 30, 1L << 30))) {
      np.replicator().commit(TxRequest.of(new TxOp.Put(key, utf8("AAAA"), false)))
          .get(1, TimeUnit.MINUTES);
      TxRequest w1 = TxRequest.of(new TxOp.Write(key, 0, utf8("BB")));
      np.engine().commit(w1).get(1, TimeUnit.MINUTES);
      nb.replicator().refused(new Request.Replicate(1, p.id(), 7, 1, List.of(w1)));

      long t0 = System.nanoTime();
      Throwable failed = null;
      try {
        store.write(key, 2, utf8("C")).get(2, TimeUnit.MINUTES);
      } catch (Exception e) {
        failed = e;
      }
      long ms = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0);
      assertThat(failed).as("a write at an offset to a fenced key, after " + ms
          + " ms (the fence lifted by the repair: " + (nb.replicator().staleHere(key) == null)
          + ")").isNull();
    }
  }

  @Test
  void aTruncateOfAFencedKeySucceedsOnceTheRepairIsIn() throws Exception {
    Member p = member();
    Member b = member();
    Ring ring = new Ring(1, List.of(p, b), 16, 2);
    String key = null;
    for (int i = 0; key == null; i++) {
      key = ring.owners("k/" + i).equals(List.of(p, b)) ? "k/" + i : null;
    }
    try (TyrServer np = start(p, ring, "p"); TyrServer nb = start(b, ring, "b");
        TyrClusterBlobStore store = TyrClusterBlobStore.open("s", List.of(p),
            ClientConfig.of(p.host(), p.port()).withTimeouts(Duration.ofSeconds(5),
                Duration.ofSeconds(6)), new StoreLimits(1024, 1L << 30, 1L << 30))) {
      np.replicator().commit(TxRequest.of(new TxOp.Put(key, utf8("AAAA"), false)))
          .get(1, TimeUnit.MINUTES);
      TxRequest w1 = TxRequest.of(new TxOp.Write(key, 0, utf8("BB")));
      np.engine().commit(w1).get(1, TimeUnit.MINUTES);
      nb.replicator().refused(new Request.Replicate(1, p.id(), 7, 1, List.of(w1)));
      long t0 = System.nanoTime();
      store.truncate(key, 3);
      long ms = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0);
      System.out.println("REVIEW truncate took " + ms + " ms");
    }
  }

  private static ByteBuffer utf8(String s) {
    return ByteBuffer.wrap(s.getBytes(StandardCharsets.UTF_8));
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
