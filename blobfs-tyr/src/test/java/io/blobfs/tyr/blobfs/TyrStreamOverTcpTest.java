package io.blobfs.tyr.blobfs;

import static org.junit.jupiter.api.Assertions.*;

import java.net.URI;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.Random;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FSDataInputStream;
import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.fs.FileSystem;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * blob:// streams on a Týr server over TCP (local reads off), where read-ahead keeps the
 * buffers answers arrive in and copies straight from them into the application's array:
 * TestDFSIO's 1,000,000-byte reads across chunk and stripe boundaries, and seeks that
 * drop chunks still in flight.
 */
class TyrStreamOverTcpTest {
  @TempDir
  Path dir;

  @Test
  void dfsioSizedReadsAndSeeksSeeEveryByte() throws Exception {
    byte[] data = new byte[(12 << 20) + 12_345];
    new Random(11).nextBytes(data);
    try (LocalTyrNode node = new LocalTyrNode(dir)) {
      Configuration c = new Configuration();
      c.set("fs.blob.impl", "io.blobfs.hadoop.BlobFileSystem");
      String p = "fs.blob.store.tcp.";
      c.set(p + "type", "tyr");
      c.set(p + "address", "127.0.0.1:" + node.port());
      c.set(p + "local-reads", "false");
      // 3 MiB stripes and 1 MiB chunks: chunks and application reads straddle both.
      c.set(p + "stripe.size", "3m");
      c.set(p + "read.buffer.size", "1m");
      c.set(p + "read.ahead", "4m");
      try (FileSystem fs = FileSystem.newInstance(URI.create("blob://tcp/"), c)) {
        org.apache.hadoop.fs.Path f = new org.apache.hadoop.fs.Path("/d/f");
        try (FSDataOutputStream out = fs.create(f)) {
          out.write(data);
        }
        byte[] back = new byte[data.length];
        try (FSDataInputStream in = fs.open(f)) {
          int pos = 0;
          for (int n; (n = in.read(back, pos, Math.min(1_000_000, data.length - pos))) > 0; ) {
            pos += n;
            if (pos == data.length) {
              break;
            }
          }
          assertEquals(data.length, pos);
          assertArrayEquals(data, back);
          assertEquals(-1, in.read(back, 0, 1));
          // Short hops forward stay sequential (and read ahead); each lands right.
          for (long at : new long[] {5, 1_048_570, 3_145_727, 3_500_000, 9_000_001}) {
            in.seek(at);
            byte[] some = new byte[777_777];
            in.readFully(some);
            assertArrayEquals(Arrays.copyOfRange(data, (int) at, (int) at + some.length), some,
                "bytes at " + at);
          }
        }
      }
    }
  }
}
