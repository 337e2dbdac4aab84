package io.blobfs.tyr.server;

import static org.assertj.core.api.Assertions.assertThat;

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
 * A repair in pieces (issue 13, review M4) and the commits batched with its last piece
 * (review 2, N2). Batches are handed to the backup's replicator as its primary's stream would send them;
 * the primary itself does not run, so nothing repairs the key meanwhile.
 */
class RepairPiecesBatchTest {
  private static final long INCARNATION = 42;

  @TempDir
  Path dir;

  private final Member p = member();
  private final Member b = member();
  private final Ring ring = new Ring(1, List.of(p, b), 16, 2);
  private final String key = keyOwnedBy(ring, null, p, b);
  private long seq = 1;

  /**
   * Review 2 (M4): a repair in pieces ends with its last piece, applied on the backup as one
   * whole put of the key, which lifts the fence. A write at an offset of the key that the
   * primary committed right after the last piece and that its stream sent in the same batch
   * (a busy stream) is checked against the fence as it was before the batch (FencedWrites
   * does not learn that the last piece replaces the key whole): it is refused, the key is
   * fenced again and owed, and the whole key is repaired in pieces again. Expected: the
   * write applied on the repaired copy, nothing refused, the fence off.
   */
  @Test
  void aWriteBatchedRightAfterTheLastPieceIsAppliedNotRefused() throws Exception {
    try (TyrServer backup = start()) {
      Replicator r = backup.replicator();
      apply(r, new TxOp.Put(key, utf8("AAAA"), false));
      r.refused(batch(new TxOp.Write(key, 0, utf8("BB")))); // W1: the primary holds "BBAA"
      assertThat(r.staleHere(key)).isNotNull();
      List<TxRequest> txs = List.of(
          new TxRequest(List.of(), List.of(new TxOp.Write(key, 0, utf8("BB")))),
          new TxRequest(List.of(), List.of(new TxOp.Write(key, 2, utf8("AA")))),
          new TxRequest(List.of(), List.of(new TxOp.Write(key, 0, utf8("C"))))); // W3
      Object answer = TyrClient.await(r.apply(new Request.Replicate(ring.epoch(), p.id(),
          INCARNATION, seq, txs, java.util.Map.of(), true, java.util.Map.of(
              0, Request.Replicate.PIECE_FIRST, 1, Request.Replicate.PIECE_LAST))));
      seq += txs.size();
      assertThat(((io.blobfs.tyr.api.CommitResult) answer).values())
          .as("W3 refused though the last piece before it replaced the key whole").isEmpty();
      assertThat(onBackup(backup)).isEqualTo("CBAA");
      assertThat(r.staleHere(key)).as("the fence lifted by the repair").isNull();
    }
  }

  /**
   * The other side of N2: a last piece that does not follow pieces staged here (its first
   * was lost) is refused and applies nothing, so the key stays fenced for the write after
   * it in the batch, which is refused too (applied, it left "CAAA": old bytes with a later
   * piece on top).
   */
  @Test
  void aWriteAfterALastPieceNotStagedStaysRefused() throws Exception {
    try (TyrServer backup = start()) {
      Replicator r = backup.replicator();
      apply(r, new TxOp.Put(key, utf8("AAAA"), false));
      r.refused(batch(new TxOp.Write(key, 0, utf8("BB"))));
      List<TxRequest> txs = List.of(
          new TxRequest(List.of(), List.of(new TxOp.Write(key, 2, utf8("AA")))),
          new TxRequest(List.of(), List.of(new TxOp.Write(key, 0, utf8("C")))));
      Object answer = TyrClient.await(r.apply(new Request.Replicate(ring.epoch(), p.id(),
          INCARNATION, seq, txs, java.util.Map.of(), true, java.util.Map.of(
              0, Request.Replicate.PIECE_LAST))));
      seq += txs.size();
      assertThat(((io.blobfs.tyr.api.CommitResult) answer).values()).containsExactly(0, 1);
      assertThat(onBackup(backup)).isEqualTo("AAAA");
      assertThat(r.staleHere(key)).as("still fenced").isNotNull();
    }
  }

