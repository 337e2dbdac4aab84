package io.blobfs.tyr.it;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;

import io.blobfs.tyr.api.ErrorCode;
import io.blobfs.tyr.api.TxOp;
import io.blobfs.tyr.api.TxRequest;
import io.blobfs.tyr.api.TyrException;
import io.blobfs.tyr.client.ClientConfig;
import io.blobfs.tyr.client.LocalReadStats;
import io.blobfs.tyr.client.LocalSnapshotCheck;
import io.blobfs.tyr.client.TyrClient;
import io.blobfs.tyr.protocol.Opcode;
import io.blobfs.tyr.server.TyrServerProcess;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.net.Socket;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Random;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Local reads from a Týr server in its own process that compacts every 50 ms: snapshot
 * reads under overwrite and compaction, the connection when local reads are off, and no
 * grant for a peer that has not authenticated.
 */
class TyrLocalReadsIT {
  private static final byte[] SECRET = "local-reads-secret".getBytes(StandardCharsets.UTF_8);

  @TempDir
  Path dir;
  private TyrServerProcess server;

  @BeforeEach
  void start() throws Exception {
    Path secret = Files.write(dir.resolve("secret"), SECRET);
    server = new TyrServerProcess(dir.resolve("data"), "--secret-file", secret.toString(),
        "--sync", "interval", "--chunk-size", "64k", "--segment-size", "1m",
        "--compact-interval", "50ms").start();
  }

  @AfterEach
  void stop() {
    server.close();
  }

  private TyrClient client(boolean local) {
    return new TyrClient(ClientConfig.of("127.0.0.1", server.port()).withSecret(SECRET)
        .withLocalReads(local));
  }

  @Test
  void snapshotReadsUnderOverwriteAndTheServersCompaction() throws Exception {
    // The server compacts on its own; the check asserts that it deleted segments meanwhile.
    LocalSnapshotCheck.run(client(true), () -> { }, server.dataDir(), Duration.ofSeconds(6));
  }

  @Test
  void offReadsOverTheConnection() throws Exception {
    byte[] data = new byte[500_000];
    new Random(7).nextBytes(data);
    try (TyrClient c = client(false)) {
      TyrClient.await(c.commit(TxRequest.of(new TxOp.Put("k", ByteBuffer.wrap(data), false))));
      ByteBuffer b = ByteBuffer.allocate(data.length);
      TyrClient.await(c.read("k", 0, b));
      assertArrayEquals(data, b.array());
      assertThat(c.localReadStats()).isEqualTo(new LocalReadStats(0, 0, 0, 0, false));
    }
    try (TyrClient c = client(true)) { // and the same bytes from the files
      ByteBuffer b = ByteBuffer.allocate(data.length);
      TyrClient.await(c.read("k", 0, b));
      assertArrayEquals(data, b.array());
      assertThat(c.localReadStats().localReads()).isEqualTo(1);
    }
  }

  @Test
  void noGrantWithoutAuthentication() throws Exception {
    try (TyrClient c = client(true)) {
      TyrClient.await(c.commit(TxRequest.of(new TxOp.Put("k", ByteBuffer.allocate(10), false))));
    }
    try (Socket s = new Socket("127.0.0.1", server.port())) {
      s.setSoTimeout(10_000);
      DataOutputStream out = new DataOutputStream(s.getOutputStream());
      DataInputStream in = new DataInputStream(s.getInputStream());
      assertThat(readFrame(in)[0]).isEqualTo(Opcode.CHALLENGE);
      byte[] key = "k".getBytes(StandardCharsets.UTF_8);
      ByteBuffer grant = ByteBuffer.allocate(2 + key.length + 12).putShort((short) key.length)
          .put(key).putLong(0).putInt(10);
      out.writeInt(12 + grant.capacity());
      out.writeByte(1); // protocol version
      out.writeByte(Opcode.GRANT);
      out.writeShort(0);
      out.writeLong(1);
      out.write(grant.array());
      out.flush();
      int[] answer = readFrame(in);
      assertThat(answer[0]).isEqualTo(Opcode.ERROR);
      assertThat(ErrorCode.ofWire(answer[1])).isEqualTo(ErrorCode.UNAUTHENTICATED);
      assertThat(in.read()).as("closed by the server").isEqualTo(-1);
    }
    try (TyrClient wrong = new TyrClient(ClientConfig.of("127.0.0.1", server.port())
        .withSecret("not-the-secret".getBytes(StandardCharsets.UTF_8)).withLocalReads(true)
        .withTimeouts(Duration.ofSeconds(5), Duration.ofSeconds(5)))) {
      assertThatThrownBy(() -> TyrClient.await(wrong.read("k", 0, ByteBuffer.allocate(10))))
          .isInstanceOfSatisfying(TyrException.class,
              e -> assertThat(e.code()).isEqualTo(ErrorCode.UNAUTHENTICATED));
      assertThat(wrong.localReadStats().localReads()).isZero();
    }
  }

  /** A frame's opcode and, for an error, its code. */
  private static int[] readFrame(DataInputStream in) throws Exception {
    int len = in.readInt();
    in.readUnsignedByte();
    int op = in.readUnsignedByte();
    in.readShort();
    in.readLong();
    byte[] payload = new byte[len - 12];
    in.readFully(payload);
    return new int[] {op, op == Opcode.ERROR ? ByteBuffer.wrap(payload).getShort() & 0xffff : 0};
  }
}
