package io.blobfs.bench.rados;

import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.LocalDate;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
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
    String pool = ClusterEnv.pool();
    RadosBench radosBench =
        new RadosBench(args.length > 1 ? args[1] : "scripts/ceph/rados-bench.sh", pool);
    Configuration c = ClusterEnv.hadoopConf("listing",
        "listing-" + ProcessHandle.current().pid());
    // The paper's pure-scan listing; the name index's figures: RadosMetadataCost.
    c.set("fs.blob.store.listing.index", "scan");
    List<long[]> rows = new ArrayList<>(); // pool objects, median micros, names scanned
    try (FileSystem fs = FileSystem.newInstance(URI.create("blob://listing/"), c)) {
      org.apache.hadoop.fs.Path dir = new org.apache.hadoop.fs.Path("/dir");
      for (int i = 0; i < 100; i++) {
        fs.create(new org.apache.hadoop.fs.Path(dir, "f" + i)).close();
      }
      long added = 0;
      for (int step : new int[] {0, 8, 16, 32}) {
        if (step > 0) {
          // 4 KiB objects, kept: the pool grows by what rados bench wrote.
          added += Long.parseLong(radosBench.run("write", step, 4096, 16, true).get("ops"));
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
      radosBench.cleanup();
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
}
