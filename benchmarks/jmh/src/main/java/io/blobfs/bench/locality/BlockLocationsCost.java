package io.blobfs.bench.locality;

import com.ceph.rados.Rados;
import io.blobfs.bench.rados.ClusterEnv;
import java.io.File;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.LocalDate;
import java.util.Arrays;
import java.util.Locale;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.BlockLocation;
import org.apache.hadoop.fs.EtagSource;
import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.FileSystem;

/**
 * What {@code getFileBlockLocations} of a 100-stripe file costs on RADOS with CRUSH computed
 * here, against asking the monitor where each stripe is ({@code osd map}, one mon command per
 * stripe, the command {@code ceph osd map} sends), measured side by side in one run on the
 * live cluster. Also the first call of a fresh file system (it reads the maps: three mon
 * commands), and one {@code osd stat} (what checking the map's epoch costs, once per map-ttl).
 *
 * <p>Needs the environment of {@code scripts/ceph/cluster.sh start --layout multi} (CEPH_CONF,
 * BLOBFS_CEPH_POOL, BLOBFS_CEPH_CLIENT_KEYRING). Usage: {@code BlockLocationsCost REPORT_DIR}.
 */
public final class BlockLocationsCost {
  private static final int STRIPES = 100;
  private static final int STRIPE = 64 << 10;
  private static final int RUNS = 50;

  private BlockLocationsCost() {}

  public static void main(String[] args) throws Exception {
    Path reportDir = Path.of(args.length > 0 ? args[0] : "benchmarks/reports");
    String pool = ClusterEnv.pool();
    String ns = "locations-bench-" + ProcessHandle.current().pid();
    Configuration c = ClusterEnv.hadoopConf("loc", ns);
    c.set("fs.blob.store.loc.stripe.size", String.valueOf(STRIPE));
    URI uri = URI.create("blob://loc/");
    org.apache.hadoop.fs.Path file = new org.apache.hadoop.fs.Path("/file");
    double[] cold = new double[5];
    double[] warm;
    double[] stat;
    double[] mon;
    String fileId;
    try (FileSystem fs = FileSystem.newInstance(uri, c)) {
      byte[] chunk = new byte[STRIPE];
      try (FSDataOutputStream out = fs.create(file, true)) {
        for (int i = 0; i < STRIPES; i++) {
          out.write(chunk);
        }
      }
      FileStatus status = fs.getFileStatus(file);
      fileId = ((EtagSource) status).getEtag();
      check(fs.getFileBlockLocations(status, 0, status.getLen()));
      warm = time(() -> check(fs.getFileBlockLocations(status, 0, status.getLen())));
      for (int i = 0; i < cold.length; i++) {
        try (FileSystem fresh = FileSystem.newInstance(uri, c)) {
          FileStatus st = fresh.getFileStatus(file);
          long t0 = System.nanoTime();
          check(fresh.getFileBlockLocations(st, 0, st.getLen()));
          cold[i] = (System.nanoTime() - t0) / 1e6;
        }
      }
      Rados rados = new Rados("blobfs");
      rados.confReadFile(new File(ClusterEnv.required("CEPH_CONF")));
      rados.confSet("keyring", ClusterEnv.required("BLOBFS_CEPH_CLIENT_KEYRING"));
      rados.connect();
      try {
        String id = fileId;
        stat = time(() -> rados.executeRadosMonCommand(
            new String[] {"{\"prefix\":\"osd stat\",\"format\":\"json\"}"}, "").getOutput());
        mon = time(() -> {
          for (int s = 0; s < STRIPES; s++) {
            String cmd = "{\"prefix\":\"osd map\",\"pool\":\"" + pool + "\",\"object\":\"" + id
                + "/" + s + "\",\"nspace\":\"" + ns + ".d\",\"format\":\"json\"}";
            String out = rados.executeRadosMonCommand(new String[] {cmd}, "").getOutput();
            if (!out.contains("\"up_primary\"")) {
              throw new IllegalStateException("osd map: " + out);
            }
          }
        });
      } finally {
        rados.shutDown();
      }
      fs.delete(file, false);
    }
    Arrays.sort(cold);
    String md = String.format(Locale.ROOT, """
        # Block locations of a 100-stripe file on RADOS

        Run %s on the multi-OSD cluster (3 OSDs under CRUSH hosts host-a/b/c, pool `%s`),
        `BlockLocationsCost`: one `blob://` file of %d stripes of 64 KiB; each figure is for
        all %d stripes, median (p90) of %d runs, measured side by side in one run.

        | how | per file | per stripe |
        |---|---:|---:|
        | `getFileBlockLocations`, CRUSH here, maps cached (default map-ttl, 10 s) | %.3f ms (%.3f) | %.2f µs |
        | first call of a fresh file system (reads the maps: 3 mon commands), median of 5 | %.2f ms | - |
        | one `osd map` mon command per stripe (what `ceph osd map` sends), rados-java | %.2f ms (%.2f) | %.1f µs |
        | one `osd stat` mon command (the epoch check, at most once per map-ttl) | %.3f ms (%.3f) | - |

        Ratio, mon commands / CRUSH here (cached maps): **%.0fx**.
        """, LocalDate.now(), pool, STRIPES, STRIPES, RUNS,
        median(warm), p90(warm), median(warm) * 1000 / STRIPES,
        cold[cold.length / 2],
        median(mon), p90(mon), median(mon) * 1000 / STRIPES,
        median(stat), p90(stat),
        median(mon) / median(warm));
    Files.createDirectories(reportDir);
    Files.writeString(reportDir.resolve("block-locations.md"), md);
    System.out.print(md);
  }

  private static void check(BlockLocation[] blocks) throws java.io.IOException {
    if (blocks.length != STRIPES || blocks[STRIPES - 1].getHosts().length == 0) {
      throw new IllegalStateException("expected " + STRIPES + " located stripes, got "
          + blocks.length);
    }
  }

  private interface Run {
    void run() throws Exception;
  }

  /** Milliseconds of each of RUNS runs, after 5 unmeasured ones. */
  private static double[] time(Run r) throws Exception {
    for (int i = 0; i < 5; i++) {
      r.run();
    }
    double[] ms = new double[RUNS];
    for (int i = 0; i < RUNS; i++) {
      long t0 = System.nanoTime();
      r.run();
      ms[i] = (System.nanoTime() - t0) / 1e6;
    }
    Arrays.sort(ms);
    return ms;
  }

  private static double median(double[] sorted) {
    return sorted[sorted.length / 2];
  }

  private static double p90(double[] sorted) {
    return sorted[(int) (sorted.length * 0.9)];
  }
}
