package io.blobfs.tyr.server;

import static org.assertj.core.api.Assertions.assertThat;

import io.blobfs.store.StoreLimits;
import io.blobfs.tyr.api.TxOp;
import io.blobfs.tyr.api.TxRequest;
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
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Review 2 (M3 with M4): FencedWriteThroughStoreTest's path (a write at an offset refused for
 * the backup's epoch, made again on its primary) on a key that must be repaired in pieces
 * (96 MiB under a 3 MiB frame: 1 MiB pieces, as a BlobFS file of a few hundred MiB is under
 * the default frame). Each try the client makes again is a write of the key on the primary
 * (applied, refused by the fenced backup), and any write of the key between two pieces voids
 * the repair under way. The client makes it again at least once a second; a repair that
 * takes longer never completes while the client tries, so the write fails at its op
 * timeout, and the key is repaired only once the writer gives up (6675 ms, 13 tries, the
 * fence lifted at 9623 ms: review 2's run). Since session 14 the client asks the primary to
 * confirm (Request.Confirm) and writes nothing while the key is repaired: confirmed in
 * about 1.8 s.
 */
class LargeFencedWriteThroughStoreTest {
  private static final int MAX_FRAME = 3 << 20;

  @TempDir
  Path dir;

  @Test
  void aWriteToALargeFencedKeyIsConfirmedOnceTheRepairInPiecesIsIn() throws Exception {
    Member p = member();
    Member b = member();
    Ring ring = new Ring(1, List.of(p, b), 16, 2);
    String key = null;
    String small = null;
    for (int i = 0; small == null; i++) {
      if (ring.owners("k/" + i).equals(List.of(p, b))) {
        if (key == null) {
          key = "k/" + i;
        } else {
          small = "k/" + i;
        }
      }
    }
    byte[] big = new byte[96 << 20];
    new Random(13).nextBytes(big);
    try (TyrServer np = start(p, ring, "p"); TyrServer nb = start(b, ring, "b");
        TyrClusterBlobStore store = TyrClusterBlobStore.open("s", List.of(p),
            ClientConfig.of(p.host(), p.port()).withTimeouts(Duration.ofSeconds(5),
                Duration.ofSeconds(6)), new StoreLimits(1024, 1L << 30, 1L << 30))) {
      np.engine().commit(TxRequest.of(new TxOp.Put(key, ByteBuffer.wrap(big), false)))
          .get(1, TimeUnit.MINUTES);
      nb.engine().commit(TxRequest.of(new TxOp.Put(key, ByteBuffer.wrap(big), false)))
          .get(1, TimeUnit.MINUTES);
      np.replicator().commit(TxRequest.of(new TxOp.Put(small, utf8("s"), false)))
          .get(1, TimeUnit.MINUTES); // the stream runs; the backup said it stages pieces
      Ring next = ring.withEpoch(2);
      nb.membership().install(next);

      long t0 = System.nanoTime();
      CompletableFuture<Void> w1 = store.write(key, 0, utf8("BB"));
      Thread.sleep(150);
      np.membership().install(next);
      Throwable failed = null;
      try {
        w1.get(2, TimeUnit.MINUTES);
      } catch (Exception e) {
        failed = e;
      }
      long ms = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0);
      System.out.println("LargeFencedWriteThroughStoreTest: W1 after " + ms + " ms: "
          + (failed == null ? "confirmed" : failed));
      long end = System.nanoTime() + Duration.ofSeconds(60).toNanos();
      while (!(Arrays.equals(bytes(np, key), bytes(nb, key))
          && nb.replicator().staleHere(key) == null) && System.nanoTime() < end) {
        Thread.sleep(100);
      }
      long repaired = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0);
      System.out.println("LargeFencedWriteThroughStoreTest: replicas equal, fence off,"
          + " after " + repaired + " ms: " + (nb.replicator().staleHere(key) == null));
      assertThat(failed).as("W1 (made again while the repair in pieces runs), after " + ms
          + " ms; the repair was in after " + repaired + " ms").isNull();
      assertThat(ms).as("well under the op timeout").isLessThan(6000);
      assertThat(nb.replicator().staleHere(key)).as("the fence lifted").isNull();
      byte[] expected = big.clone();
      expected[0] = 'B';
      expected[1] = 'B';
      assertThat(Arrays.equals(bytes(nb, key), expected)).as("the backup holds W1").isTrue();
      assertThat(Arrays.equals(bytes(np, key), expected)).as("the primary holds W1").isTrue();
    }
  }

  private static ByteBuffer utf8(String s) {
    return ByteBuffer.wrap(s.getBytes(StandardCharsets.UTF_8));
  }

  private static byte[] bytes(TyrServer n, String key) throws IOException {
    ByteBuffer buf = ByteBuffer.allocate((int) n.engine().stat(key).size());
    n.engine().read(key, 0, buf);
    return buf.array();
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
