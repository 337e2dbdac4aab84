package io.blobfs.tyr.server;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.blobfs.store.StoreOptions;
import io.blobfs.tyr.api.ErrorCode;
import io.blobfs.tyr.blobfs.TyrBlobStoreProvider;
import io.blobfs.tyr.client.ClientConfig;
import io.blobfs.tyr.client.TyrClient;
import io.blobfs.tyr.engine.EngineConfig;
import io.blobfs.tyr.protocol.Opcode;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import java.util.Random;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** A blank secret is refused everywhere, and a client with a secret authenticates its server. */
class AuthenticationTest {
  private static final byte[] SECRET = "s3cret".getBytes(StandardCharsets.UTF_8);

  @TempDir
  Path dir;

  @Test
  void blankSecretsAreRefusedInsteadOfTurningAuthenticationOff() throws IOException {
    EngineConfig engine = EngineConfig.defaults(dir.resolve("data"));
    for (String blank : new String[] {"", " ", "\n\t "}) {
      byte[] b = blank.getBytes(StandardCharsets.UTF_8);
      assertThatThrownBy(() -> ServerConfig.local(engine).withSecret(b))
          .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("blank");
      assertThatThrownBy(() -> ClientConfig.of("127.0.0.1", 7400).withSecret(b))
          .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("blank");
      Path file = Files.writeString(dir.resolve("secret"), blank);
      assertThatThrownBy(() -> ServerConfig.parse(new StoreOptions("", Map.of(
          "data-dir", dir.toString(), "secret-file", file.toString())), null))
          .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("secret-file");
      assertThatThrownBy(() -> ServerConfig.parse(new StoreOptions("", Map.of(
          "data-dir", dir.toString())), blank))
          .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("TYR_SECRET");
      assertThatThrownBy(() -> new TyrBlobStoreProvider().open("blank", new StoreOptions(
          "fs.blob.store.blank.", Map.of("address", "127.0.0.1:7400",
              "secret-file", file.toString()))))
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("fs.blob.store.blank.secret-file");
    }
  }

  @Test
  void aClientWithASecretRefusesAServerThatWantsNone() throws Exception {
    try (FakeServer fake = new FakeServer(false, null)) {
      assertRefused(fake);
    }
  }

  @Test
  void aClientWithASecretRefusesAServerWhoseProofIsWrong() throws Exception {
    byte[] garbage = new byte[32];
    new Random(7).nextBytes(garbage);
    try (FakeServer fake = new FakeServer(true, garbage)) {
      assertRefused(fake);
    }
    // Nor may a server replay a client's own proof as its answer.
    try (FakeServer fake = new FakeServer(true, null)) {
      assertRefused(fake);
    }
  }

  @Test
  void aRealServerProvesItself() throws IOException {
    try (TyrServer server = TyrServer.start(ServerConfig.local(EngineConfig.defaults(dir))
        .withSecret(SECRET));
        TyrClient c = new TyrClient(ClientConfig.of("127.0.0.1", server.port())
            .withSecret(SECRET))) {
      TyrClient.await(c.ping());
    }
  }

  private static void assertRefused(FakeServer fake) throws IOException {
    try (TyrClient c = new TyrClient(ClientConfig.of("127.0.0.1", fake.port())
        .withSecret(SECRET).withTimeouts(Duration.ofSeconds(3), Duration.ofSeconds(3)))) {
      assertThatThrownBy(() -> TyrClient.await(c.stat("x")))
          .matches(e -> ProtocolTest.code(e) == ErrorCode.UNAUTHENTICATED, "UNAUTHENTICATED")
          .hasMessageContaining("prove");
      assertThat(fake.statsReceived).isZero();
    }
  }

  /**
   * A server without the secret: sends a challenge, accepts any HELLO and answers it
   * with {@code proof} (null: echoes the client's own proof), then accepts anything.
   */
  private static final class FakeServer implements AutoCloseable {
    final ServerSocket socket = new ServerSocket(0);
    volatile int statsReceived;
    private final Thread thread;

    FakeServer(boolean claimsAuth, byte[] proof) throws IOException {
      thread = new Thread(() -> {
        while (!socket.isClosed()) {
          try (Socket s = socket.accept()) {
            serve(s, claimsAuth, proof);
          } catch (IOException closed) {
            // next connection, or the end
          }
        }
      }, "fake-tyr-server");
      thread.setDaemon(true);
      thread.start();
    }

    private void serve(Socket s, boolean claimsAuth, byte[] proof) throws IOException {
      DataOutputStream out = new DataOutputStream(s.getOutputStream());
      DataInputStream in = new DataInputStream(s.getInputStream());
      byte[] nonce = new byte[32];
      frame(out, Opcode.CHALLENGE, 0, concat(new byte[] {(byte) (claimsAuth ? 1 : 0), 0, 32},
          nonce));
      while (true) {
        int len = in.readInt();
        in.readUnsignedByte();
        int op = in.readUnsignedByte();
        in.readShort();
        long id = in.readLong();
        byte[] payload = new byte[len - 12];
        in.readFully(payload);
        if (op == Opcode.HELLO) {
          int proofLen = ((payload[0] & 0xff) << 8) | (payload[1] & 0xff);
          byte[] answer = proof != null ? proof
              : java.util.Arrays.copyOfRange(payload, 2, 2 + proofLen);
          frame(out, Opcode.HELLO | Opcode.RESPONSE, id,
              concat(new byte[] {(byte) (answer.length >> 8), (byte) answer.length}, answer));
        } else {
          if (op == Opcode.STAT) {
            statsReceived++;
          }
          frame(out, op | Opcode.RESPONSE, id, new byte[0]);
        }
      }
    }

    private static void frame(DataOutputStream out, int opcode, long id, byte[] payload)
        throws IOException {
      out.writeInt(12 + payload.length);
      out.writeByte(1);
      out.writeByte(opcode);
      out.writeShort(0);
      out.writeLong(id);
      out.write(payload);
      out.flush();
    }

    private static byte[] concat(byte[] a, byte[] b) {
      byte[] c = java.util.Arrays.copyOf(a, a.length + b.length);
      System.arraycopy(b, 0, c, a.length, b.length);
      return c;
    }

    int port() {
      return socket.getLocalPort();
    }

    @Override
    public void close() throws IOException {
      socket.close();
    }
  }
}
