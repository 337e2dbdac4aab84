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
 * Session 14 (review 2, N1): a primary's answer to a client asking whether its write applied
 * unconfirmed is now held by every backup (Request.Confirm): "not held" for a key not at
 * that version, "repairing" while a backup owes the key, "confirmed" once the repair is in;
 * refused by a node that is not the key's primary under the client's ring. Two real nodes.
 */
class ConfirmWriteTest {
  @TempDir
  Path dir;

  @Test
  void aWriteAppliedUnconfirmedIsRepairingThenConfirmed() throws Exception {
    Member p = member();
    Member b = member();
    Ring ring = new Ring(1, List.of(p, b), 16, 2);
    String key = keyOwnedBy(ring, p, b);
    AtomicLong epoch = new AtomicLong(1);
    try (TyrServer np = start(p, ring, "p"); TyrServer nb = start(b, ring, "b");
        TyrClient client = new TyrClient(ClientConfig.of(p.host(), p.port()));
        TyrClient toBackup = new TyrClient(ClientConfig.of(b.host(), b.port()))) {
      client.routeUnder(epoch::get);
      toBackup.routeUnder(epoch::get);
      assertThat(TyrClient.await(client.confirm(key, 1))).as("absent")
          .isEqualTo(Request.Confirm.NOT_HELD);
      long v0 = TyrClient.await(client.commit(TxRequest.of(
          new TxOp.Put(key, utf8("AAAA"), false)))).version();
      assertThat(TyrClient.await(client.confirm(key, v0))).as("confirmed by the stream")
          .isEqualTo(Request.Confirm.CONFIRMED);
      assertThatThrownBy(() -> TyrClient.await(toBackup.confirm(key, v0)))
          .as("only the primary answers").isInstanceOf(WrongEpochException.class);

      Ring next = ring.withEpoch(2);
      nb.membership().install(next); // the backup refuses the primary's epoch-1 batches
      Throwable unconfirmed = org.assertj.core.api.Assertions.catchThrowable(() ->
          TyrClient.await(client.commit(TxRequest.of(new TxOp.Write(key, 0, utf8("BB"))))));
      assertThat(unconfirmed).isInstanceOf(BackupUnconfirmedException.class);
      long v1 = TyrException.unconfirmedVersion(unconfirmed);
      assertThat(v1).isGreaterThan(v0);
      assertThat(TyrClient.await(client.confirm(key, v1))).as("owed to the backup")
          .isEqualTo(Request.Confirm.REPAIRING);
      assertThat(TyrClient.await(client.confirm(key, v1 + 1000))).as("a later version")
          .isEqualTo(Request.Confirm.NOT_HELD);

      np.membership().install(next);
      epoch.set(2);
      long end = System.nanoTime() + Duration.ofSeconds(30).toNanos();
      long answer;
      while ((answer = TyrClient.await(client.confirm(key, v1))) != Request.Confirm.CONFIRMED) {
        assertThat(answer).isEqualTo(Request.Confirm.REPAIRING);
        assertThat(System.nanoTime()).as("confirmed once repaired").isLessThan(end);
        Thread.sleep(50);
      }
      assertThat(value(nb, key)).as("the backup holds the write").isEqualTo("BBAA");
      assertThat(nb.replicator().staleHere(key)).as("its fence lifted").isNull();
    }
  }

  /**
   * What a primary owes its backups is in its process's memory (OwedKeys): after a restart
   * it does not vouch for a write applied before it ("not held": the client makes the write
   * again, as before), only for those applied since.
   */
  @Test
  void aWriteAppliedBeforeThePrimaryRestartedIsNotVouchedFor() throws Exception {
    Member p = member();
    Member b = member();
    Ring ring = new Ring(1, List.of(p, b), 16, 2);
    String key = keyOwnedBy(ring, p, b);
    try (TyrServer nb = start(b, ring, "b")) {
      long v0;
      try (TyrServer np = start(p, ring, "p");
          TyrClient client = new TyrClient(ClientConfig.of(p.host(), p.port()))) {
        client.routeUnder(ring::epoch);
        v0 = TyrClient.await(client.commit(TxRequest.of(
            new TxOp.Put(key, utf8("AAAA"), false)))).version();
        assertThat(TyrClient.await(client.confirm(key, v0))).isEqualTo(Request.Confirm.CONFIRMED);
      }
      try (TyrServer np = start(p, ring, "p");
          TyrClient client = new TyrClient(ClientConfig.of(p.host(), p.port()))) {
        client.routeUnder(ring::epoch);
        assertThat(TyrClient.await(client.confirm(key, v0))).as("applied before the restart")
            .isEqualTo(Request.Confirm.NOT_HELD);
        long v1 = TyrClient.await(client.commit(TxRequest.of(
            new TxOp.Write(key, 0, utf8("BB"))))).version();
        assertThat(TyrClient.await(client.confirm(key, v1))).as("applied since")
            .isEqualTo(Request.Confirm.CONFIRMED);
      }
    }
  }

