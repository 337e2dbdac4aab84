package io.blobfs.bench.rados;

import io.blobfs.store.StoreOptions;
import io.blobfs.bench.Reports;
import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.lang.management.MemoryPoolMXBean;
import java.lang.management.MemoryType;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.LocalDate;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Random;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FSDataInputStream;
import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.fs.FileSystem;
import org.knowm.xchart.CategoryChart;
import org.knowm.xchart.CategoryChartBuilder;

/**
 * One {@code FSDataOutputStream} writing SIZE bytes sequentially (1 MiB application
 * writes) and one {@code FSDataInputStream} reading them back, through blob:// on RADOS,
 * against {@code rados bench} with the same object size and the same bytes in flight,
 * in one run, for stripes of 4, 16 and 64 MiB. Also the peak Java heap of each stream,
 * to show memory stays bounded whatever the file size.
 *
 * <p>Needs the environment of {@code scripts/ceph/cluster.sh} (run it through
 * {@code scripts/bench-rados.sh}). Usage: {@code RadosThroughputReport SIZE REPORT_DIR
 * RADOS_BENCH_SCRIPT}.
 */
public final class RadosThroughputReport {
  private static final int APP_IO = 1 << 20;
  private static final long IN_FLIGHT = 64L << 20;
  private static final int RADOS_BENCH_SECONDS = 10;

  private record Row(String stripe, double fsWrite, double benchWrite, double fsRead,
      double benchRead, long writeHeapMiB, long readHeapMiB, long writeDirectMiB,
      long readDirectMiB, int concurrency) {}

  /** Samples the JVM's direct-buffer memory while a stream runs and keeps the peak. */
  private static final class DirectPeak implements AutoCloseable {
    private final java.lang.management.BufferPoolMXBean direct = ManagementFactory
        .getPlatformMXBeans(java.lang.management.BufferPoolMXBean.class).stream()
        .filter(b -> b.getName().equals("direct")).findFirst().orElseThrow();
    private volatile long peak;
    private volatile boolean running = true;
    private final Thread sampler = new Thread(() -> {
      while (running) {
        peak = Math.max(peak, direct.getMemoryUsed());
        try {
          Thread.sleep(5);
        } catch (InterruptedException e) {
          return;
        }
      }
    }, "direct-memory-sampler");

    DirectPeak() {
      sampler.setDaemon(true);
      sampler.start();
    }

    long mib() {
      return peak >> 20;
    }

    @Override
    public void close() throws InterruptedException {
      running = false;
      sampler.join();
    }
  }

  private RadosThroughputReport() {}

  public static void main(String[] args) throws Exception {
    long size = StoreOptions.parseBytes("size", args.length > 0 ? args[0] : "2g");
    Path reportDir = Path.of(args.length > 1 ? args[1] : "benchmarks/reports");
    String script = args.length > 2 ? args[2] : "scripts/ceph/rados-bench.sh";
    String pool = ClusterEnv.pool();
    RadosBench radosBench = new RadosBench(script, pool);

    List<Row> rows = new ArrayList<>();
    // The first run pays for JIT compilation and for bluestore growing its sparse block
    // file into fresh space: run one, unmeasured, so that no stripe size pays for it.
    boolean warmUp = true;
    // -Dbench.stripes=16m,16m: other stripe sizes (the first one is the warm-up);
    // -Dbench.write.buffer=BYTES: the write buffer (capped at the stripe), 8m by default.
    List<String> stripes = List.of(System.getProperty("bench.stripes", "16m,4m,16m,64m")
        .split(","));
    long writeBuffer = StoreOptions.parseBytes("bench.write.buffer",
        System.getProperty("bench.write.buffer", "8m"));
    for (String stripe : stripes) {
      long s = StoreOptions.parseBytes("stripe", stripe);
      int chunk = (int) Math.min(8L << 20, s);
      int writeChunk = (int) Math.min(writeBuffer, s);
      Configuration c = ClusterEnv.hadoopConf("bench", "bench-" + ProcessHandle.current().pid());
      String p = "fs.blob.store.bench.";
      c.set(p + "stripe.size", stripe);
      c.set(p + "write.buffer.size", Integer.toString(writeChunk));
      c.set(p + "write.max-inflight", Long.toString(IN_FLIGHT));
      c.set(p + "read.buffer.size", Integer.toString(chunk));
      c.set(p + "read.ahead", Long.toString(IN_FLIGHT));
      org.apache.hadoop.fs.Path file = new org.apache.hadoop.fs.Path("/bench/file-" + stripe);
      double fsWrite;
      double fsRead;
      long writeHeap;
      long readHeap;
      long writeDirect;
      long readDirect;
      try (FileSystem fs = FileSystem.newInstance(URI.create("blob://bench/"), c)) {
        byte[] buf = new byte[APP_IO];
        new Random(1).nextBytes(buf);
        resetPeaks();
        long t0 = System.nanoTime();
        try (DirectPeak d = new DirectPeak()) {
          try (FSDataOutputStream out = fs.create(file, true)) {
            for (long done = 0; done < size; done += APP_IO) {
              out.write(buf, 0, (int) Math.min(APP_IO, size - done));
            }
          }
          fsWrite = Reports.mibPerSec(size, System.nanoTime() - t0);
          writeDirect = d.mib();
        }
        writeHeap = peakHeapMiB();
        resetPeaks();
        t0 = System.nanoTime();
        long total = 0;
        try (DirectPeak d = new DirectPeak()) {
          try (FSDataInputStream in = fs.open(file)) {
            int n;
            while ((n = in.read(buf, 0, buf.length)) > 0) {
              total += n;
            }
          }
          fsRead = Reports.mibPerSec(size, System.nanoTime() - t0);
          readDirect = d.mib();
        }
        readHeap = peakHeapMiB();
        if (total != size) {
          throw new IllegalStateException("read back " + total + " of " + size + " bytes");
        }
        fs.delete(new org.apache.hadoop.fs.Path("/bench"), true);
      }
      int concurrency = (int) Math.max(1, IN_FLIGHT / s);
      if (warmUp) {
        warmUp = false;
        radosBench.run("write", RADOS_BENCH_SECONDS, s, concurrency, false);
        System.out.println("warm-up done");
        continue;
      }
      double benchWrite = Double.parseDouble(
          radosBench.run("write", RADOS_BENCH_SECONDS, s, concurrency, true).get("mb_per_sec"));
      double benchRead = Double.parseDouble(
          radosBench.run("seq", RADOS_BENCH_SECONDS, s, concurrency, false).get("mb_per_sec"));
      radosBench.cleanup();
      rows.add(new Row(stripe, fsWrite, benchWrite, fsRead, benchRead, writeHeap, readHeap,
          writeDirect, readDirect, concurrency));
      System.out.printf(Locale.ROOT, "stripe %s: blob:// write %.0f MiB/s read %.0f MiB/s; "
          + "rados bench write %.0f seq %.0f MiB/s%n", stripe, fsWrite, fsRead, benchWrite,
          benchRead);
    }
    report(rows, size, reportDir);
  }


