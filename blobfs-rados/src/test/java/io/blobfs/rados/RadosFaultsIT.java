package io.blobfs.rados;

import static org.junit.jupiter.api.Assertions.*;

import io.blobfs.hadoop.BlobFileSystem;
import io.blobfs.namespace.BlobNamespace;
import io.blobfs.namespace.OrphanSweeper;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.AccessDeniedException;
import java.time.Clock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FSDataInputStream;
import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * Failures on a real cluster: an OSD stopped under a writer and under a reader, a full
 * pool, a writer process killed mid-file, and cephx caps that do not cover a pool. Each
 * must end in an IOException within the configured timeout, never a hang, and leave no
 * partial file visible. Runs on the auth-off cluster (its own daemons), so stopping its
 * OSD disturbs no other test.
 */
@ExtendWith(CephClusterExtension.class)
@CephClusterExtension.Cluster(layout = "single", auth = "none")
class RadosFaultsIT {
  private static final String STORE = "rados-faults";
  private static final int OP_TIMEOUT_S = 5;
  private static CephTestCluster.Env env;

  @BeforeAll
  static void cluster(CephTestCluster.Env cluster) {
    env = cluster;
  }

  @AfterAll
  static void restoreOsd() throws IOException {
    CephTestCluster.run("osd-start", "--layout", "single", "--auth", "none", "--id", "0");
  }

  private static Configuration conf(String namespace) {
    Configuration c = CephTestCluster.hadoopConf(env, STORE, namespace);
    String p = "fs.blob.store." + STORE + ".";
    c.set(p + "op-timeout", OP_TIMEOUT_S + "s");
    c.set(p + "stripe.size", "4m");
    c.set(p + "write.buffer.size", "1m");
    c.set(p + "write.max-inflight", "4m");
    c.set(p + "read.buffer.size", "1m");
    c.set(p + "read.ahead", "4m");
    return c;
  }

  private static FileSystem fs(Configuration c) throws IOException {
    return FileSystem.newInstance(URI.create("blob://" + STORE + "/"), c);
  }

  private static void stopOsd() throws IOException {
    CephTestCluster.run("osd-stop", "--layout", "single", "--auth", "none", "--id", "0");
  }

  private static void startOsd() throws IOException {
    CephTestCluster.run("osd-start", "--layout", "single", "--auth", "none", "--id", "0");
  }

  @Test
  void osdLostUnderAWriterFailsWithinTheTimeoutAndPublishesNothing() throws Exception {
    Configuration c = conf("w-" + System.nanoTime());
    try (FileSystem fs = fs(c)) {
      Path p = new Path("/faults/written");
      byte[] mib = new byte[1 << 20];
      FSDataOutputStream out = fs.create(p, true);
      for (int i = 0; i < 8; i++) {
        out.write(mib);
      }
      stopOsd();
      try {
        long start = System.nanoTime();
        IOException e = assertThrows(IOException.class, () -> {
          for (int i = 0; i < 256; i++) {
            out.write(mib);
          }
          out.close();
        });
        long seconds = TimeUnit.NANOSECONDS.toSeconds(System.nanoTime() - start);
        assertTrue(seconds <= 3L * OP_TIMEOUT_S + 20, "failed after " + seconds + " s: " + e);
      } finally {
        startOsd();
      }
      assertFalse(fs.exists(p), "a failed write publishes nothing");
    }
  }

  @Test
  void osdLostUnderAReaderFailsWithinTheTimeout() throws Exception {
    Configuration c = conf("r-" + System.nanoTime());
    try (FileSystem fs = fs(c)) {
      Path p = new Path("/faults/read");
      byte[] mib = new byte[1 << 20];
      try (FSDataOutputStream out = fs.create(p, true)) {
        for (int i = 0; i < 48; i++) {
          out.write(mib);
        }
      }
      FSDataInputStream in = fs.open(p);
      in.readFully(mib);
      stopOsd();
      try {
        long start = System.nanoTime();
        IOException e = assertThrows(IOException.class, () -> {
          while (in.read(mib) > 0) {
            // keep reading: the read-ahead runs dry within a few MiB
          }
        });
        long seconds = TimeUnit.NANOSECONDS.toSeconds(System.nanoTime() - start);
        assertTrue(seconds <= 3L * OP_TIMEOUT_S + 20, "failed after " + seconds + " s: " + e);
      } finally {
        startOsd();
        in.close();
      }
      // The cluster is back: the file is whole.
      try (FSDataInputStream again = fs.open(p)) {
        assertEquals(48L << 20, again.readAllBytes().length);
      }
    }
  }

