package io.blobfs.bench.tyr;

import io.blobfs.store.BlobStore;
import io.blobfs.store.Futures;
import io.blobfs.store.StoreOptions;
import io.blobfs.tyr.client.ClientConfig;
import io.blobfs.tyr.client.TyrClient;
import io.blobfs.tyr.server.TyrServerProcess;
import io.blobfs.bench.Reports;
import io.blobfs.bench.rados.ClusterEnv;
import java.io.IOException;
import java.net.URI;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.LocalDate;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Supplier;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FSDataInputStream;
import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.fs.FileSystem;
import org.knowm.xchart.CategoryChart;
import org.knowm.xchart.CategoryChartBuilder;

/**
 * Týr's two benchmarks, each side by side in one run.
 *
 * <p><b>Sequential.</b> SIZE bytes written and read back (1) through the raw Týr client
 * (64 MiB blobs in 16 MiB requests, 64 MiB in flight), (2) through one blob:// stream on
 * the same server (1 MiB application I/O, 64 MiB stripes, same requests and bytes in
 * flight), (3) through one file:// stream into the same disk. A Týr server process of its
 * own, its log on this disk, synced every 100 ms (as file:// leaves data to the page
 * cache). Rounds alternate the three; the median round is reported.
 *
 * <p><b>Small writes.</b> 8 threads doing 8 KiB writes at random aligned offsets of one
 * 64 MiB blob, for a fixed time: ops/s on Týr with every commit synced to disk, on Týr
 * synced every 100 ms, and on RADOS (when the project's cluster environment is set).
 *
 * <p>Usage: {@code TyrBenchmarkReport SIZE REPORT_DIR WORK_DIR}; run by scripts/bench-tyr.sh.
 */
public final class TyrBenchmarkReport {
  private static final int REQUEST = 16 << 20;
  private static final long BLOB = 64L << 20;
  private static final int IN_FLIGHT = 4;
  private static final int APP_IO = 1 << 20;
  private static final int ROUNDS = 3;
  private static final int SMALL = 8192;
  private static final int SMALL_THREADS = 8;
  private static final int SMALL_SECONDS = 10;

  private record Seq(String what, double write, double read) {}

  /** A path's median and the spread of its rounds. */
  private record Summary(Seq median, double writeMin, double writeMax, double readMin,
      double readMax) {}

  private static final String RAW = "raw Týr client";
  private static final String BLOBFS = "blob:// on Týr";
  private static final String LOCAL = "file:// (same disk)";

  private TyrBenchmarkReport() {}

  public static void main(String[] args) throws Exception {
    long size = StoreOptions.parseBytes("size", args.length > 0 ? args[0] : "2g");
    Path reportDir = Path.of(args.length > 1 ? args[1] : "benchmarks/reports");
    Path work = Path.of(args.length > 2 ? args[2] : "target/tyr-bench").toAbsolutePath();
    Files.createDirectories(work);

    Map<String, List<Seq>> runs = new LinkedHashMap<>();
    for (int round = 0; round < ROUNDS; round++) {
      Path dataDir = Files.createTempDirectory(work, "tyr-data-");
      try (TyrServerProcess server = new TyrServerProcess(dataDir, "--sync", "interval",
          "--threads", "4").start()) {
        // The order turns each round, so that no path always follows another's dirty pages.
        List<Supplier<Seq>> paths = new ArrayList<>(List.of(
            () -> unchecked(() -> raw(server, size)),
            () -> unchecked(() -> blobfs(server, size)),
            () -> unchecked(() -> local(work, size))));
        java.util.Collections.rotate(paths, round);
        for (Supplier<Seq> path : paths) {
          record(runs, path.get());
        }
      } finally {
        deleteTree(dataDir);
      }
    }
    List<Summary> seq = new ArrayList<>();
    for (String what : List.of(RAW, BLOBFS, LOCAL)) {
      List<Seq> r = runs.get(what);
      seq.add(new Summary(new Seq(what, median(r, Seq::write), median(r, Seq::read)),
          r.stream().mapToDouble(Seq::write).min().orElse(0),
          r.stream().mapToDouble(Seq::write).max().orElse(0),
          r.stream().mapToDouble(Seq::read).min().orElse(0),
          r.stream().mapToDouble(Seq::read).max().orElse(0)));
    }

    Map<String, Double> small = new LinkedHashMap<>();
    for (String sync : List.of("always", "interval")) {
      Path dataDir = Files.createTempDirectory(work, "tyr-small-");
      try (TyrServerProcess server = new TyrServerProcess(dataDir, "--sync", sync,
          "--threads", "8").start()) {
        small.put("Týr, sync " + sync, smallWrites(tyrStore(server)));
      } finally {
        deleteTree(dataDir);
      }
    }
    String radosNote;
    if (ClusterEnv.present()) {
      small.put("RADOS (single OSD)", smallWrites(radosStore()));
      radosNote = "RADOS: the project's single-OSD cluster (bluestore on a sparse file on the "
          + "same disk), one object, the same 8 threads through BlobFS's RADOS store.";
    } else {
      radosNote = "RADOS: not measured in this run (no cluster environment; use "
          + "scripts/bench-tyr.sh).";
    }
    report(seq, small, radosNote, size, reportDir);
  }