  private static void resetPeaks() {
    System.gc();
    for (MemoryPoolMXBean pool : ManagementFactory.getMemoryPoolMXBeans()) {
      pool.resetPeakUsage();
    }
  }

  /** Peak heap in use since the last reset, summed over the heap pools. */
  private static long peakHeapMiB() {
    long peak = 0;
    for (MemoryPoolMXBean pool : ManagementFactory.getMemoryPoolMXBeans()) {
      if (pool.getType() == MemoryType.HEAP) {
        peak += pool.getPeakUsage().getUsed();
      }
    }
    return peak >> 20;
  }

  private static void report(List<Row> rows, long size, Path dir) throws IOException {
    StringBuilder md = new StringBuilder();
    md.append("# RADOS throughput: one blob:// stream against rados bench\n\n");
    md.append(String.format(Locale.ROOT, "Run %s on the project's single-OSD cluster "
        + "(bluestore on a sparse file, 2 cores shared with the OSD): %d MiB written by one "
        + "FSDataOutputStream in 1 MiB writes and read back by one FSDataInputStream, with "
        + "64 MiB in flight; rados bench for %d s with objects of the stripe size and "
        + "64 MiB in flight (concurrency = 64 MiB / object size), write then seq, one run "
        + "side by side.%n%n", LocalDate.now(), size >> 20, RADOS_BENCH_SECONDS));
    md.append("| stripe | blob:// write | rados bench write | ratio | blob:// read | "
        + "rados bench seq | ratio | peak heap write / read | peak direct write / read |\n"
        + "|---|---:|---:|---:|---:|---:|---:|---:|---:|\n");
    for (Row r : rows) {
      md.append(String.format(Locale.ROOT, "| %s (x%d) | %.0f MiB/s | %.0f MiB/s | %.2f %s | "
              + "%.0f MiB/s | %.0f MiB/s | %.2f %s | %d / %d MiB | %d / %d MiB |%n", r.stripe(),
          r.concurrency(), r.fsWrite(), r.benchWrite(), r.fsWrite() / r.benchWrite(),
          Reports.verdict(r.fsWrite() / r.benchWrite(), 0.85), r.fsRead(), r.benchRead(),
          r.fsRead() / r.benchRead(), Reports.verdict(r.fsRead() / r.benchRead(), 0.85), r.writeHeapMiB(),
          r.readHeapMiB(), r.writeDirectMiB(), r.readDirectMiB()));
    }
    md.append("\nTarget: ratio at least 0.85 for write and read. Memory: the peak Java heap "
        + "in use while one stream ran (garbage not yet collected included) and the peak of "
        + "the JVM's direct buffers, sampled every 5 ms; a stream holds at most its write "
        + "buffers or read-ahead chunks for 64 MiB in flight plus one, whatever the file "
        + "size (2 GiB here).\n");
    CategoryChart chart = new CategoryChartBuilder().width(760).height(440)
        .title("One stream on RADOS against rados bench, " + (size >> 20) + " MiB")
        .xAxisTitle("stripe (object) size").yAxisTitle("MiB/s").build();
    List<String> cats = rows.stream().map(Row::stripe).toList();
    chart.addSeries("blob:// write", cats, rows.stream().map(Row::fsWrite).toList());
    chart.addSeries("rados bench write", cats, rows.stream().map(Row::benchWrite).toList());
    chart.addSeries("blob:// read", cats, rows.stream().map(Row::fsRead).toList());
    chart.addSeries("rados bench seq", cats, rows.stream().map(Row::benchRead).toList());
    Reports.write(dir, "rados-throughput", md, chart);
  }

}
