package io.blobfs.tyr.client;

import static org.assertj.core.api.Assertions.assertThat;

import io.blobfs.tyr.api.TxOp;
import io.blobfs.tyr.api.TxRequest;
import io.blobfs.tyr.engine.EngineConfig;
import io.blobfs.tyr.server.ServerConfig;
import io.blobfs.tyr.server.TyrServer;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Where a stripe's snapshot open goes (issue 11): times 100 opens and closes of a 64 MiB
 * blob's snapshot on a default node (1 GiB segments, 1 MiB chunks), and beside it a
 * round trip of the same size (a stat), a one-byte local read (grant, open, read, close,
 * release) and opening the segment files by themselves. A measurement, not a check:
 * runs only with {@code -Dtyr.timing=true}; prints the medians and 90th percentiles.
 */
class SnapshotOpenTiming {
  private static final int N = Integer.getInteger("tyr.timing.n", 100);
  @TempDir
  Path dir;

  @Test
  void timeSnapshotOpens() throws Exception {
    Assumptions.assumeTrue(Boolean.getBoolean("tyr.timing"), "-Dtyr.timing=true");
    try (TyrServer server = TyrServer.start(ServerConfig.local(EngineConfig.defaults(dir)));
        TyrClient c = new TyrClient(ClientConfig.of("127.0.0.1", server.port())
            .withLocalReads(true))) {
      int stripe = 64 << 20;
      ByteBuffer data = ByteBuffer.allocate(stripe);
      TyrClient.await(c.commit(TxRequest.of(new TxOp.Put("stripe", data, false))));
      for (int i = 0; i < 20; i++) { // warm up every path
        c.localSnapshot("stripe", stripe).get(60, TimeUnit.SECONDS).close();
        TyrClient.await(c.stat("stripe"));
        TyrClient.await(c.read("stripe", 0, ByteBuffer.allocate(1)));
      }
      long[] open = new long[N];
      long[] stat = new long[N];
      long[] read1 = new long[N];
      long[] files = new long[N];
      long[] engineGrant = new long[N];
      List<Path> segments;
      try (Stream<Path> s = Files.list(dir)) {
        segments = s.filter(p -> p.toString().endsWith(".tyrlog")).toList();
      }
      for (int i = 0; i < N; i++) {
        long t0 = System.nanoTime();
        LocalSnapshot s = c.localSnapshot("stripe", stripe).get(60, TimeUnit.SECONDS);
        long t1 = System.nanoTime();
        assertThat(s).isNotNull();
        s.close();
        open[i] = t1 - t0;
        t0 = System.nanoTime();
        TyrClient.await(c.stat("stripe"));
        stat[i] = System.nanoTime() - t0;
        t0 = System.nanoTime();
        TyrClient.await(c.read("stripe", 0, ByteBuffer.allocate(1)));
        read1[i] = System.nanoTime() - t0;
        t0 = System.nanoTime();
        for (Path p : segments) {
          try (FileChannel ch = FileChannel.open(p, StandardOpenOption.READ)) {
            ch.size();
          }
        }
        files[i] = System.nanoTime() - t0;
        t0 = System.nanoTime();
        server.engine().release(server.engine().grant("stripe", 0, stripe,
            java.time.Duration.ofSeconds(60)).id());
        engineGrant[i] = System.nanoTime() - t0;
      }
      System.out.printf("snapshot open of 64 MiB (%d segment files): %s%n", segments.size(),
          summary(open));
      System.out.printf("stat round trip: %s%n", summary(stat));
      System.out.printf("1-byte local read (grant+open+read+release): %s%n", summary(read1));
      System.out.printf("opening the segment files alone: %s%n", summary(files));
      System.out.printf("the node's grant and release alone (no I/O): %s%n",
          summary(engineGrant));
    }
  }

  private static String summary(long[] ns) {
    long[] s = ns.clone();
    Arrays.sort(s);
    return String.format("median %.3f ms, p90 %.3f ms, min %.3f ms", s[s.length / 2] / 1e6,
        s[s.length * 9 / 10] / 1e6, s[0] / 1e6);
  }
}