  @Test
  void aFullPoolFailsTheWriteWithinTheTimeoutAndPublishesNothing() throws Exception {
    String pool = "blobfs-quota";
    CephTestCluster.ceph(env, "osd", "pool", "create", pool, "8");
    CephTestCluster.ceph(env, "osd", "pool", "application", "enable", pool, "rados");
    Configuration c = conf("q-" + System.nanoTime());
    c.set("fs.blob.store." + STORE + ".pool", pool);
    try (FileSystem fs = fs(c)) {
      byte[] mib = new byte[1 << 20];
      // Fill past a small quota: the monitor flags the pool full only once the usage
      // statistics reach it, so wait for the flag before the write under test.
      CephTestCluster.ceph(env, "osd", "pool", "set-quota", pool, "max_bytes",
          Long.toString(4L << 20));
      try (FSDataOutputStream out = fs.create(new Path("/faults/filler"), true)) {
        for (int i = 0; i < 16; i++) {
          out.write(mib);
        }
      } catch (IOException alreadyFull) {
        // flagged while filling: fine
      }
      long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(90);
      while (!CephTestCluster.ceph(env, "osd", "pool", "ls", "detail").lines()
          .anyMatch(l -> l.contains("'" + pool + "'") && l.contains("full_quota"))) {
        assertTrue(System.nanoTime() < deadline, "the pool was never flagged full");
        Thread.sleep(500);
      }
      Path p = new Path("/faults/too-big");
      long start = System.nanoTime();
      IOException e = assertThrows(IOException.class, () -> {
        try (FSDataOutputStream out = fs.create(p, true)) {
          for (int i = 0; i < 64; i++) {
            out.write(mib);
          }
        }
      });
      long seconds = TimeUnit.NANOSECONDS.toSeconds(System.nanoTime() - start);
      assertTrue(seconds <= 3L * OP_TIMEOUT_S + 20, "failed after " + seconds + " s: " + e);
      CephTestCluster.ceph(env, "osd", "pool", "set-quota", pool, "max_bytes", "0");
      assertFalse(fs.exists(p), "no partial file visible");
      fs.delete(new Path("/faults"), true);
    } finally {
      CephTestCluster.ceph(env, "osd", "pool", "set-quota", pool, "max_bytes", "0");
    }
  }

  @Test
  void aKilledWriterLeavesNoFileAndTheSweeperRemovesItsData() throws Exception {
    String ns = "k-" + System.nanoTime();
    Configuration c = conf(ns);
    List<String> cmd = new ArrayList<>(List.of(
        ProcessHandle.current().info().command().orElse("java"), "-cp",
        System.getProperty("java.class.path"), SlowWriter.class.getName()));
    for (Map.Entry<String, String> e : c) {
      if (e.getKey().startsWith("fs.blob.")) {
        cmd.add(e.getKey() + "=" + e.getValue());
      }
    }
    cmd.add("blob://" + STORE + "/faults/killed");
    Process writer = new ProcessBuilder(cmd).redirectErrorStream(true).start();
    try (BufferedReader lines = new BufferedReader(
        new InputStreamReader(writer.getInputStream(), StandardCharsets.UTF_8))) {
      String line;
      do {
        line = lines.readLine();
        assertNotNull(line, "the writer died before writing 12 MiB");
      } while (!line.equals("WROTE 12"));
      writer.destroyForcibly();
      assertTrue(writer.waitFor(30, TimeUnit.SECONDS));
    } finally {
      writer.destroyForcibly();
    }
    try (FileSystem fs = fs(c)) {
      assertFalse(fs.exists(new Path("/faults/killed")), "a killed writer publishes nothing");
      Thread.sleep(1100); // RADOS mtimes have one-second resolution
      BlobNamespace names = ((BlobFileSystem) fs).namespace();
      // Its lease (a day) keeps the data of a writer that may only be idle...
      OrphanSweeper.Report now = new OrphanSweeper(names).sweep(Duration.ofMillis(1), false);
      assertEquals(List.of(), now.orphanFileIds(), now.toString());
      assertEquals(1, now.heldByWriters(), now.toString());
      // ...and a day later it is the sweeper's.
      Clock dayLater = Clock.offset(Clock.systemUTC(), Duration.ofDays(1).plusMinutes(1));
      OrphanSweeper.Report r = new OrphanSweeper(names, OrphanSweeper.DEFAULT_LOCK_HOLD, dayLater)
          .sweep(Duration.ofMillis(1), false);
      assertEquals(1, r.orphanFileIds().size(), r.toString());
      assertTrue(r.orphanBytes() >= 8L << 20, r.toString());
      assertEquals(r.orphanBlobs(), r.deletedBlobs());
      OrphanSweeper.Report again = new OrphanSweeper(names).sweep(Duration.ofMillis(1), false);
      assertEquals(0, again.dataBlobs(), "nothing left in this namespace");
    }
  }

  @Test
  void capsThatDoNotCoverThePoolGiveAccessDenied() throws Exception {
    CephTestCluster.Env cephx = CephTestCluster.single();
    Configuration c = CephTestCluster.hadoopConf(cephx, "rados-caps", "caps");
    c.set("fs.blob.store.rados-caps.pool", cephx.otherPool());
    // With the name index (the default) the store reads its description at open, so the
    // refusal comes from FileSystem.get; in pure-scan mode too (it checks for an index).
    for (String mode : new String[] {"omap", "scan"}) {
      c.set("fs.blob.store.rados-caps.index", mode);
      IOException e = assertThrows(IOException.class, () -> {
        try (FileSystem fs = FileSystem.newInstance(URI.create("blob://rados-caps/"), c);
            FSDataOutputStream out = fs.create(new Path("/denied"), true)) {
          out.write(new byte[10]);
        }
      }, mode);
      Throwable t = e;
      while (t != null && !(t instanceof AccessDeniedException)) {
        t = t.getCause();
      }
      assertNotNull(t, "an AccessDeniedException in " + e);
    }
  }
}
