package io.blobfs.bench.tyr;

import io.blobfs.tyr.cluster.Hosts;
import io.blobfs.tyr.cluster.TyrProcessCluster;
import java.io.IOException;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.zip.CRC32;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FSDataInputStream;
import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.fs.FileSystem;

/**
 * Issue 13's cluster benchmark: aggregate throughput of 4 concurrent blob:// streams (each
 * writing, then reading back, one file of SIZE bytes, striped by 4 MiB over the ring) on
 * three Týr clusters running side by side on the hosts of {@code scripts/hosts/hosts.sh}:
 * one node (R = 1), three nodes (R = 1) and three nodes (R = 2, primary-backup). Every round
 * runs the three in a turning order, so that noise on this shared machine hits them alike;
 * each read is checked (CRC of every stream against what was written). Prints and writes
 * (as Markdown) the median and spread per configuration, the ratios 3 nodes / 1 node and
 * R = 2 / R = 1 (the cost of replication), and the load average before every round.
 *
 * <p>Every process (the client and the seven servers) shares this machine's cores and
 * disk: the ratios say what the cluster's code costs or gains here, not what three real
 * hosts would give. Usage: {@code TyrClusterThroughputReport SIZE ROUNDS REPORT_DIR WORK_DIR}
 * (run by {@code scripts/bench-tyr-cluster.sh}).
 */
public final class TyrClusterThroughputReport {
  private static final int STREAMS = 4;
  private static final int IO = 1 << 20;
  private static final String STRIPE = "4m";

  private record Config(String name, int nodes, int replication) {}

  private record Measure(double writeMbps, double readMbps) {}

  private static final List<Config> CONFIGS = List.of(new Config("1 node, R = 1", 1, 1),
      new Config("3 nodes, R = 1", 3, 1), new Config("3 nodes, R = 2", 3, 2));

  private TyrClusterThroughputReport() {}

  public static void main(String[] args) throws Exception {
    long size = parseBytes(args.length > 0 ? args[0] : "64m");
    int rounds = Integer.parseInt(args.length > 1 ? args[1] : "5");
    Path reports = Path.of(args.length > 2 ? args[2] : "benchmarks/reports");
    Path work = Path.of(args.length > 3 ? args[3] : "benchmarks/jmh/target/tyr-cluster-bench");
    Files.createDirectories(work);
    Hosts hosts = Hosts.up(3);
    Map<Config, TyrProcessCluster> clusters = new LinkedHashMap<>();
    Map<Config, FileSystem> fileSystems = new LinkedHashMap<>();
    Map<Config, List<Measure>> results = new LinkedHashMap<>();
    List<String> loads = new ArrayList<>();
    Instant started = Instant.now();
    try {
      for (Config c : CONFIGS) {
        Path dir = Files.createDirectories(work.resolve(c.nodes() + "n-r" + c.replication()));
        TyrProcessCluster cluster = TyrProcessCluster.startOn(hosts, dir, c.nodes(), 128,
            c.replication());
        clusters.put(c, cluster);
        fileSystems.put(c, open(c, cluster));
        results.put(c, new ArrayList<>());
      }
      System.out.printf(Locale.ROOT, "%d streams x %s each, %d rounds, hosts: %s%n", STREAMS,
          human(size), rounds, hosts.namespaces() ? "network namespaces" : "loopback");
      for (int r = 0; r < rounds; r++) {
        String load = loadAverage();
        loads.add(load);
        for (int k = 0; k < CONFIGS.size(); k++) {
          Config c = CONFIGS.get((r + k) % CONFIGS.size()); // turning order
          Measure m = measure(fileSystems.get(c), size, r);
          results.get(c).add(m);
          System.out.printf(Locale.ROOT, "round %d  %-15s write %7.1f MB/s  read %7.1f MB/s"
              + "  (load %s)%n", r + 1, c.name(), m.writeMbps(), m.readMbps(), load);
        }
      }
    } finally {
      for (FileSystem fs : fileSystems.values()) {
        fs.close();
      }
      for (TyrProcessCluster c : clusters.values()) {
        c.close();
      }
    }
    String report = report(results, size, rounds, loads, loadAverage(), started,
        hosts.namespaces());
    System.out.println(report);
    Files.createDirectories(reports);
    Files.writeString(reports.resolve("tyr-cluster-throughput.md"), report);
  }