  /**
   * Review 2, S2: pieces are staged in the node's data directory (not java.io.tmpdir, never
   * cleaned after a crash, maybe small), and what a node left there is deleted at its start.
   */
  @Test
  void piecesAreStagedInTheDataDirWhichIsCleanedAtStart() throws Exception {
    Path staging = dir.resolve("b").resolve("repair-staging");
    java.nio.file.Files.createDirectories(staging);
    Path left = java.nio.file.Files.write(staging.resolve("tyr-repair-1.part"), new byte[64]);
    try (TyrServer backup = start()) {
      assertThat(left).as("left by a crash, deleted at start").doesNotExist();
      Replicator r = backup.replicator();
      apply(r, new TxOp.Put(key, utf8("AAAA"), false));
      List<TxRequest> txs = List.of(
          new TxRequest(List.of(), List.of(new TxOp.Write(key, 0, utf8("BB")))));
      TyrClient.await(r.apply(new Request.Replicate(ring.epoch(), p.id(), INCARNATION, seq,
          txs, java.util.Map.of(), true, java.util.Map.of(0, Request.Replicate.PIECE_FIRST))));
      seq += txs.size();
      try (java.util.stream.Stream<Path> files = java.nio.file.Files.list(staging)) {
        assertThat(files.toList()).as("the first piece, staged in the data dir").hasSize(1);
      }
    }
  }

  /**
   * Review 2, S5: a max-frame too small for a piece (1m: half of nothing past the 1 MiB kept
   * for headers) makes no repair in pieces (0), rather than pieces of 0 bytes for ever.
   */
  @Test
  void aFrameTooSmallForAPieceMakesNoPieces() {
    assertThat(Replicator.pieceBytes(1 << 20)).isZero();
    assertThat(Replicator.pieceBytes(4096)).isZero();
    assertThat(Replicator.pieceBytes((1 << 20) + (64 << 10))).isZero();
    assertThat(Replicator.pieceBytes((1 << 20) + (128 << 10))).isEqualTo(64 << 10);
    assertThat(Replicator.pieceBytes(3 << 20)).isEqualTo(1 << 20);
    assertThat(Replicator.pieceBytes(80 << 20)).isEqualTo(4 << 20);
  }

  private String onBackup(TyrServer backup) throws IOException {
    ByteBuffer dst = ByteBuffer.allocate((int) backup.engine().stat(key).size());
    backup.engine().read(key, 0, dst);
    return new String(dst.array(), StandardCharsets.UTF_8);
  }

  /**
   * The next batch of the primary's stream, one transaction of {@code ops}, applied;
   * returns the answer's list of commits refused here (none unless the key is fenced).
   */
  private long[] apply(Replicator r, TxOp... ops) throws IOException {
    return applyAll(r, List.of(ops));
  }

  /** The next batch, one transaction per list of ops; the indexes of those refused. */
  @SafeVarargs
  private long[] applyAll(Replicator r, List<TxOp>... txs) throws IOException {
    List<TxRequest> batch = new java.util.ArrayList<>();
    for (List<TxOp> ops : txs) {
      batch.add(new TxRequest(List.of(), ops));
    }
    Object answer = TyrClient.await(r.apply(new Request.Replicate(ring.epoch(), p.id(),
        INCARNATION, seq, batch)));
    seq += batch.size();
    return ((io.blobfs.tyr.api.CommitResult) answer).values();
  }

  /** A batch the backup refuses (it is not applied: its numbers are not taken). */
  private Request.Replicate batch(TxOp op) {
    return new Request.Replicate(ring.epoch(), p.id(), INCARNATION, seq,
        List.of(new TxRequest(List.of(), List.of(op))));
  }

  private static ByteBuffer utf8(String s) {
    return ByteBuffer.wrap(s.getBytes(StandardCharsets.UTF_8));
  }

  private static Member member() {
    try {
      return new Member("127.0.0.1", io.blobfs.tyr.TestPorts.free());
    } catch (IOException e) {
      throw new java.io.UncheckedIOException(e);
    }
  }

  private static String keyOwnedBy(Ring ring, String not, Member... owners) {
    for (int i = 0; ; i++) {
      if (ring.owners("k/" + i).equals(List.of(owners)) && !("k/" + i).equals(not)) {
        return "k/" + i;
      }
    }
  }

  private TyrServer start() throws IOException {
    EngineConfig engine = EngineConfig.defaults(dir.resolve("b"))
        .withSyncPolicy(SyncPolicy.NONE);
    ServerConfig config = new ServerConfig("127.0.0.1", b.port(), engine, 80 << 20, null, 8,
        64, Duration.ofSeconds(60), 512L << 20, 128L << 20, Duration.ofSeconds(60), null);
    return TyrServer.start(config, new Membership(b, ring));
  }
}
