package io.blobfs.tyr.blobfs;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;

import io.blobfs.tyr.engine.EngineConfig;
import io.blobfs.tyr.engine.SyncPolicy;
import io.blobfs.tyr.server.ServerConfig;
import io.blobfs.tyr.server.TyrServer;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Random;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.stream.Stream;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FSDataInputStream;
import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.fs.FileSystem;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * blob:// streams on a Týr server with local reads: each stripe is read from one grant
 * whose files the stream keeps open (a snapshot), released at once, so neither the lease
 * nor compaction nor the file's overwrite changes the bytes a stream reads.
 */
class TyrStreamSnapshotTest {
  @TempDir
  Path dir;
  private TyrServer server;

  @BeforeEach
  void start() throws Exception {
    // 1 MiB segments: compaction deletes segments after every few overwrites.
    server = TyrServer.start(ServerConfig.local(new EngineConfig(dir, 64 << 10, 1 << 20,
        SyncPolicy.INTERVAL, Duration.ofMillis(20), 1024, 1L << 30, 64, Duration.ZERO, 0.5)));
  }

  @AfterEach
  void stop() throws Exception {
    server.close();
  }

  private FileSystem fs(String stripe) throws Exception {
    Configuration c = new Configuration();
    c.set("fs.blob.impl", "io.blobfs.hadoop.BlobFileSystem");
    String p = "fs.blob.store.loc.";
    c.set(p + "type", "tyr");
    c.set(p + "address", "127.0.0.1:" + server.port());
    c.set(p + "stripe.size", stripe);
    c.set(p + "read.buffer.size", "1m");
    c.set(p + "read.ahead", "4m");
    return FileSystem.newInstance(URI.create("blob://loc/"), c);
  }

  private static byte[] random(int n, long seed) {
    byte[] b = new byte[n];
    new Random(seed).nextBytes(b);
    return b;
  }

  private static void write(FileSystem fs, org.apache.hadoop.fs.Path f, byte[] data)
      throws Exception {
    try (FSDataOutputStream out = fs.create(f, true)) {
      out.write(data);
    }
  }

  private static int readSome(FSDataInputStream in, byte[] back, int pos, int n)
      throws Exception {
    int end = Math.min(back.length, pos + n);
    while (pos < end) {
      int k = in.read(back, pos, Math.min(1_000_000, end - pos));
      if (k < 0) {
        break;
      }
      pos += k;
    }
    return pos;
  }

  private void awaitNoPins() {
    io.blobfs.tyr.client.LocalSnapshotCheck.awaitNoPins(server.engine());
  }

  /**
   * One grant per stripe, not per read-ahead chunk (1 MiB here, 4 MiB by default), and
   * no pin held while the stream reads on: the lease does not bound a stream's life.
   */
  @Test
  void aStreamReadsEachStripeFromOneGrantAndHoldsNoPin() throws Exception {
    byte[] data = random((12 << 20) + 12_345, 1); // 5 stripes of 3 MiB, the last short
    try (FileSystem fs = fs("3m")) {
      org.apache.hadoop.fs.Path f = new org.apache.hadoop.fs.Path("/d/f");
      write(fs, f, data);
      byte[] back = new byte[data.length];
      long before = server.engine().grantsMade();
      try (FSDataInputStream in = fs.open(f)) {
        int pos = readSome(in, back, 0, 5 << 20);
        awaitNoPins(); // mid-stream, snapshots open: released at once
        pos = readSome(in, back, pos, data.length);
        assertThat(pos).isEqualTo(data.length);
        assertThat(in.read(back, 0, 1)).isEqualTo(-1);
      }
      assertArrayEquals(data, back);
      assertThat(server.engine().grantsMade() - before).as("grants for 5 stripes")
          .isEqualTo(5);
      awaitNoPins();
    }
  }

  /**
   * A stream that has started reading a file keeps reading that file's bytes while the
   * file is overwritten (its data blobs deleted) again and again and compaction, running
   * throughout, deletes the segments that held them: its stripe's files are open.
   */
  @Test
  void aStreamKeepsItsBytesAcrossOverwritesAndCompaction() throws Exception {
    byte[] data = random(6 << 20, 2);
    AtomicBoolean stop = new AtomicBoolean();
    AtomicLong segmentsDeleted = new AtomicLong();
    Thread compactor = new Thread(() -> {
      while (!stop.get()) {
        try {
          segmentsDeleted.addAndGet(server.engine().compact().segmentsDeleted());
          Thread.sleep(20);
        } catch (Exception e) {
          return;
        }
      }
    });
    try (FileSystem fs = fs("8m")) { // one stripe: one snapshot holds the whole file
      org.apache.hadoop.fs.Path f = new org.apache.hadoop.fs.Path("/d/f");
      write(fs, f, data);
      List<Path> segmentsOfData = segments();
      compactor.start();
      byte[] back = new byte[data.length];
      try (FSDataInputStream in = fs.open(f)) {
        int pos = readSome(in, back, 0, 1_000_000);
        for (int g = 0; g < 6; g++) {
          write(fs, f, random(6 << 20, 100 + g)); // replaces the file: its blobs deleted
        }
        // The head segment (and one with keys still live) may stay; the sealed ones that
        // held only the file's bytes and records go.
        long deadline = System.nanoTime() + Duration.ofSeconds(20).toNanos();
        while (segmentsOfData.stream().filter(Files::exists).count() > 1
            && System.nanoTime() < deadline) {
          Thread.sleep(20);
        }
        assertThat(segmentsOfData.stream().filter(p -> !Files.exists(p)).count())
            .as("segments that held the file, deleted").isGreaterThanOrEqualTo(
                segmentsOfData.size() / 2);
        awaitNoPins();
        pos = readSome(in, back, pos, data.length);
        assertThat(pos).isEqualTo(data.length);
      } finally {
        stop.set(true);
        compactor.join();
      }
      assertArrayEquals(data, back);
      assertThat(segmentsDeleted.get()).isPositive();
    }
  }

  /** Files the client cannot open: the stream reads over the connection, bytes right. */
  @Test
  void aStreamWhoseFilesCannotBeOpenedReadsOverTheConnection() throws Exception {
    byte[] data = random(7 << 20, 3);
    try (FileSystem fs = fs("3m")) {
      org.apache.hadoop.fs.Path f = new org.apache.hadoop.fs.Path("/d/f");
      write(fs, f, data);
      List<Path> segments = segments();
      // The node keeps its files open; only this client's opens by name fail.
      for (Path p : segments) {
        Files.move(p, p.resolveSibling(p.getFileName() + ".away"));
      }
      byte[] back = new byte[data.length];
      try (FSDataInputStream in = fs.open(f)) {
        assertThat(readSome(in, back, 0, data.length)).isEqualTo(data.length);
      } finally {
        for (Path p : segments) {
          Files.move(p.resolveSibling(p.getFileName() + ".away"), p);
        }
      }
      assertArrayEquals(data, back);
      awaitNoPins();
    }
  }

  private List<Path> segments() throws Exception {
    try (Stream<Path> s = Files.list(dir)) {
      return s.filter(p -> p.toString().endsWith(".tyrlog")).toList();
    }
  }
}
