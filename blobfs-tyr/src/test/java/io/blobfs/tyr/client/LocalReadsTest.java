package io.blobfs.tyr.client;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;

import io.blobfs.tyr.api.BlobStat;
import io.blobfs.tyr.api.LocalIdentity;
import io.blobfs.tyr.api.TxOp;
import io.blobfs.tyr.api.TxRequest;
import io.blobfs.tyr.engine.EngineConfig;
import io.blobfs.tyr.engine.SyncPolicy;
import io.blobfs.tyr.server.ServerConfig;
import io.blobfs.tyr.server.TyrServer;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Local reads against a server in this JVM on loopback TCP: the files, or the fallback. */
class LocalReadsTest {
  @TempDir
  Path dir;
  private TyrServer server;

  @BeforeEach
  void start() throws IOException {
    server = TyrServer.start(ServerConfig.local(new EngineConfig(dir, 64 << 10, 1 << 20,
        SyncPolicy.INTERVAL, Duration.ofMillis(20), 1024, 1L << 30, 64, Duration.ZERO, 0.5)));
  }

  @AfterEach
  void stop() throws IOException {
    server.close();
  }

  private TyrClient client(boolean local) {
    return new TyrClient(ClientConfig.of("127.0.0.1", server.port()).withLocalReads(local));
  }

  private static byte[] random(int n, long seed) {
    byte[] b = new byte[n];
    new Random(seed).nextBytes(b);
    return b;
  }

  private static void put(TyrClient c, String key, byte[] data) throws IOException {
    TyrClient.await(c.commit(TxRequest.of(new TxOp.Put(key, ByteBuffer.wrap(data), false))));
  }

  private static byte[] read(TyrClient c, String key, long offset, int n, boolean direct)
      throws IOException {
    ByteBuffer b = direct ? ByteBuffer.allocateDirect(n) : ByteBuffer.allocate(n);
    TyrClient.await(c.read(key, offset, b));
    byte[] out = new byte[b.flip().remaining()];
    b.get(out);
    return out;
  }

  @Test
  void readsFromTheFilesIntoHeapAndDirectBuffers() throws IOException {
    byte[] data = random(300_000, 1);
    try (TyrClient c = client(true)) {
      put(c, "k", data);
      assertArrayEquals(data, read(c, "k", 0, data.length, false));
      assertArrayEquals(java.util.Arrays.copyOfRange(data, 70_000, 270_000),
          read(c, "k", 70_000, 200_000, true));
      // Past the end: what is there, as over TCP.
      assertThat(read(c, "k", 299_000, 5000, false)).hasSize(1000);
      LocalReadStats s = c.localReadStats();
      assertThat(s.on()).isTrue();
      assertThat(s.localReads()).isEqualTo(3);
      assertThat(s.localBytes()).isEqualTo(data.length + 200_000 + 1000);
      assertThat(s.fallbacks()).isZero();
      // Every grant was released: nothing stays pinned.
      awaitNoPins();
    }
  }

  /**
   * The node's answer to "where are your files" is asked when the client first connects,
   * not by its first read: a job that writes before it reads (TestDFSIO's read job writes
   * its control files) finds local reads set up when its timed reads start.
   */
  @Test
  void theFirstConnectionSetsUpLocalReadsBeforeAnyRead() throws Exception {
    byte[] data = random(100_000, 6);
    try (TyrClient c = client(true)) {
      put(c, "k", data);
      CompletableFuture<LocalIdentity> asked = c.localIdentityAsked();
      assertThat(asked).as("asked at the first connection").isNotNull();
      assertThat(asked.get(60, TimeUnit.SECONDS)).isNotNull(); // a loaded machine
      LocalReadStats before = c.localReadStats();
      assertThat(before).isEqualTo(new LocalReadStats(0, 0, 0, 0, true));
      assertArrayEquals(data, read(c, "k", 0, data.length, false));
      assertThat(c.localIdentityAsked()).isSameAs(asked); // asked once
      assertThat(c.localReadStats().localReads()).isEqualTo(1);
      awaitNoPins();
    }
  }

