package io.blobfs.tyr.server;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.blobfs.tyr.api.BackupUnconfirmedException;
import io.blobfs.tyr.api.TxOp;
import io.blobfs.tyr.api.TxRequest;
import io.blobfs.tyr.engine.EngineConfig;
import io.blobfs.tyr.engine.SyncPolicy;
import io.blobfs.tyr.protocol.Request;
import io.blobfs.tyr.ring.Member;
import io.blobfs.tyr.ring.Ring;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * A backup restarted in the middle of a repair in pieces (issue 13's leftover; README,
 * "Not tested: a backup restart midway through staging"). A 5 MiB key under a 3 MiB
 * {@code max-frame} is repaired in 5 pieces of 1 MiB, which the backup stages under
 * {@code <data>/repair-staging} and applies as one put at the last. The primary reaches
 * the backup through a relay that lets only so many bytes through: the backup has
 * {@code staged} pieces in its file and the next is held on the wire. The backup is then
 * stopped and started again on the same data directory. Expected: the staging directory
 * is empty after the restart, the backup's copy is its old one (not the staged pieces
 * over old bytes), and once the primary's repair runs again (from its first piece) the
 * backup holds exactly the primary's bytes and nothing is owed.
 */
class RepairPiecesRestartTest {
  private static final int MAX_FRAME = 3 << 20;
  private static final int SIZE = 5 << 20;
  private static final int PIECE = 1 << 20;

  @TempDir
  Path dir;

  @ParameterizedTest(name = "restarted with {0} of 5 pieces staged")
  @ValueSource(ints = {2, 4})
  void aBackupRestartedMidwayThroughStagingKeepsItsOldCopyAndIsRepairedWhole(int staged)
      throws Exception {
    assertThat(Replicator.pieceBytes(MAX_FRAME)).isEqualTo(PIECE);
    int backupPort = io.blobfs.tyr.TestPorts.free();
    try (Relay relay = new Relay(backupPort)) {
      Member p = new Member("127.0.0.1", io.blobfs.tyr.TestPorts.free());
      // The backup as the ring (and so the primary) knows it: the relay's port.
      Member b = new Member("127.0.0.1", relay.port());
      Ring ring = new Ring(1, List.of(p, b), 16, 2);
      String key = keyOwnedBy(ring, p, b);
      byte[] old = new byte[SIZE];
      new Random(1).nextBytes(old);
      byte[] fresh = new byte[SIZE];
      new Random(2).nextBytes(fresh);
      Path staging = dir.resolve("b").resolve("repair-staging");
      try (TyrServer np = start(p, p.port(), ring, "p")) {
        TyrServer nb = start(b, backupPort, ring, "b");
        try {
          nb.engine().commit(TxRequest.of(new TxOp.Put(key, ByteBuffer.wrap(old), false)))
              .get(1, TimeUnit.MINUTES);
          // A put the backup refused (as for a ring it was ahead on): applied on the
          // primary alone, the key fenced on the backup. Old and new bytes differ in every
          // piece, so a copy made of staged pieces over old bytes shows.
          TxRequest put = TxRequest.of(new TxOp.Put(key, ByteBuffer.wrap(fresh), false));
          np.engine().commit(put).get(1, TimeUnit.MINUTES);
          nb.replicator().refused(new Request.Replicate(1, p.id(), 7, 1, List.of(put)));
          // Only so many bytes to the backup from here on: the handshake and the refused
          // write (a few KiB), the first pieces, and half of the next one.
          relay.allow((long) staged * PIECE + PIECE / 2);
          Replicator primary = np.replicator();
          assertThatThrownBy(() -> primary.commit(TxRequest.of(new TxOp.Write(key, 0,
              utf8("W")))).get(1, TimeUnit.MINUTES))
              .isInstanceOf(ExecutionException.class)
              .hasCauseInstanceOf(BackupUnconfirmedException.class);
          fresh[0] = 'W';
          long end = System.nanoTime() + Duration.ofSeconds(60).toNanos();
          while (stagedBytes(staging) != (long) staged * PIECE) {
            assertThat(System.nanoTime()).as(staged + " pieces staged on the backup")
                .isLessThan(end);
            Thread.sleep(20);
          }
          Thread.sleep(200); // nothing more arrives: the next piece is held on the wire
          assertThat(stagedBytes(staging)).isEqualTo((long) staged * PIECE);
          assertThat(Arrays.equals(bytes(nb, key), old)).as("nothing applied yet").isTrue();
        } finally {
          nb.close();
        }
        // Started again while the primary's repair is cut short: nothing reaches it yet.
        relay.allow(0);
        nb = start(b, backupPort, ring, "b");
        try {
          assertThat(Files.isDirectory(staging)).isTrue();
          try (Stream<Path> files = Files.list(staging)) {
            assertThat(files.toList()).as("the staged pieces, deleted at the start").isEmpty();
          }
          assertThat(Arrays.equals(bytes(nb, key), old))
              .as("the backup's copy is its old one, not staged pieces over old bytes")
              .isTrue();

          relay.allow(Long.MAX_VALUE);
          long end = System.nanoTime() + Duration.ofSeconds(90).toNanos();
          while (!(Arrays.equals(bytes(nb, key), fresh) && np.replicator().owedTo(b).isEmpty())) {
            assertThat(System.nanoTime()).as("the repair in pieces, made again, reaches the "
                + "restarted backup").isLessThan(end);
            Thread.sleep(50);
          }
          assertThat(Arrays.equals(bytes(np, key), fresh)).as("the primary's copy").isTrue();
          assertThat(Arrays.equals(bytes(nb, key), bytes(np, key)))
              .as("the backup's copy equals the primary's").isTrue();
          try (Stream<Path> files = Files.list(staging)) {
            assertThat(files.toList()).as("nothing left staged").isEmpty();
          }
        } finally {
          nb.close();
        }
      }
    }
  }