  @FunctionalInterface
  private interface Measurement {
    Seq run() throws Exception;
  }

  private static Seq unchecked(Measurement m) {
    try {
      return m.run();
    } catch (Exception e) {
      throw new IllegalStateException(e);
    }
  }

  /**
   * Writes back every dirty page first: otherwise the kernel throttles a writer for the
   * previous path's 2 GiB still in the page cache, and whichever path runs second loses.
   */
  private static void settle() throws IOException, InterruptedException {
    new ProcessBuilder("sync").inheritIO().start().waitFor();
    Thread.sleep(500);
  }

  private static void record(Map<String, List<Seq>> runs, Seq s) {
    System.out.printf(Locale.ROOT, "%-28s write %6.0f MiB/s  read %6.0f MiB/s%n", s.what(),
        s.write(), s.read());
    runs.computeIfAbsent(s.what(), k -> new ArrayList<>()).add(s);
  }

  private static double median(List<Seq> r, java.util.function.ToDoubleFunction<Seq> f) {
    double[] v = r.stream().mapToDouble(f).sorted().toArray();
    return v[v.length / 2];
  }

  // ------------------------------------------------------------------ sequential

  private static Seq raw(TyrServerProcess server, long size) throws Exception {
    try (TyrClient c = new TyrClient(ClientConfig.of("127.0.0.1", server.port()))) {
      // Direct, as a careful user of the raw client would: sent in place, no copy.
      ByteBuffer data = ByteBuffer.allocateDirect(REQUEST);
      byte[] random = new byte[REQUEST];
      new Random(1).nextBytes(random);
      data.put(random).flip();
      settle();
      long t0 = System.nanoTime();
      pipeline(size, at -> c.write("raw/" + at / BLOB, at % BLOB,
          data.duplicate().limit((int) Math.min(REQUEST, size - at))).thenApply(r -> 0));
      double write = Reports.mibPerSec(size, System.nanoTime() - t0);
      AtomicLong read = new AtomicLong();
      settle();
      t0 = System.nanoTime();
      pipeline(size, at -> {
        ByteBuffer dst = ByteBuffer.allocateDirect((int) Math.min(REQUEST, size - at));
        return c.read("raw/" + at / BLOB, at % BLOB, dst).thenApply(s -> {
          read.addAndGet(dst.position());
          return 0;
        });
      });
      double rd = Reports.mibPerSec(size, System.nanoTime() - t0);
      check(read.get(), size);
      return new Seq(RAW, write, rd);
    }
  }

  /** Requests of REQUEST bytes over {@code size}, IN_FLIGHT at a time, in order. */
  private static void pipeline(long size,
      java.util.function.LongFunction<CompletableFuture<Integer>> op) throws IOException {
    List<CompletableFuture<Integer>> window = new ArrayList<>();
    for (long at = 0; at < size; at += REQUEST) {
      if (window.size() == IN_FLIGHT) {
        TyrClient.await(window.remove(0));
      }
      window.add(op.apply(at));
    }
    for (CompletableFuture<Integer> f : window) {
      TyrClient.await(f);
    }
  }

