package io.blobfs.tyr.server;

import static org.assertj.core.api.Assertions.assertThat;

import io.blobfs.tyr.api.TxOp;
import io.blobfs.tyr.api.TxRequest;
import io.blobfs.tyr.engine.EngineConfig;
import io.blobfs.tyr.engine.SyncPolicy;
import io.blobfs.tyr.engine.TyrEngine;
import io.blobfs.tyr.protocol.Request;
import io.blobfs.tyr.ring.Member;
import io.blobfs.tyr.ring.Ring;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Two decided shares X then Y (p's order) of one key, both unapplied on backup b (b missed
 * X's apply), taken over by b: they apply in p's order, across a restart of b too (the
 * second review of tyr-bug1's fix, M1a and M1b).
 */
class TakenOverSharesOrderTest {
  @TempDir Path dir;

  private static final String X = "1a1e2d3c-4b5a-4978-8695-a4b3c2d1e0f9";
  private static final String Y = "0f1e2d3c-4b5a-4978-8695-a4b3c2d1e0f9";
  private final Member p = new Member("127.0.0.1", 1);
  private final Member b = new Member("127.0.0.1", 2);

  /**
   * After a restart of b the shares' order is their records' (each records its place),
   * not the directory's (readdir: on ext4 a directory past one block lists in name-hash
   * order). The key is chosen so that the directory lists Y's record first: before the
   * fix (M1b) b took Y over first, applied Y then X, and k ended at X's value although p
   * applied X then Y (and served Y's value).
   */
  @Test
  void sharesReadBackAtARestartAreTakenOverInTheirRecordedOrderNotTheDirectorys()
      throws Exception {
    Ring ring = new Ring(1, List.of(p, b), 16, 2);
    Path data = dir.resolve("b");
    try (TyrEngine engine = open(data)) {
      TxRecords recs = new TxRecords(engine.config().directory());
      Path txDir = engine.config().directory().resolve("transactions");
      for (int i = 0; i < 300; i++) { // a directory in use: large enough to list in hash order
        Files.write(txDir.resolve("filler-" + i + ".junk"), new byte[] {0});
      }
      String k = null;
      for (int i = 0; k == null; i++) {
        String c = "k/" + i;
        if (!ring.owners(c).equals(List.of(p, b))) {
          continue;
        }
        // b received X's share, then Y's (p's order): the files are written in that order.
        recs.writeReplica(share(X, c), TxRecords.encode(prep(X, c, 1), Map.of(c, 0L), 0));
        recs.writeReplica(share(Y, c), TxRecords.encode(prep(Y, c, 2), Map.of(c, 0L), 1));
        if (recs.readAllReplicas().keySet().iterator().next().startsWith(Y)) {
          k = c;
        } else {
          recs.deleteReplica(share(X, c));
          recs.deleteReplica(share(Y, c));
        }
      }
      recs.writeDecision(X, true);
      recs.writeDecision(Y, true);
      List<String> listed = new ArrayList<>(recs.readAllReplicas().keySet());
      // "restart": a fresh Transactions reads the records back
      Membership m = new Membership(b, ring).withTxTimeout(Duration.ofSeconds(1));
      try (Transactions t = new Transactions(engine, m, null, PeerAccess.NONE, 1 << 20)) {
        m.install(ring.withState(p, Ring.State.DOWN, 2)); // p lost: b takes both over
        long end = System.nanoTime() + Duration.ofSeconds(120).toNanos();
        while (!t.prepared().isEmpty()) {
          assertThat(System.nanoTime()).isLessThan(end);
          Thread.sleep(20);
        }
        assertThat(read(engine, k)).as("k after the takeover of X then Y (directory order "
            + listed + ")").isEqualTo((byte) 2);
      }
    }
  }

  /**
   * The same across a restart after the takeover: both shares were taken over (parts
   * recorded as prepared here, X's place before Y's), neither applied yet. recover()
   * reserves them in their recorded order, not the directory's (which lists Y first).
   */
  @Test
  void partsReadBackAtARestartReserveTheirKeysInTheirRecordedOrderNotTheDirectorys()
      throws Exception {
    Ring ring = new Ring(1, List.of(p, b), 16, 2);
    Path data = dir.resolve("b");
    try (TyrEngine engine = open(data)) {
      TxRecords recs = new TxRecords(engine.config().directory());
      Path txDir = engine.config().directory().resolve("transactions");
      for (int i = 0; i < 300; i++) { // a directory in use: large enough to list in hash order
        Files.write(txDir.resolve("filler-" + i + ".junk"), new byte[] {0});
      }
      String k = null;
      for (int i = 0; k == null; i++) {
        String c = "k/" + i;
        if (!ring.owners(c).equals(List.of(p, b))) {
          continue;
        }
        recs.writePrepared(share(X, c), TxRecords.encode(prep(X, c, 1), Map.of(c, 0L), 0));
        recs.writePrepared(share(Y, c), TxRecords.encode(prep(Y, c, 2), Map.of(c, 0L), 1));
        if (recs.readAllPrepared().keySet().iterator().next().startsWith(Y)) {
          k = c;
        } else {
          recs.deletePrepared(share(X, c));
          recs.deletePrepared(share(Y, c));
        }
      }
      recs.writeDecision(X, true);
      recs.writeDecision(Y, true);
      List<String> listed = new ArrayList<>(recs.readAllPrepared().keySet());
      Membership m = new Membership(b, ring.withState(p, Ring.State.DOWN, 2))
          .withTxTimeout(Duration.ofSeconds(1));
      try (Transactions t = new Transactions(engine, m, null, PeerAccess.NONE, 1 << 20)) {
        long end = System.nanoTime() + Duration.ofSeconds(120).toNanos();
        while (!t.prepared().isEmpty()) {
          assertThat(System.nanoTime()).isLessThan(end);
          Thread.sleep(20);
        }
        assertThat(read(engine, k)).as("k after X then Y (directory order " + listed + ")")
            .isEqualTo((byte) 2);
      }
    }
  }

  /** A record written before places were recorded reads back, placed before any other. */
  @Test
  void aRecordWithoutItsPlaceReadsBackAsBeforeEveryPlacedRecord() throws Exception {
    byte[] placed = TxRecords.encode(prep(X, "k", 1), Map.of("k", 3L), 7);
    byte[] old = java.util.Arrays.copyOf(placed, placed.length - Long.BYTES);
    TxRecords.Prepared back = TxRecords.decode(old);
    assertThat(back.seq()).isEqualTo(TxRecords.NO_SEQ);
    assertThat(back.versions()).isEqualTo(Map.of("k", 3L));
    assertThat(back.request().txId()).isEqualTo(X);
    assertThat(TxRecords.decode(placed).seq()).isEqualTo(7L);
  }

  /**
   * A crash between the takeover's part record and the share's deletion leaves both; at
   * the restart the share must not be taken over again over the live part of the same
   * name (which lost its count as running: a ring installed later never settled).
   */
  @Test
  void aShareReadBackBesideItsTakenOverPartIsNotTakenOverAgain() throws Exception {
    Ring ring = new Ring(1, List.of(p, b), 16, 2);
    String k = keyOwnedBy(ring, p, b);
    Path data = dir.resolve("b");
    try (TyrEngine engine = open(data)) {
      TxRecords recs = new TxRecords(engine.config().directory());
      byte[] rec = TxRecords.encode(prep(X, k, 1), Map.of(k, 0L), 0);
      recs.writePrepared(share(X, k), rec);
      recs.writeReplica(share(X, k), rec);
      recs.writeDecision(X, true);
      Membership m = new Membership(b, ring.withState(p, Ring.State.DOWN, 2))
          .withTxTimeout(Duration.ofSeconds(1));
      try (Transactions t = new Transactions(engine, m, null, PeerAccess.NONE, 1 << 20)) {
        long end = System.nanoTime() + Duration.ofSeconds(120).toNanos();
        while (!t.prepared().isEmpty()) {
          assertThat(System.nanoTime()).isLessThan(end);
          Thread.sleep(20);
        }
        assertThat(read(engine, k)).isEqualTo((byte) 1);
        assertThat(t.held()).isEmpty();
        assertThat(recs.readAllReplicas()).isEmpty();
        m.install(ring.withState(p, Ring.State.DOWN, 3));
        assertThat(m.settled(3).get(60, java.util.concurrent.TimeUnit.SECONDS).epoch())
            .as("nothing left counted as running under epoch 2").isEqualTo(3);
      }
    }
  }

  /**
   * b takes over X's share then Y's (both recorded at k's version 0); X applies (k moves
   * on), Y waits for its coordinator p, lost. b restarts before Y is resolved: Y's record
   * must not read as applied because k moved (X's apply, not Y's). Before the fix (M1a)
   * recover() dropped Y, a decided commit's part then never applied.
   */
  @Test
  void aTakenOverPartBehindAnotherIsNotTakenForAppliedAtARestartOnceTheOtherApplied()
      throws Exception {
    Ring ring = new Ring(1, List.of(p, b), 16, 2);
    String k = keyOwnedBy(ring, p, b);
    Ring down = ring.withState(p, Ring.State.DOWN, 2);
    Path data = dir.resolve("b");
    try (TyrEngine engine = open(data)) {
      TxRecords recs = new TxRecords(engine.config().directory());
      recs.writeReplica(share(X, k), TxRecords.encode(prep(X, k, 1), Map.of(k, 0L), 0));
      Request.Prepare y = new Request.Prepare(Y, p.id(), List.of(p.id(), b.id()), put(k, 2));
      recs.writeReplica(share(Y, k), TxRecords.encode(y, Map.of(k, 0L), 1));
      recs.writeDecision(X, true); // X's coordinator is b; Y's is p, unreachable
      Membership m = new Membership(b, ring).withTxTimeout(Duration.ofSeconds(1));
      try (Transactions t = new Transactions(engine, m, null, PeerAccess.NONE, 1 << 20)) {
        m.install(down); // p lost: b takes both over
        long end = System.nanoTime() + Duration.ofSeconds(120).toNanos();
        while (!t.prepared().equals(List.of(share(Y, k)))) {
          assertThat(System.nanoTime()).isLessThan(end);
          Thread.sleep(20);
        }
        assertThat(read(engine, k)).as("X applied").isEqualTo((byte) 1);
      }
    }
    try (TyrEngine engine = open(data)) { // b restarts
      Membership m = new Membership(b, down).withTxTimeout(Duration.ofSeconds(1));
      try (Transactions t = new Transactions(engine, m, null, PeerAccess.NONE, 1 << 20)) {
        assertThat(t.prepared()).as("Y, not applied, still prepared").containsExactly(
            share(Y, k));
        assertThat(read(engine, k)).isEqualTo((byte) 1);
      }
    }
  }

  private static TyrEngine open(Path data) throws Exception {
    return TyrEngine.open(EngineConfig.defaults(data).withSyncPolicy(SyncPolicy.NONE));
  }

  private static byte read(TyrEngine e, String k) throws Exception {
    ByteBuffer got = ByteBuffer.allocate(1);
    e.read(k, 0, got);
    return got.array()[0];
  }

  private Request.Prepare prep(String id, String k, int v) {
    return new Request.Prepare(id, b.id(), List.of(b.id()), put(k, v));
  }

  private static String share(String id, String k) {
    return id + "-s" + Integer.toHexString(List.of(k).hashCode());
  }

  private static String keyOwnedBy(Ring ring, Member... owners) {
    for (int i = 0; ; i++) {
      if (ring.owners("k/" + i).equals(List.of(owners))) {
        return "k/" + i;
      }
    }
  }

  private static TxRequest put(String key, int v) {
    return new TxRequest(List.of(), List.of(new TxOp.Put(key,
        ByteBuffer.wrap(new byte[] {(byte) v}), false)));
  }
}
