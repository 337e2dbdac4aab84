package io.blobfs.bench.rados;

import java.io.IOException;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.LocalDate;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.TimeUnit;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileSystem;

/**
 * How the cost of listing a directory grows with the number of objects in the pool. A
 * directory of 100 files is listed (median of 7) while other objects are added to the
 * pool in steps with {@code rados bench} (4 KiB objects, left in place): RADOS lists in
 * hash order over every placement group, so even a listing confined to one RADOS
 * namespace makes the OSDs walk the whole pool.
 *
 * <p>Needs the environment of scripts/ceph/cluster.sh (run through
 * scripts/bench-rados.sh). Usage: {@code RadosListingCost REPORT_DIR RADOS_BENCH_SCRIPT}.
 */
public final class RadosListingCost {
  private RadosListingCost() {}

  public static void main(String[] args) throws Exception {
    Path reportDir = Path.of(args.length > 0 ? args[0] : "benchmarks/reports");
    String radosBench = args.length > 1 ? args[1] : "scripts/ceph/rados-bench.sh";
    String pool = System.getenv("BLOBFS_CEPH_POOL");
    Configuration c = new Configuration();
    c.set("fs.blob.impl", "io.blobfs.hadoop.BlobFileSystem");
    String p = "fs.blob.store.listing.";
    c.set(p + "type", "rados");
    c.set(p + "pool", pool);
    c.set(p + "conf", System.getenv("CEPH_CONF"));
    c.set(p + "client-id", "blobfs");
    c.set(p + "keyring", System.getenv("BLOBFS_CEPH_CLIENT_KEYRING"));
    c.set(p + "namespace", "listing-" + ProcessHandle.current().pid());
    List<long[]> rows = new ArrayList<>(); // pool objects, median micros, names scanned
    try (FileSystem fs = FileSystem.newInstance(URI.create("blob://listing/"), c)) {
      org.apache.hadoop.fs.Path dir = new org.apache.hadoop.fs.Path("/dir");
      for (int i = 0; i < 100; i++) {
        fs.create(new org.apache.hadoop.fs.Path(dir, "f" + i)).close();
      }
      long added = 0;
      for (int step : new int[] {0, 8, 16, 32}) {
        if (step > 0) {
          added += fill(radosBench, pool, step);
        }
        long[] micros = new long[7];
        for (int r = 0; r < micros.length; r++) {
          long t0 = System.nanoTime();
          int n = fs.listStatus(dir).length;
          micros[r] = (System.nanoTime() - t0) / 1000;
          if (n != 100) {
            throw new IllegalStateException("listed " + n + " entries, expected 100");
          }
        }
        Arrays.sort(micros);
        rows.add(new long[] {added + 100, micros[3]});
        System.out.printf(Locale.ROOT, "pool holds ~%d objects: listStatus(100 files) %.1f ms%n",
            added + 100, micros[3] / 1000.0);
      }
      fs.delete(dir, true);
    } finally {
      run(List.of("bash", radosBench, "cleanup", pool));
    }
    StringBuilder md = new StringBuilder("# Listing cost against the pool's object count (RADOS)\n\n");
    md.append(String.format(Locale.ROOT, "Run %s on the single-OSD cluster: `listStatus` of a "
        + "directory of 100 files (its names in their own RADOS namespace), median of 7, "
        + "while 4 KiB objects written by rados bench in another namespace fill the pool.%n%n"
        + "| objects in the pool | listStatus (100 files) |%n|---:|---:|%n", LocalDate.now()));
    for (long[] r : rows) {
      md.append(String.format(Locale.ROOT, "| %d | %.1f ms |%n", r[0], r[1] / 1000.0));
    }
    md.append("\nRADOS cannot list by prefix: the client lists a namespace, and the OSDs "
        + "walk every object of every placement group to find its members, so the time "
        + "grows with the whole pool, as in the paper. Keeping names in their own namespace "
        + "keeps the data stripes out of what crosses the network and what the client "
        + "filters, but not out of what the OSDs walk.\n");
    System.out.println(md);
    Files.createDirectories(reportDir);
    Files.writeString(reportDir.resolve("rados-listing.md"), md.toString());
  }

  /** Adds 4 KiB objects for {@code seconds} with rados bench; returns how many. */
  private static long fill(String script, String pool, int seconds) throws Exception {
    String out = run(List.of("bash", script, "--no-cleanup", Integer.toString(seconds), "4K",
        "16", "write", pool));
    for (String line : out.split("\n")) {
      if (line.startsWith("RESULT ")) {
        for (String part : line.split("\\s+")) {
          if (part.startsWith("ops=")) {
            return Long.parseLong(part.substring(4));
          }
        }
      }
    }
    throw new IOException("no RESULT from rados bench:\n" + out);
  }

  private static String run(List<String> cmd) throws IOException, InterruptedException {
    Process proc = new ProcessBuilder(cmd).redirectErrorStream(true).start();
    byte[] out = proc.getInputStream().readAllBytes();
    if (!proc.waitFor(5, TimeUnit.MINUTES) || proc.exitValue() != 0) {
      proc.destroyForcibly();
      throw new IOException(String.join(" ", cmd) + " failed:\n"
          + new String(out, StandardCharsets.UTF_8));
    }
    return new String(out, StandardCharsets.UTF_8);
  }
}