  private static Seq blobfs(TyrServerProcess server, long size)
      throws IOException, InterruptedException {
    Configuration c = new Configuration();
    c.set("fs.blob.impl", "io.blobfs.hadoop.BlobFileSystem");
    String p = "fs.blob.store.tyrbench.";
    c.set(p + "type", "tyr");
    c.set(p + "address", server.address());
    // Over TCP like the raw client, so the ratio measures BlobFS's layer alone (local reads
    // are measured side by side in scripts/bench-dfsio.sh: tyr-server, tyr-server-tcp).
    c.set(p + "local-reads", "false");
    c.set(p + "stripe.size", Long.toString(BLOB));
    c.set(p + "write.buffer.size", Integer.toString(REQUEST));
    c.set(p + "write.max-inflight", Long.toString((long) IN_FLIGHT * REQUEST));
    c.set(p + "read.buffer.size", Integer.toString(REQUEST));
    c.set(p + "read.ahead", Long.toString((long) IN_FLIGHT * REQUEST));
    try (FileSystem fs = FileSystem.newInstance(URI.create("blob://tyrbench/"), c)) {
      return stream(BLOBFS, fs, new org.apache.hadoop.fs.Path("/bench/file"), size);
    }
  }

  private static Seq local(Path work, long size) throws IOException, InterruptedException {
    Configuration c = new Configuration();
    FileSystem fs = FileSystem.getLocal(c);
    org.apache.hadoop.fs.Path file = new org.apache.hadoop.fs.Path(work.toUri().toString(),
        "local-bench/file");
    try {
      return stream(LOCAL, fs, file, size);
    } finally {
      fs.delete(file.getParent(), true);
    }
  }

  private static Seq stream(String what, FileSystem fs, org.apache.hadoop.fs.Path file,
      long size) throws IOException, InterruptedException {
    byte[] buf = new byte[APP_IO];
    new Random(1).nextBytes(buf);
    settle();
    long t0 = System.nanoTime();
    try (FSDataOutputStream out = fs.create(file, true)) {
      for (long done = 0; done < size; done += APP_IO) {
        out.write(buf, 0, (int) Math.min(APP_IO, size - done));
      }
    }
    double write = Reports.mibPerSec(size, System.nanoTime() - t0);
    long total = 0;
    settle();
    t0 = System.nanoTime();
    try (FSDataInputStream in = fs.open(file)) {
      for (int n; (n = in.read(buf, 0, buf.length)) > 0; ) {
        total += n;
      }
    }
    double read = Reports.mibPerSec(size, System.nanoTime() - t0);
    check(total, size);
    fs.delete(file, false);
    return new Seq(what, write, read);
  }

  // ------------------------------------------------------------------ small writes

  private static BlobStore tyrStore(TyrServerProcess server) throws IOException {
    return new io.blobfs.tyr.blobfs.TyrBlobStoreProvider().open("small",
        new StoreOptions("fs.blob.store.small.", Map.of("address", server.address(),
            "connections", "4")));
  }

  private static BlobStore radosStore() throws IOException {
    Map<String, String> options = new java.util.HashMap<>(
        ClusterEnv.storeOptions("tyr-bench-" + ProcessHandle.current().pid()));
    options.remove("type"); // the provider is chosen here, not by the option
    return new io.blobfs.rados.RadosBlobStoreProvider().open("small",
        new StoreOptions("fs.blob.store.small.", options));
  }

  /** Ops/s of 8 KiB random writes by 8 threads into one 64 MiB blob, each waited for. */
  private static double smallWrites(BlobStore store) throws Exception {
    String key = "small/blob";
    try (store) {
      byte[] stripe = new byte[REQUEST];
      for (long at = 0; at < BLOB; at += REQUEST) {
        Futures.await(store.write(key, at, ByteBuffer.wrap(stripe)));
      }
      settle();
      AtomicLong ops = new AtomicLong();
      long end = System.nanoTime() + SMALL_SECONDS * 1_000_000_000L;
      List<Thread> threads = new ArrayList<>();
      List<Throwable> errors = java.util.Collections.synchronizedList(new ArrayList<>());
      for (int t = 0; t < SMALL_THREADS; t++) {
        Thread th = new Thread(() -> {
          byte[] b = new byte[SMALL];
          ThreadLocalRandom r = ThreadLocalRandom.current();
          try {
            while (System.nanoTime() < end) {
              r.nextBytes(b);
              long at = (long) r.nextInt((int) (BLOB / SMALL)) * SMALL;
              Futures.await(store.write(key, at, ByteBuffer.wrap(b)));
              ops.incrementAndGet();
            }
          } catch (Throwable e) {
            errors.add(e);
          }
        });
        th.start();
        threads.add(th);
      }
      long t0 = System.nanoTime();
      for (Thread th : threads) {
        th.join();
      }
      if (!errors.isEmpty()) {
        throw new IOException("small writes failed", errors.get(0));
      }
      double perSec = ops.get() / ((System.nanoTime() - t0) / 1e9);
      System.out.printf(Locale.ROOT, "small writes on %s: %.0f ops/s%n", store, perSec);
      store.delete(key);
      return perSec;
    }
  }