  /**
   * Review 3, P1 (the reviewer's test, rev3-tyr-fence d15e8ae): an owe is also dropped when
   * its repair finds it no longer needed (this node not the key's UP primary), which says
   * nothing about the backup, and a catch-up then copies the backup's older bytes over the
   * key at a newer version here. A primary that lost and regained the key (DOWN,
   * RECOVERING, UP) answered CONFIRMED for a write neither replica holds; now NOT_HELD (it
   * stopped vouching when it was marked DOWN), so the client's rewrite is conditional.
   */
  @Test
  void aPrimaryThatLostTheKeyMeanwhileDoesNotConfirmAWriteItsBackupLacks()
      throws Exception {
    Member p = member();
    Member b = member();
    Ring ring = new Ring(1, List.of(p, b), 16, 2);
    String key = keyOwnedBy(ring, p, b);
    AtomicLong epoch = new AtomicLong(1);
    try (TyrServer np = start(p, ring, "p"); TyrServer nb = start(b, ring, "b");
        TyrClient client = new TyrClient(ClientConfig.of(p.host(), p.port()))) {
      client.routeUnder(epoch::get);
      TyrClient.await(client.commit(TxRequest.of(new TxOp.Put(key, utf8("AAAA"), false))));
      Ring next = ring.withEpoch(2);
      nb.membership().install(next); // the backup refuses the primary's epoch-1 batch
      Throwable unconfirmed = org.assertj.core.api.Assertions.catchThrowable(() ->
          TyrClient.await(client.commit(TxRequest.of(new TxOp.Write(key, 0, utf8("BB"))))));
      assertThat(unconfirmed).isInstanceOf(BackupUnconfirmedException.class);
      long v1 = TyrException.unconfirmedVersion(unconfirmed);
      assertThat(TyrClient.await(client.confirm(key, v1))).isEqualTo(Request.Confirm.REPAIRING);

      // p is marked DOWN (cut off from the monitor); b stands in. p's repair of b finds
      // the key "no longer needed" (p is not its UP primary) and clears the owe.
      Ring down = next.withState(p, Ring.State.DOWN, 3);
      nb.membership().install(down);
      np.membership().install(down);
      long end = System.nanoTime() + Duration.ofSeconds(20).toNanos();
      while (!np.replicator().owedTo(b).isEmpty() && System.nanoTime() < end) {
        Thread.sleep(50);
      }
      assertThat(np.replicator().owedTo(b)).as("owe dropped as not needed").isEmpty();

      // p recovers (its catch-up copies b's copy, "AAAA", over its own, bytes differing),
      // then is UP again.
      Ring recovering = down.withState(p, Ring.State.RECOVERING, 4);
      nb.membership().install(recovering);
      np.membership().install(recovering);
      end = System.nanoTime() + Duration.ofSeconds(30).toNanos();
      while (!value(np, key).equals("AAAA") && System.nanoTime() < end) {
        Thread.sleep(50);
      }
      Thread.sleep(1500);
      Ring up = recovering.withState(p, Ring.State.UP, 5);
      nb.membership().install(up);
      np.membership().install(up);
      epoch.set(5);
      assertThat(value(nb, key)).as("the backup never got the write").isEqualTo("AAAA");
      assertThat(nb.replicator().staleHere(key)).as("and is not fenced for it").isNull();
      long answer = 0;
      end = System.nanoTime() + Duration.ofSeconds(20).toNanos();
      while (answer == 0) {
        try {
          answer = TyrClient.await(client.confirm(key, v1));
        } catch (Exception e) {
          if (System.nanoTime() > end) {
            throw e;
          }
          Thread.sleep(100);
        }
      }
      assertThat(answer).as("confirm of a write the backup (the next primary) lacks: "
          + "1=CONFIRMED 2=REPAIRING 3=NOT_HELD").isEqualTo(Request.Confirm.NOT_HELD);
      assertThat(value(np, key)).as("the primary lacks it too").isEqualTo("AAAA");
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