  private static FileSystem open(Config c, TyrProcessCluster cluster) throws IOException {
    String store = "bench" + c.nodes() + "r" + c.replication();
    Configuration conf = new Configuration();
    conf.set("fs.blob.impl", "io.blobfs.hadoop.BlobFileSystem");
    conf.set("fs.blob.store." + store + ".type", "tyr");
    conf.set("fs.blob.store." + store + ".nodes", cluster.nodesOption());
    conf.set("fs.blob.store." + store + ".stripe.size", STRIPE);
    return FileSystem.newInstance(URI.create("blob://" + store + "/"), conf);
  }

  /** STREAMS files written at once, then read at once; each phase's bytes over its wall time. */
  private static Measure measure(FileSystem fs, long size, int round) throws Exception {
    org.apache.hadoop.fs.Path dir = new org.apache.hadoop.fs.Path("/bench-r" + round);
    ExecutorService pool = Executors.newFixedThreadPool(STREAMS);
    try {
      long t0 = System.nanoTime();
      List<Future<Long>> writes = new ArrayList<>();
      for (int s = 0; s < STREAMS; s++) {
        org.apache.hadoop.fs.Path file = new org.apache.hadoop.fs.Path(dir, "stream-" + s);
        long seed = round * 31L + s;
        writes.add(pool.submit(() -> write(fs, file, size, seed)));
      }
      List<Long> written = new ArrayList<>();
      for (Future<Long> f : writes) {
        written.add(f.get());
      }
      double writeSeconds = (System.nanoTime() - t0) / 1e9;
      long t1 = System.nanoTime();
      List<Future<Long>> reads = new ArrayList<>();
      for (int s = 0; s < STREAMS; s++) {
        org.apache.hadoop.fs.Path file = new org.apache.hadoop.fs.Path(dir, "stream-" + s);
        reads.add(pool.submit(() -> read(fs, file, size)));
      }
      for (int s = 0; s < STREAMS; s++) {
        long crc = reads.get(s).get();
        if (crc != written.get(s)) {
          throw new IOException("stream " + s + " read back other bytes than it wrote");
        }
      }
      double readSeconds = (System.nanoTime() - t1) / 1e9;
      fs.delete(dir, true);
      double mb = STREAMS * size / 1e6;
      return new Measure(mb / writeSeconds, mb / readSeconds);
    } finally {
      pool.shutdownNow();
    }
  }

  /** Writes SIZE pseudo-random bytes in 1 MiB calls; returns their CRC-32. */
  private static long write(FileSystem fs, org.apache.hadoop.fs.Path file, long size,
      long seed) throws IOException {
    byte[] buf = new byte[IO];
    java.util.SplittableRandom rnd = new java.util.SplittableRandom(seed);
    CRC32 crc = new CRC32();
    try (FSDataOutputStream out = fs.create(file, true)) {
      for (long done = 0; done < size; done += IO) {
        int n = (int) Math.min(IO, size - done);
        for (int i = 0; i < n; i += 8) {
          long v = rnd.nextLong();
          for (int j = 0; j < 8 && i + j < n; j++) {
            buf[i + j] = (byte) (v >>> (8 * j));
          }
        }
        out.write(buf, 0, n);
        crc.update(buf, 0, n);
      }
    }
    return crc.getValue();
  }

  private static long read(FileSystem fs, org.apache.hadoop.fs.Path file, long size)
      throws IOException {
    byte[] buf = new byte[IO];
    CRC32 crc = new CRC32();
    long total = 0;
    try (FSDataInputStream in = fs.open(file)) {
      for (int n = in.read(buf); n > 0; n = in.read(buf)) {
        crc.update(buf, 0, n);
        total += n;
      }
    }
    if (total != size) {
      throw new IOException(file + ": read " + total + " bytes, wrote " + size);
    }
    return crc.getValue();
  }

