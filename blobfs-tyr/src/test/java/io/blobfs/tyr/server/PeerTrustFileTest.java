package io.blobfs.tyr.server;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.junit.jupiter.api.Assertions.assertEquals;

import io.blobfs.tyr.api.CommitResult;
import io.blobfs.tyr.api.ErrorCode;
import io.blobfs.tyr.api.TxOp;
import io.blobfs.tyr.api.TxRequest;
import io.blobfs.tyr.api.TyrException;
import io.blobfs.tyr.client.TyrClient;
import io.blobfs.tyr.engine.EngineConfig;
import io.blobfs.tyr.engine.SyncPolicy;
import io.blobfs.tyr.engine.TyrEngine;
import io.blobfs.tyr.protocol.Request;
import io.blobfs.tyr.protocol.TxDecision;
import io.blobfs.tyr.ring.Member;
import io.blobfs.tyr.ring.Ring;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * An unusable tls-peer-trust file (review must-fix 1): a node refuses to start with it,
 * and if it becomes unusable later (deleted, rotated badly) a write fails before anything
 * is applied, and a decided cross-node part is retried rather than left applying.
 * Nothing here connects: making the peer client is what fails.
 */
class PeerTrustFileTest {
  @TempDir
  Path dir;

  @Test
  void aClusterNodeWithAnUnreadablePeerTrustFileDoesNotStart() throws Exception {
    Path garbled = Files.writeString(dir.resolve("cluster.pem"), "not a certificate\n");
    Member self = new Member("127.0.0.1", 1);
    for (Path trust : List.of(garbled, dir.resolve("cluster.pm"))) {
      ServerConfig config = config(self).withTls(new ServerConfig.TlsFiles(
          dir.resolve("node.p12"), dir.resolve("pw"), trust));
      assertThatThrownBy(() -> TyrServer.start(config,
          new Membership(self, new Ring(1, List.of(self), 8, 1))))
          .isInstanceOf(IOException.class)
          .hasMessageContaining("tls-peer-trust " + trust);
    }
    assertThat(dir.resolve("node")).as("the engine was not opened").doesNotExist();
  }

  @Test
  void aPrimaryThatCannotMakeItsBackupsClientAppliesNothing() throws Exception {
    Member p = new Member("127.0.0.1", 1);
    Member b = new Member("127.0.0.1", 2);
    Ring ring = new Ring(1, List.of(p, b), 16, 2);
    String key = keyWithPrimary(ring, p);
    try (TyrEngine engine = open();
        Replicator r = new Replicator(new Membership(p, ring), engine, missingTrust(),
            1 << 20)) {
      assertThatThrownBy(() -> TyrClient.await(r.commit(put(key))))
          .isInstanceOfSatisfying(TyrException.class,
              e -> assertEquals(ErrorCode.UNAVAILABLE, e.code()))
          .hasMessageContaining("nothing was written");
      assertEquals(0, engine.stat(key).version(), "applied on the primary alone");
    }
  }

  /**
   * A part whose replication cannot start: since prepares are replicated to the keys'
   * backups, the prepare itself is refused (typed, and the part dropped), so no decided
   * part can be left applying behind a future that never completes, and no stream number
   * is reserved with nothing to fill it.
   */
  @Test
  void aPartThatCannotReachItsBackupIsRefusedAtPrepareAndDropped() throws Exception {
    Member p = new Member("127.0.0.1", 1);
    Member b = new Member("127.0.0.1", 2);
    Ring ring = new Ring(1, List.of(p, b), 16, 2);
    String key = keyWithPrimary(ring, p);
    Membership membership = new Membership(p, ring).withTxTimeout(Duration.ofSeconds(60));
    try (TyrEngine engine = open();
        Replicator r = new Replicator(membership, engine, missingTrust(), 1 << 20);
        Transactions t = new Transactions(engine, membership, r, missingTrust(), 1 << 20)) {
      String id = "7c6b5a49-3827-4165-9f4e-3d2c1b0a9f8e";
      Object answer = t.prepare(new Request.Prepare(id, p.id(), List.of(p.id()), put(key)))
          .handle((x, e) -> e != null ? e : x).get(60, TimeUnit.SECONDS);
      assertThat(answer).isInstanceOfSatisfying(java.util.concurrent.CompletionException.class,
          e -> assertThat(e.getCause()).isInstanceOfSatisfying(TyrException.class,
              x -> assertEquals(ErrorCode.UNAVAILABLE, x.code())));
      assertThat(t.prepared()).isEmpty();
      assertEquals(0, engine.stat(key).version());
    }
  }

  private PeerAccess missingTrust() {
    return new PeerAccess(null, dir.resolve("gone.pem"));
  }

  private TyrEngine open() throws IOException {
    return TyrEngine.open(EngineConfig.defaults(dir.resolve("node"))
        .withSyncPolicy(SyncPolicy.NONE));
  }

  private ServerConfig config(Member m) {
    EngineConfig engine = EngineConfig.defaults(dir.resolve("node"))
        .withSyncPolicy(SyncPolicy.NONE);
    return new ServerConfig("127.0.0.1", m.port(), engine, 80 << 20, null, 8, 64,
        Duration.ofSeconds(60), 512L << 20, 128L << 20, Duration.ofSeconds(60), null);
  }

  private static String keyWithPrimary(Ring ring, Member m) {
    for (int i = 0; ; i++) {
      if (ring.primary("k/" + i).equals(m)) {
        return "k/" + i;
      }
    }
  }

  private static TxRequest put(String key) {
    return new TxRequest(List.of(), List.of(new TxOp.Put(key, ByteBuffer.wrap(new byte[] {1}),
        false)));
  }
}
