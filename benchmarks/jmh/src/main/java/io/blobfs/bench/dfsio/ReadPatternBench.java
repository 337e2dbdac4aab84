package io.blobfs.bench.dfsio;

import io.blobfs.bench.Reports;
import io.blobfs.bench.rados.ClusterEnv;
import io.blobfs.store.StoreOptions;
import java.net.URI;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Random;
import java.util.TreeMap;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FSDataInputStream;
import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;

/**
 * TestDFSIO's read pattern without MapReduce around it: one stream reading a file with
 * {@code read(byte[], 0, 1_000_000)} calls (TestDFSIO's default buffer), against the same
 * stream reading with 4 MiB calls, rounds interleaved in one JVM so that a loaded machine
 * weighs on both alike. Run it under JFR to see where the time goes
 * (benchmarks/reports/read-path.md).
 *
 * <p>Usage: {@code ReadPatternBench TARGET SIZE ROUNDS [APP_READS]}, TARGET {@code rados}
 * (the cluster of {@code scripts/ceph/cluster.sh env}, its own namespace) or
 * {@code tyr=HOST:PORT} (a Týr server process, local reads off: every byte over TCP; with
 * {@code -Drp.local-reads=true}, from the node's files when it shares this host) or
 * {@code file=DIR} (Hadoop's LocalFileSystem in DIR, checksums verified, as TestDFSIO's
 * file:// target reads: what a local read is measured against);
 * APP_READS a comma-separated list of application read sizes (default
 * {@code 1000000,4m}); system properties {@code rp.KEY=VALUE} set store options
 * ({@code -Drp.read.ahead=64m}). Prints one line per read and the median and spread per size.
 */
public final class ReadPatternBench {
  private ReadPatternBench() {}

  public static void main(String[] args) throws Exception {
    String target = args[0];
    long size = StoreOptions.parseBytes("size", args.length > 1 ? args[1] : "1g");
    int rounds = args.length > 2 ? Integer.parseInt(args[2]) : 3;
    List<Integer> appReads = new ArrayList<>();
    for (String s : (args.length > 3 ? args[3] : "1000000,4m").split(",")) {
      appReads.add((int) StoreOptions.parseBytes("read size", s));
    }
    Configuration c = conf(target);
    boolean local = target.startsWith("file=");
    Path file = local ? new Path("file://" + target.substring(5) + "/read-pattern/file")
        : new Path("/read-pattern/file");
    Map<Integer, List<Double>> results = new TreeMap<>();
    try (FileSystem fs = FileSystem.newInstance(
        URI.create(local ? "file:///" : "blob://rp/"), c)) {
      write(fs, file, size);
      for (int round = 0; round <= rounds; round++) { // round 0 warms up, unmeasured
        for (int app : appReads) {
          Map<String, Long> cpu0 = cpuByThreadGroup();
          double mibs = read(fs, file, size, app);
          Map<String, Long> cpu1 = cpuByThreadGroup();
          StringBuilder cpu = new StringBuilder();
          cpu1.forEach((g, ns) -> {
            long d = ns - cpu0.getOrDefault(g, 0L);
            if (d > 10_000_000L) { // threads that did nothing worth a mention are left out
              cpu.append(String.format(Locale.ROOT, " %s=%.0f", g, d / 1e6 / (size / 1e9)));
            }
          });
          System.out.printf(Locale.ROOT, "round %d read %d: %.0f MiB/s; CPU ms per GB:%s%n",
              round, app, mibs, cpu);
          if (round > 0) {
            results.computeIfAbsent(app, k -> new ArrayList<>()).add(mibs);
          }
        }
      }
      fs.delete(file.getParent(), true);
    }
    results.forEach((app, xs) -> {
      List<Double> sorted = xs.stream().sorted().toList();
      System.out.printf(Locale.ROOT, "RESULT %s reads of %d: median %.0f MiB/s, min %.0f, "
          + "max %.0f, n=%d%n", target, app, sorted.get(sorted.size() / 2), sorted.get(0),
          sorted.get(sorted.size() - 1), sorted.size());
    });
  }

  /**
   * CPU time of this JVM's live threads, summed per name with digits dropped
   * ("tyr-client-3-1" counts as "tyr-client-N-N"): what a copy costs shows here even
   * when a loaded machine makes the wall-clock rate noisy.
   */
  static Map<String, Long> cpuByThreadGroup() {
    java.lang.management.ThreadMXBean mx = java.lang.management.ManagementFactory.getThreadMXBean();
    Map<String, Long> byGroup = new TreeMap<>();
    // The whole process too: librados's own threads do its copies out of sight of the JVM.
    byGroup.put("process", ((com.sun.management.OperatingSystemMXBean)
        java.lang.management.ManagementFactory.getOperatingSystemMXBean()).getProcessCpuTime());
    for (java.lang.management.ThreadInfo t : mx.getThreadInfo(mx.getAllThreadIds())) {
      if (t == null) {
        continue;
      }
      long ns = mx.getThreadCpuTime(t.getThreadId());
      if (ns > 0) {
        byGroup.merge(t.getThreadName().replaceAll("[0-9]+", "N"), ns, Long::sum);
      }
    }
    return byGroup;
  }

  private static Configuration conf(String target) {
    Configuration c;
    if (target.equals("rados")) {
      c = ClusterEnv.hadoopConf("rp", "read-pattern-" + ProcessHandle.current().pid());
    } else if (target.startsWith("tyr=")) {
      c = new Configuration();
      c.set("fs.blob.impl", "io.blobfs.hadoop.BlobFileSystem");
      c.set("fs.blob.store.rp.type", "tyr");
      c.set("fs.blob.store.rp.address", target.substring(4));
      c.set("fs.blob.store.rp.local-reads", "false");
    } else if (target.startsWith("file=")) {
      c = new Configuration();
    } else {
      throw new IllegalArgumentException(
          "target is rados, tyr=HOST:PORT or file=DIR, not " + target);
    }
    // -Drp.read.ahead=64m and the like: store options to compare, e.g. read-ahead depths.
    System.getProperties().stringPropertyNames().stream().filter(k -> k.startsWith("rp."))
        .forEach(k -> c.set("fs.blob.store." + k, System.getProperty(k)));
    return c;
  }

  private static void write(FileSystem fs, Path file, long size) throws Exception {
    byte[] buf = new byte[1 << 20];
    new Random(1).nextBytes(buf);
    try (FSDataOutputStream out = fs.create(file, true)) {
      for (long done = 0; done < size; done += buf.length) {
        out.write(buf, 0, (int) Math.min(buf.length, size - done));
      }
    }
  }

  private static double read(FileSystem fs, Path file, long size, int app) throws Exception {
    byte[] buf = new byte[app];
    long t0 = System.nanoTime();
    long total = 0;
    try (FSDataInputStream in = fs.open(file)) {
      for (int n; (n = in.read(buf, 0, app)) > 0; ) {
        total += n;
      }
    }
    long t = System.nanoTime() - t0;
    if (total != size) {
      throw new IllegalStateException("read " + total + " of " + size + " bytes");
    }
    return Reports.mibPerSec(size, t);
  }
}
