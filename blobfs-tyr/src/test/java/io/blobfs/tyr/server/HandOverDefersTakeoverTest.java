package io.blobfs.tyr.server;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatCode;

import io.blobfs.tyr.api.TxOp;
import io.blobfs.tyr.api.TxRequest;
import io.blobfs.tyr.client.TyrClient;
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
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Issue 13, M2: an owner that is UP again used to take over, at the very install that
 * starts its hand-over, the shares it held as a backup of its stand-in: it reserved their
 * keys and resolved them with their coordinators at once, while the stand-in, still the
 * primary under the ring before, went on resolving and writing the same keys and sending
 * those writes to it. A stand-in batch writing such a key then met the owner's
 * reservation (CONFLICT): refused, its write (applied and read on the stand-in) not on
 * the owner, and not owed once the stand-in moved on; and a takeover applied while the
 * stand-in's batches still came could be overwritten by them, or apply an op twice. Now
 * the takeover waits until the hand-over is over (Membership.onHandedOver): every stand-in
 * batch is then in, so the share is found applied if its primary applied it, and no batch
 * comes after a takeover's apply. The share's coordinator here is a member never started:
 * a takeover's reservation would stay, so the window is hit every time. Failed before (the
 * stand-in's write of the share's key: BackupUnconfirmedException, CONFLICT on the owner).
 * While the share is put off no node counts it, so the owner answers no full barrier
 * until the hand-over's end (failed before that change: answered at once).
 */
class HandOverDefersTakeoverTest {
  private static final int FRAME = 2 << 20;

  @TempDir
  Path dir;

  @Test
  void aShareIsNotTakenOverWhileItsStandInMayStillWriteItsKeys() throws Exception {
    Member o = member();
    Member s = member();
    Member coordinator = member(); // never started
    Ring ring = new Ring(1, List.of(o, s), 16, 2);
    int n = 0;
    while (!ring.owners("k/" + n).equals(List.of(o, s))) {
      n++;
    }
    String key = "k/" + n; // o's key: s stands in for o under epoch 3
    try (TyrServer no = start(o, ring, "o"); TyrServer ns = start(s, ring, "s")) {
      Ring down = ring.withState(o, Ring.State.DOWN, 2);
      Ring recovering = down.withState(o, Ring.State.RECOVERING, 3);
      for (Ring r : List.of(down, recovering)) {
        ns.membership().install(r); // s first: o's catch-up waits for s at its epoch
        no.membership().install(r);
      }
      long end = System.nanoTime() + Duration.ofMinutes(2).toNanos();
      while (no.caughtUpEpoch() < 3) {
        assertThat(System.nanoTime()).as("o caught up under epoch 3").isLessThan(end);
        Thread.sleep(10);
      }
      // s, primary under epoch 3, prepares a part of the key: o holds its share.
      Replicator r = ns.replicator();
      TyrClient.await(r.replicatePrepare(new Request.Prepare("tx-held", coordinator.id(),
          List.of(s.id(), coordinator.id()), put(key, "t"))));

      Ring up = recovering.withState(o, Ring.State.UP, 4);
      no.membership().install(up); // o hands over; s, at epoch 3, still stands in
      // s's write of the key under epoch 3 (as its apply of the part would be).
      assertThatCode(() -> TyrClient.await(r.commit(put(key, "w"))))
          .as("the stand-in's write, confirmed by the owner").doesNotThrowAnyException();
      assertThat(value(no, key)).as("the stand-in's write on the owner").isEqualTo("w");
      assertThat(no.preparedTransactions()).as("taken over during the hand-over").isEmpty();
      // A share put off is counted by no node (s drops its part when it loads the ring):
      // a full barrier, what a recovering peer waits for, waits for the hand-over's end.
      java.util.concurrent.CompletableFuture<Ring> full = no.membership().settled(4);
      assertThat(full).as("a full barrier while a share is put off").isNotDone();

      ns.membership().install(up); // the stand-in moves on: the hand-over ends
      while (no.membership().handOver() != null) {
        assertThat(System.nanoTime()).as("the hand-over ends").isLessThan(end);
        Thread.sleep(10);
      }
      // Taken up once the hand-over ended: its key moved past the version it recorded.
      assertThat(no.preparedTransactions()).as("found applied, not taken over").isEmpty();
      assertThat(full.get(1, java.util.concurrent.TimeUnit.MINUTES).epoch()).isEqualTo(4);
      assertThat(value(no, key)).isEqualTo("w");
    }
  }

  private static TxRequest put(String key, String value) {
    return TxRequest.of(new TxOp.Put(key,
        ByteBuffer.wrap(value.getBytes(StandardCharsets.UTF_8)), false));
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
