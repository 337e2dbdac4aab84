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
import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;

/**
 * TestDFSIO's write pattern without MapReduce around it: one stream writing a new file
 * with {@code write(byte[], 0, 1_000_000)} calls (TestDFSIO's default buffer), file after
 * file, with the CPU time each thread group spent per GB (the process's too: librados's
 * threads and the embedded node's are native or in this JVM). Meant to be run
 * alternately from two builds, a JVM at a time, for a before/after on a loaded machine
 * (benchmarks/reports/write-path.md), and under JFR.
 *
 * <p>Usage: {@code WritePatternBench TARGET SIZE FILES}, TARGET {@code rados} (the cluster
 * of {@code scripts/ceph/cluster.sh env}, its own namespace), {@code tyr=HOST:PORT} (a Týr
 * server process) or {@code embedded=DIR} (a Týr node in this JVM); system properties
 * {@code wp.KEY=VALUE} set store options ({@code -Dwp.write.max-inflight=128m}),
 * {@code bench.server.pid} names a server process whose CPU time to count too. Prints
 * one line per file, then the median and spread of files 2 to FILES (the first one warms
 * up the JVM, as a TestDFSIO job's first file does).
 */
public final class WritePatternBench {
  private static final int APP_WRITE = 1_000_000;

  private WritePatternBench() {}

  public static void main(String[] args) throws Exception {
    String target = args[0];
    long size = StoreOptions.parseBytes("size", args.length > 1 ? args[1] : "1g");
    int files = args.length > 2 ? Integer.parseInt(args[2]) : 4;
    Configuration c = conf(target);
    byte[] buf = new byte[APP_WRITE];
    new Random(1).nextBytes(buf);
    List<Double> rates = new ArrayList<>();
    List<Double> cpus = new ArrayList<>();
    try (FileSystem fs = FileSystem.newInstance(URI.create("blob://wp/"), c)) {
      for (int i = 0; i < files; i++) {
        Path file = new Path("/write-pattern/file-" + i);
        Map<String, Long> cpu0 = ReadPatternBench.cpuByThreadGroup();
        long server0 = serverCpuNanos();
        long t0 = System.nanoTime();
        try (FSDataOutputStream out = fs.create(file, true)) {
          for (long done = 0; done < size; done += APP_WRITE) {
            out.write(buf, 0, (int) Math.min(APP_WRITE, size - done));
          }
        }
        double mibs = Reports.mibPerSec(size, System.nanoTime() - t0);
        Map<String, Long> cpu1 = ReadPatternBench.cpuByThreadGroup();
        StringBuilder cpu = new StringBuilder();
        if (server0 >= 0) {
          cpu1.put("server", serverCpuNanos());
          cpu0.put("server", server0);
        }
        cpu1.forEach((g, ns) -> {
          long d = ns - cpu0.getOrDefault(g, 0L);
          if (d > 10_000_000L) {
            cpu.append(String.format(Locale.ROOT, " %s=%.0f", g, d / 1e6 / (size / 1e9)));
          }
        });
        double process = (cpu1.get("process") - cpu0.get("process")) / 1e6 / (size / 1e9);
        System.out.printf(Locale.ROOT, "file %d write: %.0f MiB/s; CPU ms per GB:%s%n",
            i, mibs, cpu);
        if (i > 0 || files == 1) {
          rates.add(mibs);
          cpus.add(process);
        }
        fs.delete(file, false);
      }
      fs.delete(new Path("/write-pattern"), true);
    }
    System.out.printf(Locale.ROOT, "RESULT %s writes of %d: median %.0f MiB/s (%.0f-%.0f), "
        + "process CPU median %.0f ms/GB (%.0f-%.0f), n=%d%n", target, APP_WRITE,
        median(rates), min(rates), max(rates), median(cpus), min(cpus), max(cpus),
        rates.size());
  }

  /**
   * CPU time of the server process named by {@code -Dbench.server.pid} (a Týr server or
   * the OSD on this host), from /proc; -1 without one.
   */
  private static long serverCpuNanos() throws java.io.IOException {
    String pid = System.getProperty("bench.server.pid");
    if (pid == null) {
      return -1;
    }
    String stat = java.nio.file.Files.readString(java.nio.file.Path.of("/proc", pid, "stat"));
    String[] f = stat.substring(stat.lastIndexOf(')') + 2).split(" ");
    // utime and stime, fields 14 and 15 of stat (11 and 12 after the command), in ticks
    return (Long.parseLong(f[11]) + Long.parseLong(f[12])) * 10_000_000L;
  }

  private static double median(List<Double> xs) {
    return xs.stream().sorted().toList().get(xs.size() / 2);
  }

  private static double min(List<Double> xs) {
    return xs.stream().mapToDouble(Double::doubleValue).min().orElse(Double.NaN);
  }

  private static double max(List<Double> xs) {
    return xs.stream().mapToDouble(Double::doubleValue).max().orElse(Double.NaN);
  }

  private static Configuration conf(String target) {
    Configuration c;
    if (target.equals("rados")) {
      c = ClusterEnv.hadoopConf("wp", "write-pattern-" + ProcessHandle.current().pid());
    } else {
      c = new Configuration();
      c.set("fs.blob.impl", "io.blobfs.hadoop.BlobFileSystem");
      c.set("fs.blob.store.wp.type", "tyr");
      if (target.startsWith("tyr=")) {
        c.set("fs.blob.store.wp.address", target.substring(4));
      } else if (target.startsWith("embedded=")) {
        c.set("fs.blob.store.wp.embedded-dir", target.substring(9));
      } else {
        throw new IllegalArgumentException(
            "target is rados, tyr=HOST:PORT or embedded=DIR, not " + target);
      }
    }
    System.getProperties().stringPropertyNames().stream().filter(k -> k.startsWith("wp."))
        .forEach(k -> c.set("fs.blob.store." + k, System.getProperty(k)));
    return c;
  }
}