  // ------------------------------------------------------------------ report

  private static void report(List<Summary> seq, Map<String, Double> small, String radosNote,
      long size, Path dir) throws IOException {
    Seq raw = seq.get(0).median();
    Seq fs = seq.get(1).median();
    Seq local = seq.get(2).median();
    StringBuilder md = new StringBuilder("# Týr: blob:// against the raw client and file://, "
        + "and small writes against RADOS\n\n");
    md.append(String.format(Locale.ROOT, "Run %s on one machine (2 cores shared by client "
        + "and server; 24 GiB of memory, but this VM's kernel reclaims page cache eagerly, so "
        + "writes into the page cache swing widely from one phase to the next), %d MiB per "
        + "stream, median of %d rounds; the order of the three paths turns each round and "
        + "dirty pages are written back before each phase, so that no path pays for "
        + "another's.%n%n", LocalDate.now(), size >> 20, ROUNDS));
    md.append("## Sequential, one stream\n\n| path | write (median; rounds' range) | "
        + "read (median; range) |\n|---|---:|---:|\n");
    for (Summary s : seq) {
      md.append(String.format(Locale.ROOT, "| %s | %.0f MiB/s (%.0f-%.0f) | %.0f MiB/s "
              + "(%.0f-%.0f) |%n", s.median().what(), s.median().write(), s.writeMin(),
          s.writeMax(), s.median().read(), s.readMin(), s.readMax()));
    }
    md.append(String.format(Locale.ROOT, "%n| ratio | write | read |%n|---|---:|---:|%n"
            + "| blob:// / raw client (target 0.9) | %.2f %s | %.2f %s |%n"
            + "| blob:// / file:// | %.2f | %.2f |%n", fs.write() / raw.write(),
        Reports.verdict(fs.write() / raw.write(), 0.9), fs.read() / raw.read(),
        Reports.verdict(fs.read() / raw.read(), 0.9), fs.write() / local.write(),
        fs.read() / local.read()));
    md.append("\nThe server is a process of its own on loopback, its log on the same disk as "
        + "the file:// file, synced every 100 ms (sync=interval: a killed server loses "
        + "nothing, a machine crash at most 100 ms); file:// (Hadoop's LocalFileSystem "
        + "with its checksums) syncs nothing. The raw client writes 64 MiB blobs in 16 MiB "
        + "requests with 4 in flight; blob:// is configured to the same request size, "
        + "stripe size and bytes in flight.\n\n");
    md.append("## Small writes: 8 KiB at random offsets of one blob, 8 threads\n\n"
        + "| store | ops/s |\n|---|---:|\n");
    small.forEach((k, v) -> md.append(String.format(Locale.ROOT, "| %s | %.0f |%n", k, v)));
    md.append("\nEach thread waits for each write before the next. Týr with sync=always "
        + "acknowledges a write only once it is forced to disk (group commit: concurrent "
        + "writes share a force); RADOS acknowledges once bluestore has committed it. "
        + radosNote + "\n");
    CategoryChart chart = new CategoryChartBuilder().width(760).height(440)
        .title("One stream, " + (size >> 20) + " MiB: blob:// on Týr, raw client, file://")
        .xAxisTitle("path").yAxisTitle("MiB/s").build();
    List<String> cats = seq.stream().map(s -> s.median().what()).toList();
    chart.addSeries("write", cats, seq.stream().map(s -> s.median().write()).toList());
    chart.addSeries("read", cats, seq.stream().map(s -> s.median().read()).toList());
    Reports.write(dir, "tyr-benchmark", md, chart);
  }



  private static void check(long got, long want) {
    if (got != want) {
      throw new IllegalStateException("read back " + got + " of " + want + " bytes");
    }
  }

  private static void deleteTree(Path dir) throws IOException {
    if (!Files.exists(dir)) {
      return;
    }
    try (var paths = Files.walk(dir)) {
      for (Path p : paths.sorted(java.util.Comparator.reverseOrder()).toList()) {
        Files.delete(p);
      }
    }
  }
}
