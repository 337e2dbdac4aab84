package io.blobfs.tyr.server;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.blobfs.tyr.api.BackupUnconfirmedException;
import io.blobfs.tyr.api.TxOp;
import io.blobfs.tyr.api.TxRequest;
import io.blobfs.tyr.api.TyrException;
import io.blobfs.tyr.client.ClientConfig;
import io.blobfs.tyr.client.TyrClient;
import io.blobfs.tyr.engine.EngineConfig;
import io.blobfs.tyr.engine.SyncPolicy;
import io.blobfs.tyr.protocol.Request;
import io.blobfs.tyr.ring.Member;
import io.blobfs.tyr.ring.Ring;
import io.blobfs.tyr.ring.WrongEpochException;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * CONFIRM's vouching watermark against a write appended late: admitted under a ring in which
 * the node was the key's UP primary, appended after it installed rings that took that role
 * away. Two real nodes.
 */
class ConfirmLateAppendTest {
  @TempDir
  Path dir;

  /**
   * A commit admitted under the ring in which p is the UP primary, and
   * appended on p only after p installed DOWN and RECOVERING (both raises of vouchFrom
   * are then below its version); the catch-up copies b's older bytes over it, p is UP
   * again before the owe's first repair, which then "confirms" the caught-up copy and
   * clears the owe without raising: confirm(V) must not answer CONFIRMED.
   */
  @Test
  void aWriteAppendedAfterTheRoleLossIsNotConfirmed() throws Exception {
    Member p = member();
    Member b = member();
    Ring ring = new Ring(1, List.of(p, b), 16, 2);
    String key = keyOwnedBy(ring, p, b);
    AtomicLong epoch = new AtomicLong(1);
    try (TyrServer np = start(p, ring, "p"); TyrServer nb = start(b, ring, "b");
        TyrClient client = new TyrClient(ClientConfig.of(p.host(), p.port()))) {
      client.routeUnder(epoch::get);
      TyrClient.await(client.commit(TxRequest.of(new TxOp.Put(key, utf8("AAAA"), false))));
      java.util.concurrent.CountDownLatch go = new java.util.concurrent.CountDownLatch(1);
      java.util.concurrent.CompletableFuture<io.blobfs.tyr.api.CommitResult> w =
          np.replicator().commit(TxRequest.of(new TxOp.Write(key, 0, utf8("BB"))),
              t -> java.util.concurrent.CompletableFuture.supplyAsync(() -> {
                try {
                  go.await(); // a slow append: admitted under epoch 1, applied later
                  return np.engine().commit(t).join();
                } catch (Exception e) {
                  throw new java.util.concurrent.CompletionException(e);
                }
              }));
      Ring down = ring.withState(p, Ring.State.DOWN, 3);
      nb.membership().install(down);
      np.membership().install(down);
      Ring recovering = down.withState(p, Ring.State.RECOVERING, 4);
      nb.membership().install(recovering);
      np.membership().install(recovering);
      go.countDown();
      Throwable unconfirmed = org.assertj.core.api.Assertions.catchThrowable(() ->
          TyrClient.await(w));
      assertThat(unconfirmed).isInstanceOf(BackupUnconfirmedException.class);
      long v = TyrException.unconfirmedVersion(unconfirmed);
      long end = System.nanoTime() + Duration.ofSeconds(20).toNanos();
      while (!value(np, key).equals("AAAA") && System.nanoTime() < end) {
        Thread.sleep(5);
      }
      assertThat(value(np, key)).as("catch-up copied b's bytes over the write").isEqualTo("AAAA");
      Ring up = recovering.withState(p, Ring.State.UP, 5);
      nb.membership().install(up);
      np.membership().install(up);
      epoch.set(5);
      long answer = 0;
      end = System.nanoTime() + Duration.ofSeconds(20).toNanos();
      while (answer == 0 || answer == Request.Confirm.REPAIRING) {
        try {
          answer = TyrClient.await(client.confirm(key, v));
        } catch (Exception e) {
          if (System.nanoTime() > end) {
            throw e;
          }
        }
        if (System.nanoTime() > end) {
          break;
        }
        Thread.sleep(100);
      }
      assertThat(value(nb, key)).as("the backup never got the write").isEqualTo("AAAA");
      assertThat(value(np, key)).as("nor the primary").isEqualTo("AAAA");
      assertThat(answer).as("1=CONFIRMED 2=REPAIRING 3=NOT_HELD")
          .isEqualTo(Request.Confirm.NOT_HELD);
    }
  }

  private static String keyOwnedBy(Ring ring, Member... owners) {
    for (int i = 0; ; i++) {
      if (ring.owners("k/" + i).equals(List.of(owners))) {
        return "k/" + i;
      }
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
    ServerConfig config = new ServerConfig("127.0.0.1", m.port(), engine, 8 << 20, null, 8,
        64, Duration.ofSeconds(60), 512L << 20, 128L << 20, Duration.ofSeconds(60), null);
    return TyrServer.start(config, new Membership(m, ring));
  }
}