  @Test
  void offByConfigurationNeverAsksWhereTheFilesAre() throws IOException {
    try (TyrClient c = client(false)) {
      put(c, "k", random(10, 7));
      assertThat(c.localIdentityAsked()).isNull();
    }
  }

  @Test
  void offByConfigurationReadsOverTheConnection() throws IOException {
    byte[] data = random(100_000, 2);
    try (TyrClient c = client(false)) {
      put(c, "k", data);
      assertArrayEquals(data, read(c, "k", 0, data.length, false));
      assertThat(c.localReadStats()).isEqualTo(new LocalReadStats(0, 0, 0, 0, false));
    }
  }

  @Test
  void aClientThatDoesNotSeeTheNodesTokenStaysOnTheConnection() throws IOException {
    byte[] data = random(100_000, 3);
    // Before the client connects: its first connection asks where the files are.
    server.engine().localIdentity(); // the token exists; now another one is there
    Files.write(dir.resolve(LocalIdentity.FILE), random(32, 4));
    try (TyrClient c = client(true)) {
      put(c, "k", data);
      assertArrayEquals(data, read(c, "k", 0, data.length, false));
      assertThat(c.localReadStats()).isEqualTo(new LocalReadStats(0, 0, 0, 0, false));
    }
  }

  @Test
  void aLocalReadThatFailsFallsBackToTheConnection() throws IOException {
    byte[] data = random(100_000, 5);
    try (TyrClient c = client(true)) {
      put(c, "k", data);
      assertArrayEquals(java.util.Arrays.copyOf(data, 10), read(c, "k", 0, 10, false));
      assertThat(c.localReadStats().on()).isTrue();
      Path[] segments;
      try (Stream<Path> s = Files.list(dir)) {
        segments = s.filter(p -> p.toString().endsWith(".tyrlog")).toArray(Path[]::new);
      }
      // The node keeps its files open; only this client's open by name fails.
      for (Path p : segments) {
        Files.move(p, p.resolveSibling(p.getFileName() + ".away"));
      }
      byte[] got = read(c, "k", 0, data.length, false);
      for (Path p : segments) {
        Files.move(p.resolveSibling(p.getFileName() + ".away"), p);
      }
      assertArrayEquals(data, got);
      assertThat(c.localReadStats().fallbacks()).isEqualTo(1);
      assertThat(c.localReadStats().on()).isTrue(); // a missing file is not permanent
      awaitNoPins();
    }
  }

  /**
   * The client's budget of snapshot files: a snapshot that would pass it is not opened (null,
   * the caller reads without one), and a closed snapshot gives its files back.
   */
  @Test
  void snapshotsOverTheFileBudgetAreNotOpenedAndClosingGivesFilesBack() throws Exception {
    byte[] data = random(50_000, 8);
    try (TyrClient c = new TyrClient(ClientConfig.of("127.0.0.1", server.port())
        .withLocalReads(true).withLocalReadFds(2))) {
      for (String k : new String[] {"a", "b", "c"}) {
        put(c, k, data); // small: one segment file each
      }
      LocalSnapshot a = c.localSnapshot("a", data.length).get(60, TimeUnit.SECONDS);
      LocalSnapshot b = c.localSnapshot("b", data.length).get(60, TimeUnit.SECONDS);
      assertThat(a).isNotNull();
      assertThat(b).isNotNull();
      assertThat(c.localFdsHeld()).isEqualTo(2);
      assertThat(c.localSnapshot("c", data.length).get(60, TimeUnit.SECONDS))
          .as("a third file is over the budget of 2").isNull();
      assertThat(c.localReadStats().snapshotsRefused()).as("counted").isEqualTo(1);
      // Its reads go on without a snapshot, exactly.
      assertArrayEquals(data, read(c, "c", 0, data.length, false));
      a.close();
      assertThat(c.localFdsHeld()).isEqualTo(1);
      LocalSnapshot s = c.localSnapshot("c", data.length).get(60, TimeUnit.SECONDS);
      assertThat(s).as("a's files were given back").isNotNull();
      ByteBuffer dst = ByteBuffer.allocate(data.length);
      assertThat(s.read(0, dst).get(60, TimeUnit.SECONDS)).isEqualTo(data.length);
      assertArrayEquals(data, dst.array());
      b.close();
      s.close();
      s.close(); // idempotent: given back once
      assertThat(c.localFdsHeld()).isZero();
      awaitNoPins();
    }
  }

