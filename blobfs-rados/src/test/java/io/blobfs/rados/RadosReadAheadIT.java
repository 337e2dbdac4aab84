package io.blobfs.rados;

import static org.junit.jupiter.api.Assertions.*;

import io.blobfs.hadoop.BlobFileSystem;
import io.blobfs.namespace.FsPath;
import io.blobfs.namespace.ReadAhead;
import java.io.IOException;
import java.net.URI;
import java.util.Arrays;
import java.util.Random;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FSDataInputStream;
import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * Read-ahead on RADOS, where a store read completes later on a librados thread: seeks
 * that drop chunks still being filled (whose buffers come back to the pool only once
 * librados is done with them) and reads that straddle chunks and stripes must return the
 * file's bytes, and never bytes of a chunk read for another position.
 */
@ExtendWith(CephClusterExtension.class)
class RadosReadAheadIT {
  private static final String STORE = "rados-read-ahead";
  private static CephTestCluster.Env env;

  @BeforeAll
  static void cluster(CephTestCluster.Env cluster) {
    env = cluster;
  }

  private static FileSystem fs() throws IOException {
    Configuration c = CephTestCluster.hadoopConf(env, STORE, "ra-" + System.nanoTime());
    String p = "fs.blob.store." + STORE + ".";
    c.set(p + "stripe.size", "4m");
    c.set(p + "write.buffer.size", "1m");
    c.set(p + "write.max-inflight", "4m");
    c.set(p + "read.buffer.size", "1m");
    c.set(p + "read.ahead", "4m");
    return FileSystem.newInstance(URI.create("blob://" + STORE + "/"), c);
  }

  private static byte[] write(FileSystem fs, Path path, int n) throws IOException {
    byte[] data = new byte[n];
    new Random(n).nextBytes(data);
    try (FSDataOutputStream out = fs.create(path, true)) {
      out.write(data);
    }
    return data;
  }

  @Test
  void seeksWhileChunksAreInFlightReturnTheFileBytes() throws IOException {
    try (FileSystem fs = fs()) {
      // 13 MiB + 1,234 bytes: four stripes, the last partial
      byte[] data = write(fs, new Path("/ra/f"), (13 << 20) + 1234);
      ReadAhead ra = new ReadAhead(
          ((BlobFileSystem) fs).namespace().open(FsPath.parse("/ra/f")), 1 << 20, 4 << 20);
      Random random = new Random(3);
      long pos = 0;
      for (int i = 0; i < 300; i++) {
        if (random.nextInt(4) == 0) {
          pos = random.nextInt(data.length); // drops what is in flight unless inside it
        }
        if (pos >= data.length) {
          pos = 0;
        }
        byte[] got = new byte[1 + random.nextInt(1_500_000)]; // straddles chunks, stripes
        int n = ra.read(pos, got, 0, got.length);
        assertTrue(n > 0 && pos + n <= data.length, n + " at " + pos);
        assertArrayEquals(Arrays.copyOfRange(data, (int) pos, (int) pos + n),
            Arrays.copyOf(got, n), "bytes at " + pos);
        pos += n;
      }
      ra.clear();
    }
  }

  @Test
  void testDfsioReadsOfAMillionBytesSeeEveryByteOnce() throws IOException {
    try (FileSystem fs = fs()) {
      byte[] data = write(fs, new Path("/ra/g"), 10_000_000); // last stripe partial
      byte[] back = new byte[data.length];
      byte[] buf = new byte[1_000_000];
      int at = 0;
      try (FSDataInputStream in = fs.open(new Path("/ra/g"))) {
        int n;
        while ((n = in.read(buf, 0, buf.length)) > 0) {
          System.arraycopy(buf, 0, back, at, n);
          at += n;
        }
      }
      assertEquals(data.length, at);
      assertArrayEquals(data, back);
    }
  }
}
