import io.blobfs.tyr.api.TxOp;
import io.blobfs.tyr.api.TxRequest;
import io.blobfs.tyr.client.ClientConfig;
import io.blobfs.tyr.client.LocalSnapshot;
import io.blobfs.tyr.client.TyrClient;
import java.lang.management.ManagementFactory;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.Arrays;
import java.util.Comparator;
import java.util.Random;
import java.util.stream.Stream;

/**
 * Where one 4 MiB local read's time goes on a Týr server on this host, per chunk of a
 * 256 MiB read (4 blobs of 64 MiB, BlobFS's stripes), one chunk at a time, warm:
 * a local read as TyrClient.read does it (GRANT round trip, opens, pread, closes, RELEASE,
 * hand-offs), its parts measured alone (a STAT round trip for the grant's, a segment file's
 * open + close, a 4 MiB pread of it into a direct buffer), and a read from a snapshot of the
 * stripe (one grant per 64 MiB, files kept open: the stream's path since session 13).
 * Prints medians in microseconds and the process's CPU per 256 MiB both ways. Run on
 * blobfs-tyr's classpath (scripts/tyr-server.sh writes it):
 *   java -cp "blobfs-tyr/target/classes:$(cat blobfs-tyr/target/server-classpath.txt)" \
 *     scripts/perf/LocalReadProbe.java HOST:PORT DATA_DIR [ROUNDS]
 */
public class LocalReadProbe {
  static final int CHUNK = 4 << 20;
  static final int STRIPE = 64 << 20;
  static final int BLOBS = 4;

  public static void main(String[] args) throws Exception {
    String[] hp = args[0].split(":");
    Path data = Path.of(args[1]);
    int rounds = args.length > 2 ? Integer.parseInt(args[2]) : 5;
    try (TyrClient c = new TyrClient(
        ClientConfig.of(hp[0], Integer.parseInt(hp[1])).withLocalReads(true))) {
      byte[] content = new byte[STRIPE];
      new Random(1).nextBytes(content);
      for (int b = 0; b < BLOBS; b++) {
        TyrClient.await(c.commit(TxRequest.of(
            new TxOp.Put("probe/" + b, ByteBuffer.wrap(content), false))));
      }
      ByteBuffer dst = ByteBuffer.allocateDirect(CHUNK);
      int n = BLOBS * STRIPE / CHUNK;
      long[] local = new long[n * rounds];
      long[] snap = new long[n * rounds];
      long[] rtt = new long[n * rounds];
      long[] open = new long[n * rounds];
      long[] pread = new long[n * rounds];
      long[] snapOpen = new long[BLOBS * rounds];
      long cpuLocal = 0;
      long cpuSnap = 0;
      Path segment;
      try (Stream<Path> s = Files.list(data)) {
        segment = s.filter(p -> p.toString().endsWith(".tyrlog"))
            .max(Comparator.comparingLong(p -> p.toFile().length())).orElseThrow();
      }
      for (int r = -1; r < rounds; r++) { // round -1 warms the JIT and the page cache
        long cpu0 = cpu();
        for (int i = 0; i < n; i++) {
          long t = System.nanoTime();
          TyrClient.await(c.read("probe/" + (i * CHUNK / STRIPE), (long) i * CHUNK % STRIPE,
              dst.clear()));
          if (r >= 0) {
            local[r * n + i] = System.nanoTime() - t;
          }
        }
        long cpu1 = cpu();
        for (int b = 0; b < BLOBS; b++) {
          long t = System.nanoTime();
          LocalSnapshot s = TyrClient.await(c.localSnapshot("probe/" + b, STRIPE));
          if (s == null) {
            throw new IllegalStateException("no snapshot: " + c.localReadStats());
          }
          if (r >= 0) {
            snapOpen[r * BLOBS + b] = System.nanoTime() - t;
          }
          for (int i = 0; i < STRIPE / CHUNK; i++) {
            long u = System.nanoTime();
            s.read((long) i * CHUNK, dst.clear()).join();
            if (r >= 0) {
              snap[r * n + b * (STRIPE / CHUNK) + i] = System.nanoTime() - u;
            }
          }
          s.close();
        }
        long cpu2 = cpu();
        if (r >= 0) {
          cpuLocal += cpu1 - cpu0;
          cpuSnap += cpu2 - cpu1;
        }
        try (FileChannel ch = FileChannel.open(segment, StandardOpenOption.READ)) {
          long size = ch.size();
          for (int i = 0; i < n; i++) {
            long t = System.nanoTime();
            TyrClient.await(c.stat("probe/0"));
            long u = System.nanoTime();
            FileChannel.open(segment, StandardOpenOption.READ).close();
            long v = System.nanoTime();
            dst.clear();
            long at = ((long) i * CHUNK) % Math.max(1, size - CHUNK);
            while (dst.hasRemaining() && ch.read(dst, at + dst.position()) > 0) {
              // a positional read, as a local read's
            }
            long w = System.nanoTime();
            if (r >= 0) {
              rtt[r * n + i] = u - t;
              open[r * n + i] = v - u;
              pread[r * n + i] = w - v;
            }
          }
        }
      }
      System.out.printf("per 4 MiB chunk, median us (p90), %d chunks x %d rounds:%n", n, rounds);
      print("local read (grant, opens, pread, release)", local);
      print("  a STAT round trip (the grant's)", rtt);
      print("  segment open + close", open);
      print("  pread 4 MiB into a direct buffer", pread);
      print("snapshot read (pread on a reader thread)", snap);
      print("snapshot open (grant 64 MiB, opens, release), per stripe", snapOpen);
      System.out.printf("process CPU per 256 MiB: local reads %d ms, snapshot %d ms%n",
          cpuLocal / rounds / 1_000_000, cpuSnap / rounds / 1_000_000);
      for (int b = 0; b < BLOBS; b++) {
        TyrClient.await(c.commit(TxRequest.of(new TxOp.Delete("probe/" + b, false))));
      }
    }
  }

  static void print(String what, long[] ns) {
    long[] s = ns.clone();
    Arrays.sort(s);
    System.out.printf("  %-60s %8d (%d)%n", what, s[s.length / 2] / 1000,
        s[s.length * 9 / 10] / 1000);
  }

  static long cpu() {
    return ((com.sun.management.OperatingSystemMXBean)
        ManagementFactory.getOperatingSystemMXBean()).getProcessCpuTime();
  }
}
