package io.blobfs.tyr.blobfs;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import io.blobfs.tyr.engine.EngineConfig;
import io.blobfs.tyr.engine.SyncPolicy;
import io.blobfs.tyr.server.ServerConfig;
import io.blobfs.tyr.server.TyrServer;
import java.io.FileNotFoundException;
import java.io.IOException;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
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
 * nor compaction nor the file's overwrite changes the bytes a stream reads; and the file
 * descriptors the snapshots hold (from the review of tyr-localread2): freed at close, also
 * by a positioned read racing the close, with exact bytes under eviction, unbuffer,
 * overwrite and compaction.
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
    return fs(stripe, "1m", "4m");
  }

  /** Small read buffers and read-ahead: many stripes and snapshots per stream. */
  private FileSystem fdFs(String stripe) throws Exception {
    return fs(stripe, "256k", "1m");
  }

  private FileSystem fs(String stripe, String readBuffer, String readAhead) throws Exception {
    return fs(stripe, readBuffer, readAhead, null);
  }

  private FileSystem fs(String stripe, String readBuffer, String readAhead, String idle)
      throws Exception {
    return fs(stripe, readBuffer, readAhead, idle, null);
  }

  private FileSystem fs(String stripe, String readBuffer, String readAhead, String idle,
      String maxFds) throws Exception {
    Configuration c = new Configuration();
    if (idle != null) {
      c.set("fs.blob.store.loc.local-reads.idle-timeout", idle);
    }
    if (maxFds != null) {
      c.set("fs.blob.store.loc.local-reads.max-fds", maxFds);
    }
    c.set("fs.blob.impl", "io.blobfs.hadoop.BlobFileSystem");
    String p = "fs.blob.store.loc.";
    c.set(p + "type", "tyr");
    c.set(p + "address", "127.0.0.1:" + server.port());
    c.set(p + "stripe.size", stripe);
    c.set(p + "read.buffer.size", readBuffer);
    c.set(p + "read.ahead", readAhead);
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
   * With the client's default frame limit (max-op-bytes 16 MiB + 1 MiB) a stripe larger
   * than that frame is still read from one grant: a grant's answer names pieces of files,
   * not bytes, so the client's frame says nothing of the range it may grant. Before, a
   * client refused to ask for a snapshot of any stripe over its frame, so with every
   * default (64 MiB stripes) each read-ahead chunk and each random read took a grant of
   * its own (the FUSE mount's random 8 KiB reads: a grant, opens and a release each).
   */
  @Test
  void aStripeLargerThanTheClientsFrameIsReadFromOneGrant() throws Exception {
    byte[] data = random((40 << 20) + 4_321, 17); // 2 stripes of 20 MiB, and a short one
    try (FileSystem fs = fs("20m")) {
      org.apache.hadoop.fs.Path f = new org.apache.hadoop.fs.Path("/d/large-stripes");
      write(fs, f, data);
      byte[] back = new byte[data.length];
      long before = server.engine().grantsMade();
      try (FSDataInputStream in = fs.open(f)) {
        assertThat(readSome(in, back, 0, data.length)).isEqualTo(data.length);
      }
      assertArrayEquals(data, back);
      assertThat(server.engine().grantsMade() - before).as("grants for 3 stripes")
          .isEqualTo(3);
      awaitNoPins();
    }
  }

  /**
   * A snapshot nobody reads for local-reads.idle-timeout is closed (a stream left open
   * holds no segment for ever), and the stream's next read of that stripe opens another:
   * one new grant for the stripe, not one per read.
   */
  @Test
  void anIdleSnapshotIsClosedAndTheNextReadOpensAnother() throws Exception {
    byte[] data = random(2 << 20, 11);
    try (FileSystem fs = fs("1m", "256k", "1m", "1s")) {
      org.apache.hadoop.fs.Path f = new org.apache.hadoop.fs.Path("/d/idle");
      write(fs, f, data);
      try (FSDataInputStream in = fs.open(f)) {
        long before = server.engine().grantsMade();
        byte[] b = new byte[1000];
        for (int pos : new int[] {0, 1000, 2000}) {
          in.readFully(pos, b);
          assertArrayEquals(Arrays.copyOfRange(data, pos, pos + 1000), b);
        }
        assertThat(server.engine().grantsMade() - before).as("one snapshot").isEqualTo(1);
        Thread.sleep(2500); // the timeout and the sweep (every 250 ms) twice over
        for (int pos : new int[] {3000, 4000, 5000}) {
          in.readFully(pos, b);
          assertArrayEquals(Arrays.copyOfRange(data, pos, pos + 1000), b);
        }
        assertThat(server.engine().grantsMade() - before)
            .as("the idle snapshot closed, one new one for the next reads").isEqualTo(2);
      }
      awaitNoPins();
    }
  }

  /**
   * A stripe whose snapshot was refused for the budget (another stream held it) is asked
   * again once the retry interval has passed: with the budget free again, its later reads
   * share one new snapshot instead of a grant each for the stream's life. From the review
   * of tyr-localread3.
   */
  @Test
  void aStripeRefusedForBudgetGetsASnapshotOnceTheBudgetIsFree() throws Exception {
    byte[] data = random((1 << 20) - 1, 5);
    try (FileSystem fs = fs("1m", "64k", "64k", null, "1")) {
      org.apache.hadoop.fs.Path f1 = new org.apache.hadoop.fs.Path("/d/a");
      org.apache.hadoop.fs.Path f2 = new org.apache.hadoop.fs.Path("/d/b");
      write(fs, f1, data);
      write(fs, f2, data);
      byte[] b = new byte[1000];
      try (FSDataInputStream in2 = fs.open(f2)) {
        try (FSDataInputStream in1 = fs.open(f1)) {
          in1.readFully(0, b); // A's snapshot: the whole budget of 1 file
          long before = server.engine().grantsMade();
          in2.readFully(0, b); // B: over budget, no snapshot (no grant asked for it)
          in2.readFully(90_000, b);
          assertThat(server.engine().grantsMade() - before)
              .as("B's reads without a snapshot: a grant each").isEqualTo(2);
        }
        // A closed: the budget is free again; past FileReader's retry interval (1 s).
        Thread.sleep(1200);
        long before = server.engine().grantsMade();
        for (int i = 1; i <= 10; i++) {
          int pos = i * 90_000;
          in2.readFully(pos, b);
          assertArrayEquals(Arrays.copyOfRange(data, pos, pos + 1000), b);
        }
        assertThat(server.engine().grantsMade() - before)
            .as("grants for 10 preads of one stripe once the budget is free").isEqualTo(1);
      }
      awaitNoPins();
    }
  }

  /**
   * One pread spanning 8 stripes with 4 snapshots held: the 5th..8th evict the 1st..4th
   * while they may still be opening, and no read falls back (one grant per stripe, exact
   * bytes), 3 rounds. From the review of tyr-localread3.
   */
  @Test
  void aPreadSpanningMoreThanFourStripesTakesOneGrantPerStripe() throws Exception {
    byte[] data = random(8 << 20, 6);
    try (FileSystem fs = fs("1m", "1m", "8m")) {
      org.apache.hadoop.fs.Path f = new org.apache.hadoop.fs.Path("/d/wide");
      write(fs, f, data);
      for (int round = 0; round < 3; round++) {
        try (FSDataInputStream in = fs.open(f)) {
          byte[] back = new byte[data.length];
          long before = server.engine().grantsMade();
          in.readFully(0, back);
          assertArrayEquals(data, back);
          assertThat(server.engine().grantsMade() - before)
              .as("grants for one pread of 8 stripes, round " + round).isEqualTo(8);
        }
      }
    }
  }

  /**
   * local-reads.idle-timeout: any zero ("0s", "0ms") means never, like "0"; a huge value
   * is practically never, not an overflow when the client starts.
   */
  @Test
  void anIdleTimeoutOfZeroWithAUnitOrHugeIsAccepted() throws Exception {
    byte[] data = random(100_000, 14);
    for (String idle : new String[] {"0", "0s", "0ms", "200000d"}) {
      try (FileSystem fs = fs("1m", "64k", "64k", idle)) {
        org.apache.hadoop.fs.Path f = new org.apache.hadoop.fs.Path("/d/idle-" + idle);
        write(fs, f, data);
        try (FSDataInputStream in = fs.open(f)) {
          byte[] back = new byte[data.length];
          in.readFully(0, back);
          assertArrayEquals(data, back, "idle-timeout " + idle);
        }
      }
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

  /** Open fds of this process on the node's segment files: all, and deleted ones. */
  private long[] segmentFds() throws IOException {
    long all = 0;
    long deleted = 0;
    try (Stream<Path> s = Files.list(Path.of("/proc/self/fd"))) {
      for (Path fd : s.toList()) {
        String t;
        try {
          t = Files.readSymbolicLink(fd).toString();
        } catch (IOException e) {
          continue;
        }
        if (t.startsWith(dir.toString()) && t.contains(".tyrlog")) {
          all++;
          if (t.endsWith("(deleted)")) {
            deleted++;
          }
        }
      }
    }
    return new long[] {all, deleted};
  }

  @Test
  void closeFreesEverySnapshotFd() throws Exception {
    byte[] data = random(8 << 20, 1);
    try (FileSystem fs = fdFs("1m")) {
      org.apache.hadoop.fs.Path f = new org.apache.hadoop.fs.Path("/d/f");
      write(fs, f, data);
      long base = segmentFds()[0];
      FSDataInputStream in = fs.open(f);
      byte[] buf = new byte[1 << 20];
      for (long pos = 0; pos < data.length; pos += buf.length) {
        in.readFully(pos, buf);
        assertThat(Arrays.equals(buf, 0, buf.length, data, (int) pos, (int) pos + buf.length))
            .isTrue();
      }
      assertThat(segmentFds()[0]).as("segment fds the open stream's snapshots hold")
          .isGreaterThan(base);
      for (int g = 0; g < 4; g++) {
        write(fs, f, random(8 << 20, 10 + g));
      }
      for (int i = 0; i < 5; i++) {
        server.engine().compact();
      }
      in.close();
      long[] after = segmentFds();
      assertThat(after[1]).as("deleted segments still open after close").isZero();
    }
  }

  /** Concurrent preads over 16 stripes (eviction) with unbuffer racing: bytes exact. */
  @Test
  void concurrentPreadsWithEvictionAndUnbufferServeExactBytes() throws Exception {
    byte[] data = random(16 << 18, 2); // 16 stripes of 256 KiB
    try (FileSystem fs = fdFs("256k")) {
      org.apache.hadoop.fs.Path f = new org.apache.hadoop.fs.Path("/d/f");
      write(fs, f, data);
      long base = segmentFds()[0];
      AtomicBoolean stop = new AtomicBoolean();
      AtomicReference<Throwable> failure = new AtomicReference<>();
      AtomicLong reads = new AtomicLong();
      FSDataInputStream in = fs.open(f);
      List<Thread> threads = preadThreads(in, data, 6, 0, 700 << 10, stop, failure, reads, null);
      threads.add(new Thread(() -> {
        while (!stop.get()) {
          in.unbuffer();
          Thread.onSpinWait();
          try {
            Thread.sleep(0, 200_000);
          } catch (InterruptedException e) {
            return;
          }
        }
      }));
      threads.forEach(Thread::start);
      Thread.sleep(6000);
      stop.set(true);
      for (Thread t : threads) {
        t.join();
      }
      if (failure.get() != null) {
        throw new AssertionError(failure.get());
      }
      assertThat(reads.get()).as("positioned reads made").isPositive();
      in.close();
      assertThat(segmentFds()[0]).as("segment fds left open after close").isEqualTo(base);
    }
  }

  /** A pread racing close() may open a snapshot after close cleared them: never freed. */
  @Test
  void preadRacingCloseLeaksNoFd() throws Exception {
    byte[] data = random(4 << 20, 3);
    try (FileSystem fs = fdFs("1m")) {
      org.apache.hadoop.fs.Path f = new org.apache.hadoop.fs.Path("/d/f");
      write(fs, f, data);
      long base = segmentFds()[0];
      for (int i = 0; i < 300; i++) {
        FSDataInputStream in = fs.open(f);
        AtomicBoolean go = new AtomicBoolean(true);
        Thread reader = new Thread(() -> {
          byte[] b = new byte[4096];
          Random r = new Random();
          while (go.get()) {
            try {
              in.readFully(r.nextInt(4) * (1L << 20), b);
            } catch (IOException e) {
              return; // closed
            }
          }
        });
        reader.start();
        Thread.sleep(0, 100_000 + (i % 10) * 50_000);
        in.close();
        go.set(false);
        reader.join();
      }
      long[] after = segmentFds();
      assertThat(after[0]).as("segment fds left open by closed streams").isEqualTo(base);
    }
  }

  /** Preads over 16 stripes with unbuffer, while the file is overwritten and compacted. */
  @Test
  void preadsDuringOverwriteAndCompactionAreExactOrFileNotFound() throws Exception {
    byte[] data = random(16 << 18, 4);
    try (FileSystem fs = fdFs("256k")) {
      org.apache.hadoop.fs.Path f = new org.apache.hadoop.fs.Path("/d/f");
      write(fs, f, data);
      AtomicBoolean stop = new AtomicBoolean();
      AtomicReference<Throwable> failure = new AtomicReference<>();
      AtomicLong reads = new AtomicLong();
      AtomicLong notFound = new AtomicLong();
      FSDataInputStream in = fs.open(f);
      List<Thread> threads =
          preadThreads(in, data, 4, 100, 600 << 10, stop, failure, reads, notFound);
      threads.add(new Thread(() -> {
        int g = 0;
        while (!stop.get()) {
          try {
            in.unbuffer();
            write(fs, f, random(16 << 18, 1000 + g++));
            server.engine().compact();
          } catch (Exception e) {
            failure.compareAndSet(null, e);
            return;
          }
        }
      }));
      threads.forEach(Thread::start);
      Thread.sleep(8000);
      stop.set(true);
      for (Thread t : threads) {
        t.join();
      }
      in.close();
      if (failure.get() != null) {
        throw new AssertionError(failure.get());
      }
      assertThat(reads.get() + notFound.get()).as("positioned reads made").isPositive();
    }
  }

  /**
   * {@code count} threads reading random ranges of {@code data} from {@code in} until
   * {@code stop}: wrong bytes or an error go to {@code failure}, except a
   * FileNotFoundException where {@code notFound} counts them (null: it is a failure too).
   */
  private static List<Thread> preadThreads(FSDataInputStream in, byte[] data, int count,
      long seedBase, int maxLength, AtomicBoolean stop, AtomicReference<Throwable> failure,
      AtomicLong reads, AtomicLong notFound) {
    List<Thread> threads = new ArrayList<>();
    for (int t = 0; t < count; t++) {
      long seed = seedBase + t;
      threads.add(new Thread(() -> {
        Random r = new Random(seed);
        byte[] buf = new byte[maxLength];
        while (!stop.get() && failure.get() == null) {
          int len = 1 + r.nextInt(buf.length);
          long pos = r.nextInt(data.length - len);
          try {
            in.readFully(pos, buf, 0, len);
            if (!Arrays.equals(buf, 0, len, data, (int) pos, (int) pos + len)) {
              failure.set(new AssertionError("wrong bytes at " + pos + " len " + len));
            }
            reads.incrementAndGet();
          } catch (FileNotFoundException e) {
            if (notFound == null) {
              failure.set(e);
            } else {
              notFound.incrementAndGet();
            }
          } catch (Throwable e) {
            failure.set(e);
          }
        }
      }));
    }
    return threads;
  }
}
