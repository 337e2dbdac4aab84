package io.blobfs.tyr.blobfs;

import static org.assertj.core.api.Assertions.assertThat;

import io.blobfs.store.StoreOptions;
import io.blobfs.tyr.api.TxOp;
import io.blobfs.tyr.api.TxRequest;
import io.blobfs.tyr.engine.EngineConfig;
import io.blobfs.tyr.engine.SyncPolicy;
import io.blobfs.tyr.ring.Member;
import io.blobfs.tyr.ring.Ring;
import io.blobfs.tyr.server.Membership;
import io.blobfs.tyr.server.ServerConfig;
import io.blobfs.tyr.server.TyrServer;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A replica that accepts connections and never answers (a frozen process: the kernel
 * still accepts), not yet marked DOWN: a plain read that tries it first gives up on it
 * after the connect timeout (its handshake never finishes) and is served by the key's
 * other replica, within the op timeout. Session 9 looked for a read that failed there
 * instead (the brief's fourth point) and found none on this path; this test keeps it so.
 */
class TyrSilentReplicaTest {
  @TempDir
  Path dir;

  @Test
  void aPlainReadWhoseFirstReplicaNeverAnswersIsServedByTheOther() throws Exception {
    Member silent = new Member("127.0.0.1", io.blobfs.tyr.TestPorts.free());
    Member real = new Member("127.0.0.1", io.blobfs.tyr.TestPorts.free());
    Ring ring = new Ring(1, List.of(silent, real), 16, 2);
    String key = null;
    for (int i = 0; key == null; i++) {
      if (ring.owners("k/" + i).equals(List.of(silent, real))) {
        key = "k/" + i; // its primary is the silent one
      }
    }
    List<Socket> accepted = new CopyOnWriteArrayList<>();
    try (ServerSocket frozen = new ServerSocket()) {
      frozen.bind(new InetSocketAddress("127.0.0.1", silent.port()));
      Thread acceptor = new Thread(() -> {
        try {
          while (true) {
            accepted.add(frozen.accept()); // and never a byte back
          }
        } catch (IOException closed) {
          // the test is over
        }
      }, "test-frozen-replica");
      acceptor.setDaemon(true);
      acceptor.start();
      EngineConfig engine = EngineConfig.defaults(dir.resolve("real"))
          .withSyncPolicy(SyncPolicy.NONE);
      ServerConfig config = new ServerConfig("127.0.0.1", real.port(), engine, 80 << 20, null,
          8, 64, Duration.ofSeconds(60), 512L << 20, 128L << 20, Duration.ofSeconds(60), null);
      try (TyrServer node = TyrServer.start(config, new Membership(real, ring));
          TyrClusterBlobStore store = (TyrClusterBlobStore) new TyrBlobStoreProvider().open("b",
              new StoreOptions("fs.blob.store.b.", Map.of("nodes", real.id(),
                  "connect-timeout", "500ms", "op-timeout", "30s")))) {
        node.engine().commit(new TxRequest(List.of(), List.of(new TxOp.Put(key,
            ByteBuffer.wrap("hello".getBytes(StandardCharsets.UTF_8)), false))))
            .get(1, TimeUnit.MINUTES);
        // Reads start at a random replica: until one has tried the silent one first.
        for (int i = 0; i < 40 && accepted.isEmpty(); i++) {
          ByteBuffer dst = ByteBuffer.allocate(64);
          int n = store.read(key, 0, dst).get(1, TimeUnit.MINUTES);
          assertThat(new String(dst.array(), 0, n, StandardCharsets.UTF_8)).isEqualTo("hello");
        }
        assertThat(accepted).as("connections the silent replica accepted").isNotEmpty();
      } finally {
        for (Socket s : accepted) {
          s.close();
        }
      }
    }
  }
}