  private static String report(Map<Config, List<Measure>> results, long size, int rounds,
      List<String> loads, String loadEnd, Instant started, boolean namespaces) {
    StringBuilder b = new StringBuilder();
    b.append("# Týr cluster: aggregate throughput of 4 streams\n\n");
    b.append(String.format(Locale.ROOT, "Run %s, %d rounds; each round writes %d files of %s "
        + "at once through blob:// (1 MiB calls, %s stripes over the ring), then reads them "
        + "back at once, checked by CRC-32, on each configuration in a turning order. "
        + "MB/s = 10^6 bytes per second of a phase's wall time, all %d streams together. "
        + "Hosts: %s; the client runs outside them. Every server and the client share this "
        + "2-core machine and its disk (servers sync their log every 100 ms).%n%n",
        started, rounds, STREAMS, human(size), STRIPE, STREAMS,
        namespaces ? "3 network namespaces (scripts/hosts/hosts.sh)" : "loopback addresses"));
    b.append("| configuration | write MB/s median (min-max) | read MB/s median (min-max) |\n");
    b.append("|---|---:|---:|\n");
    Map<Config, double[]> med = new LinkedHashMap<>();
    for (Map.Entry<Config, List<Measure>> e : results.entrySet()) {
      double[] w = e.getValue().stream().mapToDouble(Measure::writeMbps).sorted().toArray();
      double[] r = e.getValue().stream().mapToDouble(Measure::readMbps).sorted().toArray();
      med.put(e.getKey(), new double[] {median(w), median(r)});
      b.append(String.format(Locale.ROOT, "| %s | %.1f (%.1f-%.1f) | %.1f (%.1f-%.1f) |%n",
          e.getKey().name(), median(w), w[0], w[w.length - 1], median(r), r[0],
          r[r.length - 1]));
    }
    double[] one = med.get(CONFIGS.get(0));
    double[] three = med.get(CONFIGS.get(1));
    double[] r2 = med.get(CONFIGS.get(2));
    b.append("\n| ratio (of medians) | write | read |\n|---|---:|---:|\n");
    b.append(String.format(Locale.ROOT, "| 3 nodes / 1 node (R = 1) | %.2f | %.2f |%n",
        three[0] / one[0], three[1] / one[1]));
    b.append(String.format(Locale.ROOT, "| R = 2 / R = 1 (3 nodes) | %.2f | %.2f |%n",
        r2[0] / three[0], r2[1] / three[1]));
    // Paired within each round (the configurations ran back to back, under the same load):
    // the median of those per-round ratios is less at the mercy of one noisy round.
    b.append(String.format(Locale.ROOT, "| 3 nodes / 1 node, median of per-round ratios "
        + "| %.2f | %.2f |%n", pairedRatio(results, 1, 0, true),
        pairedRatio(results, 1, 0, false)));
    b.append(String.format(Locale.ROOT, "| R = 2 / R = 1, median of per-round ratios "
        + "| %.2f | %.2f |%n", pairedRatio(results, 2, 1, true),
        pairedRatio(results, 2, 1, false)));
    b.append(String.format(Locale.ROOT, "%nCost of replication (3 nodes): writes %.0f%% "
        + "slower with R = 2, reads %+.0f%%.%n", 100 * (1 - r2[0] / three[0]),
        100 * (r2[1] / three[1] - 1)));
    b.append("\nRounds (MB/s write / read):\n\n| round | load average at its start |");
    for (Config c : CONFIGS) {
      b.append(' ').append(c.name()).append(" |");
    }
    b.append("\n|---|---|").append("---:|".repeat(CONFIGS.size())).append('\n');
    for (int r = 0; r < rounds; r++) {
      b.append("| ").append(r + 1).append(" | ").append(loads.get(r)).append(" |");
      for (Config c : CONFIGS) {
        Measure m = results.get(c).get(r);
        b.append(String.format(Locale.ROOT, " %.1f / %.1f |", m.writeMbps(), m.readMbps()));
      }
      b.append('\n');
    }
    b.append("\nLoad average at the end: ").append(loadEnd).append(".\n");
    return b.toString();
  }

  /** The median over rounds of configuration a's MB/s over configuration b's. */
  private static double pairedRatio(Map<Config, List<Measure>> results, int a, int b,
      boolean write) {
    List<Measure> x = results.get(CONFIGS.get(a));
    List<Measure> y = results.get(CONFIGS.get(b));
    double[] r = new double[x.size()];
    for (int i = 0; i < r.length; i++) {
      r[i] = write ? x.get(i).writeMbps() / y.get(i).writeMbps()
          : x.get(i).readMbps() / y.get(i).readMbps();
    }
    java.util.Arrays.sort(r);
    return median(r);
  }

  private static double median(double[] sorted) {
    int n = sorted.length;
    return n % 2 == 1 ? sorted[n / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2;
  }

  private static String loadAverage() {
    try {
      String[] f = Files.readString(Path.of("/proc/loadavg")).trim().split("\\s+");
      return f[0] + " " + f[1] + " " + f[2];
    } catch (IOException e) {
      return "?";
    }
  }

  private static long parseBytes(String s) {
    String t = s.trim().toLowerCase(Locale.ROOT);
    long unit = switch (t.charAt(t.length() - 1)) {
      case 'k' -> 1L << 10;
      case 'm' -> 1L << 20;
      case 'g' -> 1L << 30;
      default -> 1;
    };
    return Long.parseLong(unit == 1 ? t : t.substring(0, t.length() - 1)) * unit;
  }

  private static String human(long bytes) {
    return bytes % (1L << 20) == 0 ? (bytes >> 20) + " MiB" : bytes + " bytes";
  }
}
