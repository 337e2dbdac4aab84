package io.blobfs.tyr.server;

import static org.assertj.core.api.Assertions.assertThat;

import io.blobfs.tyr.api.TxOp;
import io.blobfs.tyr.api.TxRequest;
import io.blobfs.tyr.client.ClientConfig;
import io.blobfs.tyr.client.TyrClient;
import io.blobfs.tyr.engine.EngineConfig;
import io.blobfs.tyr.protocol.Opcode;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** A connection's grants: released by it only, and all of them when it closes. */
class ConnectionGrantsTest {
  @TempDir
  Path dir;

  @Test
  void grantsAreTheirConnectionsToReleaseAndGoWithIt() throws Exception {
    try (TyrServer server = TyrServer.start(ServerConfig.local(EngineConfig.defaults(dir)))) {
      try (TyrClient c = new TyrClient(ClientConfig.of("127.0.0.1", server.port()))) {
        TyrClient.await(c.commit(TxRequest.of(new TxOp.Put("k", ByteBuffer.allocate(100),
            false))));
      }
      try (ProtocolTest.RawConnection holder = new ProtocolTest.RawConnection(server.port());
          ProtocolTest.RawConnection other = new ProtocolTest.RawConnection(server.port())) {
        holder.handshake();
        holder.send(1, Opcode.GRANT, 1, grant("k"));
        assertThat(holder.readFrameOpcode()).isEqualTo(Opcode.GRANT | Opcode.RESPONSE);
        assertThat(server.engine().pinnedGrants()).isEqualTo(1);

        other.handshake(); // grant ids are sequential: the first one is 1
        other.send(1, Opcode.RELEASE, 2, ByteBuffer.allocate(8).putLong(1).array());
        assertThat(other.readFrameOpcode()).isEqualTo(Opcode.RELEASE | Opcode.RESPONSE);
        assertThat(server.engine().pinnedGrants()).as("released by another").isEqualTo(1);

        holder.close();
        long deadline = System.nanoTime() + Duration.ofSeconds(60).toNanos(); // a loaded machine
        while (server.engine().pinnedGrants() > 0 && System.nanoTime() < deadline) {
          Thread.sleep(10);
        }
        assertThat(server.engine().pinnedGrants()).as("after its connection closed").isZero();
      }
    }
  }

  private static byte[] grant(String key) {
    byte[] k = key.getBytes(StandardCharsets.UTF_8);
    return ByteBuffer.allocate(2 + k.length + 12).putShort((short) k.length).put(k).putLong(0)
        .putInt(100).array();
  }
}
