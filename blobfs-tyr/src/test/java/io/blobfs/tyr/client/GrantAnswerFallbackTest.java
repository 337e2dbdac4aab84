package io.blobfs.tyr.client;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;

import io.blobfs.tyr.api.TxOp;
import io.blobfs.tyr.api.TxRequest;
import io.blobfs.tyr.engine.EngineConfig;
import io.blobfs.tyr.server.ServerConfig;
import io.blobfs.tyr.server.TyrServer;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * End to end over a real server (from the review of the snapshot change, session 16): a
 * blob whose grant answer passes the node's 1 MiB bound (30,000 one-byte writes 64 bytes
 * apart, 4 KiB chunks: ~60,000 pieces) gets no snapshot and its reads fall back to the
 * connection, the bytes exact, the connection alive, no pin left; a range of it under the
 * bound is still read locally.
 */
class GrantAnswerFallbackTest {
  @TempDir
  Path dir;

  @Test
  void aBlobOfManyPiecesFallsBackEndToEnd() throws Exception {
    int n = 30_000;
    int len = 64 * (n - 1) + 1;
    byte[] expect = new byte[len];
    TxOp[] ops = new TxOp[n];
    for (int i = 0; i < n; i++) {
      byte b = (byte) (i * 31 + 7);
      expect[64 * i] = b;
      ops[i] = new TxOp.Write("frag", 64L * i, ByteBuffer.wrap(new byte[] {b}));
    }
    try (TyrServer server = TyrServer.start(ServerConfig.local(new EngineConfig(dir, 4096, 1L << 30,
        io.blobfs.tyr.engine.SyncPolicy.INTERVAL, java.time.Duration.ofMillis(20), 1024, 1L << 30, 64,
        java.time.Duration.ZERO, 0.5)));
        TyrClient c = new TyrClient(ClientConfig.of("127.0.0.1", server.port())
            .withLocalReads(true))) {
      // One commit per write (one transaction's writes to one key are laid out as one).
      java.util.List<java.util.concurrent.CompletableFuture<?>> inFlight =
          new java.util.ArrayList<>();
      for (TxOp op : ops) {
        inFlight.add(c.commit(TxRequest.of(op)));
        if (inFlight.size() == 500) {
          for (java.util.concurrent.CompletableFuture<?> f : inFlight) {
            TyrClient.await(f);
          }
          inFlight.clear();
        }
      }
      for (java.util.concurrent.CompletableFuture<?> f : inFlight) {
        TyrClient.await(f);
      }
      io.blobfs.tyr.api.LocalGrant probe = server.engine().grant("frag", 0, len,
          java.time.Duration.ofSeconds(60));
      server.engine().release(probe.id());
      assertThat(probe.pieces().size()).as("pieces").isGreaterThan(50_000);
      LocalSnapshot s = TyrClient.await(c.localSnapshot("frag", len));
      assertThat(s).as("no snapshot for an answer over the bound").isNull();
      assertThat(c.localReadStats().fallbacks()).isEqualTo(1);
      ByteBuffer dst = ByteBuffer.allocate(len);
      TyrClient.await(c.read("frag", 0, dst));
      assertArrayEquals(expect, dst.array());
      assertThat(c.localReadStats().fallbacks()).isEqualTo(2);
      TyrClient.await(c.ping());
      assertThat(server.engine().pinnedGrants()).isZero();
      // A range of the same blob under the bound is still granted and read locally.
      ByteBuffer part = ByteBuffer.allocate(64 * 2001);
      TyrClient.await(c.read("frag", 0, part));
      assertThat(c.localReadStats().localReads()).isEqualTo(1);
      for (int i = 0; i < 64 * 2001; i++) {
        assertThat(part.get(i)).isEqualTo(expect[i]);
      }
    }
  }
}