  /**
   * A snapshot closed while a read of it waits for a reader thread (a stream's close, or
   * FileReader evicting the stripe): the read still gets its bytes from the snapshot, and
   * the files close when it is done.
   */
  @Test
  void aReadAcceptedBeforeCloseFinishesFromTheSnapshot() throws Exception {
    byte[] data = random(200_000, 9);
    try (TyrClient c = client(true)) {
      put(c, "k", data);
      LocalSnapshot s = c.localSnapshot("k", data.length).get(60, TimeUnit.SECONDS);
      assertThat(s).isNotNull();
      java.util.concurrent.CountDownLatch hold = new java.util.concurrent.CountDownLatch(1);
      java.util.concurrent.ExecutorService readers = c.localReaders();
      for (int i = 0; i < 4; i++) { // every reader thread busy: the read below queues
        readers.execute(() -> {
          try {
            hold.await();
          } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
          }
        });
      }
      ByteBuffer dst = ByteBuffer.allocate(data.length);
      CompletableFuture<Integer> read = s.read(0, dst);
      s.close();
      assertThat(s.isClosed()).isTrue();
      assertThat(c.localFdsHeld()).as("held for the read in flight").isEqualTo(1);
      hold.countDown();
      assertThat(read.get(60, TimeUnit.SECONDS)).isEqualTo(data.length);
      assertArrayEquals(data, dst.array());
      assertThat(c.localFdsHeld()).as("given back once the read is done").isZero();
      assertClosedError(s.read(0, ByteBuffer.allocate(10)));
    }
  }

  /**
   * The client's close closes the snapshots it handed out (their files go back), and a
   * read after it, of a snapshot or of the client, is a failed future with the typed
   * "closed" error: never a RejectedExecutionException thrown at the caller.
   */
  @Test
  void closingTheClientClosesItsSnapshotsAndLaterReadsFailTyped() throws Exception {
    byte[] data = random(100_000, 10);
    TyrClient c = client(true);
    put(c, "k", data);
    LocalSnapshot s = c.localSnapshot("k", data.length).get(60, TimeUnit.SECONDS);
    assertThat(s).isNotNull();
    assertThat(c.localFdsHeld()).isEqualTo(1);
    c.close();
    assertThat(c.localFdsHeld()).as("files of the snapshot left open").isZero();
    assertThat(s.isClosed()).isTrue();
    assertClosedError(s.read(0, ByteBuffer.allocate(10)));
    assertClosedError(c.read("k", 0, ByteBuffer.allocate(10)));
    assertThat(c.localSnapshot("k", data.length).get(60, TimeUnit.SECONDS)).isNull();
    awaitNoPins();
  }

  /** A snapshot read within the idle time stays open; left unread, it is closed. */
  @Test
  void aSnapshotLeftUnreadIsClosedAndGivesItsFilesBack() throws Exception {
    byte[] data = random(100_000, 12);
    try (TyrClient c = new TyrClient(ClientConfig.of("127.0.0.1", server.port())
        .withLocalReads(true).withLocalReadIdle(Duration.ofSeconds(1)))) {
      put(c, "k", data);
      LocalSnapshot s = c.localSnapshot("k", data.length).get(60, TimeUnit.SECONDS);
      assertThat(s).isNotNull();
      for (int i = 0; i < 8; i++) { // 800 ms of reads every 100 ms: never idle
        ByteBuffer dst = ByteBuffer.allocate(data.length);
        assertThat(s.read(0, dst).get(60, TimeUnit.SECONDS)).isEqualTo(data.length);
        assertArrayEquals(data, dst.array());
        Thread.sleep(100);
      }
      assertThat(s.isClosed()).as("read every 100 ms").isFalse();
      long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
      while (!s.isClosed() && System.nanoTime() < deadline) {
        Thread.sleep(20);
      }
      assertThat(s.isClosed()).as("idle for 1 s").isTrue();
      assertThat(c.localFdsHeld()).isZero();
      assertClosedError(s.read(0, ByteBuffer.allocate(10)));
    }
  }

  /**
   * A snapshot dropped without close (a leaked stream) with the idle timeout 0 (never):
   * collected, it gives its files and its share of the budget back (the client tracks
   * snapshots weakly), so a spent budget comes back. From the review of tyr-localread3.
   */
  @Test
  void aDroppedSnapshotGivesItsBudgetBackAfterGc() throws Exception {
    try (TyrClient c = new TyrClient(ClientConfig.of("127.0.0.1", server.port())
        .withLocalReads(true).withLocalReadFds(1).withLocalReadIdle(Duration.ZERO))) {
      byte[] data = random(100_000, 13);
      put(c, "k", data);
      LocalSnapshot s = c.localSnapshot("k", data.length).get(60, TimeUnit.SECONDS);
      assertThat(s).isNotNull();
      assertThat(c.localFdsHeld()).isEqualTo(1);
      s = null; // dropped, as by a stream nobody closes
      for (int i = 0; i < 50 && c.localFdsHeld() > 0; i++) {
        System.gc();
        Thread.sleep(100);
      }
      assertThat(c.localFdsHeld()).as("fds of a dropped snapshot after GC").isZero();
      LocalSnapshot again = c.localSnapshot("k", data.length).get(60, TimeUnit.SECONDS);
      assertThat(again).as("a snapshot once the dropped one is collected").isNotNull();
      ByteBuffer dst = ByteBuffer.allocate(data.length);
      assertThat(again.read(0, dst).get(60, TimeUnit.SECONDS)).isEqualTo(data.length);
      assertArrayEquals(data, dst.array());
      again.close();
      assertThat(c.localFdsHeld()).isZero();
    }
  }

  /**
   * A server whose frame limit is below the client's: a snapshot longer than its grants
   * may be is refused without asking (no TOO_LARGE round trip counted as a fallback), and
   * one that fits is opened.
   */
  @Test
  void aSnapshotLongerThanTheServersGrantsIsNotAskedFor() throws Exception {
    Path small = dir.resolve("small");
    Files.createDirectories(small);
    try (TyrServer s1 = TyrServer.start(ServerConfig.local(new EngineConfig(small, 64 << 10,
        1 << 20, SyncPolicy.INTERVAL, Duration.ofMillis(20), 1024, 1L << 30, 64,
        Duration.ZERO, 0.5)).withMaxFrameBytes(1 << 20));
        TyrClient c = new TyrClient(ClientConfig.of("127.0.0.1", s1.port())
            .withLocalReads(true))) {
      byte[] data = random(100_000, 13);
      put(c, "k", data);
      assertThat(c.localSnapshot("k", 2 << 20).get(60, TimeUnit.SECONDS)).isNull();
      assertThat(c.localReadStats().fallbacks()).as("a TOO_LARGE round trip").isZero();
      LocalSnapshot fits = c.localSnapshot("k", data.length).get(60, TimeUnit.SECONDS);
      assertThat(fits).isNotNull();
      fits.close();
      assertThat(c.localReadStats().fallbacks()).isZero();
    }
  }

  /** The future fails with the typed "closed" error, UNAVAILABLE. */
  private static void assertClosedError(CompletableFuture<?> f) throws Exception {
    try {
      f.get(60, TimeUnit.SECONDS);
      throw new AssertionError("completed: " + f.join());
    } catch (java.util.concurrent.ExecutionException e) {
      assertThat(e.getCause()).isInstanceOf(io.blobfs.tyr.api.TyrException.class);
      assertThat(((io.blobfs.tyr.api.TyrException) e.getCause()).code())
          .isEqualTo(io.blobfs.tyr.api.ErrorCode.UNAVAILABLE);
    }
  }

  private void awaitNoPins() {
    LocalSnapshotCheck.awaitNoPins(server.engine());
  }

  /**
   * The snapshot under fire: writers replace the blob whole while the engine compacts,
   * and every local read must return one version, exactly the one it reports.
   */
  @Test
  void eachReadIsExactlyTheVersionItReportsUnderOverwriteAndCompaction() throws Exception {
    LocalSnapshotCheck.run(client(true), () -> server.engine().compact(), dir,
        Duration.ofSeconds(4));
  }
}
