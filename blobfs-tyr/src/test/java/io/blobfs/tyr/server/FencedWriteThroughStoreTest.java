package io.blobfs.tyr.server;

import static org.assertj.core.api.Assertions.assertThat;

import io.blobfs.store.StoreLimits;
import io.blobfs.tyr.blobfs.TyrClusterBlobStore;
import io.blobfs.tyr.client.ClientConfig;
import io.blobfs.tyr.engine.EngineConfig;
import io.blobfs.tyr.engine.SyncPolicy;
import io.blobfs.tyr.ring.Member;
import io.blobfs.tyr.ring.Ring;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Issue 13's review (M3, S5), with a real epoch refusal, through the cluster store as
 * BlobFS writes a file: the backup has ring epoch 2, its primary still 1. A write at an
 * offset, W1 ("BB" at 0 over "AAAA"), is applied on the primary and refused by the backup
 * for its epoch, which fences the key there. The primary loads epoch 2; the client makes
 * W1 again on the same primary (conditional on the version it applied), which the now
 * fenced backup refuses, until the primary's repair puts the key whole and lifts the
 * fence; then W1 is confirmed, on both replicas, well within the op timeout (6 s). Before
 * (session 12's branch) the client waited up to its op timeout for a newer ring after the
 * first unconfirmed answer and failed the write as "unreachable".
 */
class FencedWriteThroughStoreTest {
  @TempDir
  Path dir;

  @Test
  void aWriteRefusedForTheBackupsEpochIsMadeAgainOnItsPrimaryAndConfirmed() throws Exception {
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
      store.put(key, utf8("AAAA"), io.blobfs.store.PutMode.OVERWRITE);
      Ring next = ring.withEpoch(2);
      nb.membership().install(next); // the backup is ahead: it refuses epoch 1's batches

      long t0 = System.nanoTime();
      CompletableFuture<Void> w1 = store.write(key, 0, utf8("BB"));
      Thread.sleep(150);
      np.membership().install(next);
      w1.get(2, TimeUnit.MINUTES);
      long ms = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0);

      assertThat(ms).as("confirmed well within the op timeout").isLessThan(5000);
      assertThat(value(np, key)).isEqualTo("BBAA");
      assertThat(value(nb, key)).as("confirmed: on the backup too").isEqualTo("BBAA");
      assertThat(nb.replicator().staleHere(key)).as("the fence lifted").isNull();
      assertThat(store.ring().epoch()).isEqualTo(2);
      System.out.println("FencedWriteThroughStoreTest: W1 confirmed after " + ms + " ms");
    }
  }

  private static ByteBuffer utf8(String s) {
    return ByteBuffer.wrap(s.getBytes(StandardCharsets.UTF_8));
  }

  private static String value(TyrServer n, String key) throws IOException {
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