  /** The bytes staged in the backup's one staging file; 0 if there is none. */
  private static long stagedBytes(Path staging) throws IOException {
    if (!Files.isDirectory(staging)) {
      return 0;
    }
    try (Stream<Path> files = Files.list(staging)) {
      List<Path> all = files.toList();
      long n = 0;
      for (Path f : all) {
        try {
          n += Files.size(f);
        } catch (java.nio.file.NoSuchFileException gone) {
          // dropped meanwhile
        }
      }
      return n;
    }
  }

  private static byte[] bytes(TyrServer n, String key) throws IOException {
    ByteBuffer buf = ByteBuffer.allocate((int) n.engine().stat(key).size());
    n.engine().read(key, 0, buf);
    return buf.array();
  }

  private static ByteBuffer utf8(String s) {
    return ByteBuffer.wrap(s.getBytes(StandardCharsets.UTF_8));
  }

  private static String keyOwnedBy(Ring ring, Member... owners) {
    for (int i = 0; ; i++) {
      if (ring.owners("k/" + i).equals(List.of(owners))) {
        return "k/" + i;
      }
    }
  }

  private TyrServer start(Member m, int port, Ring ring, String name) throws IOException {
    EngineConfig engine = EngineConfig.defaults(dir.resolve(name))
        .withSyncPolicy(SyncPolicy.NONE);
    ServerConfig config = new ServerConfig("127.0.0.1", port, engine, MAX_FRAME, null, 8,
        64, Duration.ofSeconds(60), 512L << 20, 128L << 20, Duration.ofSeconds(60), null);
    return TyrServer.start(config, new Membership(m, ring));
  }

  /**
   * A TCP relay to the backup that passes at most {@link #allow}ed bytes towards it
   * (counted from that call, over all connections; the rest waits), and everything back.
   * A connection whose either end closes is closed whole.
   */
  private static final class Relay implements AutoCloseable {
    private final ServerSocket listener;
    private final int target;
    private final List<Socket> open = new java.util.concurrent.CopyOnWriteArrayList<>();
    private long budget = Long.MAX_VALUE;
    private volatile boolean closed;

    Relay(int target) throws IOException {
      this.target = target;
      this.listener = new ServerSocket();
      listener.bind(new InetSocketAddress("127.0.0.1", io.blobfs.tyr.TestPorts.free()));
      Thread t = new Thread(this::accept, "relay-accept");
      t.setDaemon(true);
      t.start();
    }

    int port() {
      return listener.getLocalPort();
    }

    synchronized void allow(long bytes) {
      budget = bytes;
      notifyAll();
    }

    /** Up to {@code want} bytes of the budget, waiting while it is spent; 0 once closed. */
    private synchronized int take(int want, Socket a) throws InterruptedException {
      while (budget == 0 && !closed && !a.isClosed()) {
        wait(50);
      }
      if (closed || a.isClosed()) {
        return 0;
      }
      int n = (int) Math.min(want, budget);
      if (budget != Long.MAX_VALUE) {
        budget -= n;
      }
      return n;
    }

    private void accept() {
      while (!closed) {
        try {
          Socket in = listener.accept();
          Socket out;
          try {
            out = new Socket("127.0.0.1", target);
          } catch (IOException down) {
            in.close(); // the backup is not listening
            continue;
          }
          open.add(in);
          open.add(out);
          pump(in, out, true);
          pump(out, in, false);
        } catch (IOException e) {
          return; // closed
        }
      }
    }

    private void pump(Socket from, Socket to, boolean counted) {
      Thread t = new Thread(() -> {
        byte[] buf = new byte[64 << 10];
        try (InputStream in = from.getInputStream(); OutputStream out = to.getOutputStream()) {
          for (int n; (n = in.read(buf)) > 0; ) {
            for (int off = 0; off < n; ) {
              int k = counted ? take(n - off, from) : n - off;
              if (k == 0) {
                return;
              }
              out.write(buf, off, k);
              off += k;
            }
          }
        } catch (IOException | InterruptedException e) {
          // either end closed
        } finally {
          closeQuietly(from);
          closeQuietly(to);
        }
      }, "relay-pump");
      t.setDaemon(true);
      t.start();
    }

    private static void closeQuietly(Socket s) {
      try {
        s.close();
      } catch (IOException ignored) {
        // closing
      }
    }

    @Override
    public synchronized void close() throws IOException {
      closed = true;
      notifyAll();
      listener.close();
      open.forEach(Relay::closeQuietly);
    }
  }
}
