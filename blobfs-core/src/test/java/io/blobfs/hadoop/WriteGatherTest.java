package io.blobfs.hadoop;

import static org.apache.hadoop.fs.statistics.StreamStatisticNames.STREAM_WRITE_BYTES;
import static org.junit.jupiter.api.Assertions.*;

import io.blobfs.store.memory.InMemoryBlobStoreProvider;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.net.URI;
import java.util.Random;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FSDataInputStream;
import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.statistics.IOStatisticsSupport;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * {@code fs.blob.write.gather.size}: small application writes (Hadoop's text output writes
 * each line and its newline as separate calls) reach the writer gathered, so on the memory
 * store, where every write past the inline threshold is a store call of its own, they are
 * a few store calls instead of one per line; the bytes and the statistics are unchanged.
 */
class WriteGatherTest {
  private static final String STORE = "gather-test";
  private FileSystem fs;

  private FileSystem open(String gatherSize) throws IOException {
    Configuration conf = new Configuration();
    conf.set("fs.blob.impl", BlobFileSystem.class.getName());
    conf.set("fs.blob.inline.threshold", "0");
    if (gatherSize != null) {
      conf.set("fs.blob.write.gather.size", gatherSize);
    }
    fs = FileSystem.newInstance(URI.create("blob://" + STORE + "/"), conf);
    return fs;
  }

  @AfterEach
  void tearDown() throws IOException {
    if (fs != null) {
      fs.close();
    }
    InMemoryBlobStoreProvider.drop(STORE);
  }

  private long storeWrites() {
    Long n = fs.getStorageStatistics().getLong("store_write");
    return n == null ? 0 : n;
  }

  /** 10,000 lines of 10-20 bytes written as text output writes them: line, then newline. */
  private static byte[] writeLines(FSDataOutputStream out) throws IOException {
    ByteArrayOutputStream expected = new ByteArrayOutputStream();
    Random r = new Random(7);
    for (int i = 0; i < 10_000; i++) {
      byte[] line = ("w" + r.nextInt(1_000_000) + " w" + r.nextInt(1_000_000)).getBytes();
      out.write(line, 0, line.length);
      out.write('\n');
      expected.write(line);
      expected.write('\n');
    }
    return expected.toByteArray();
  }

  private byte[] readBack(Path p) throws IOException {
    try (FSDataInputStream in = fs.open(p)) {
      return in.readAllBytes();
    }
  }

  @Test
  void smallWritesAreGatheredIntoFewStoreCalls() throws IOException {
    open(null); // the default, 64 KiB
    Path p = new Path("/lines");
    byte[] expected;
    try (FSDataOutputStream out = fs.create(p)) {
      expected = writeLines(out);
      // Counted at once, gathered or not.
      assertEquals(expected.length, IOStatisticsSupport.retrieveIOStatistics(out).counters()
          .get(STREAM_WRITE_BYTES));
    }
    assertArrayEquals(expected, readBack(p));
    // About 150 KB in 64 KiB arrays: 3 writer calls, each one store write here.
    assertEquals(3, storeWrites());
    assertTrue(FileSystem.getStatistics("blob", BlobFileSystem.class).getBytesWritten()
        >= expected.length);
  }

  @Test
  void gatherSizeZeroHandsEveryCallThrough() throws IOException {
    open("0");
    Path p = new Path("/lines");
    byte[] expected;
    try (FSDataOutputStream out = fs.create(p)) {
      expected = writeLines(out);
    }
    assertArrayEquals(expected, readBack(p));
    assertEquals(20_000, storeWrites());
  }

  @Test
  void writesAroundTheArraysLengthKeepTheirOrder() throws IOException {
    open("4k");
    byte[] data = new byte[100_000];
    new Random(3).nextBytes(data);
    Path p = new Path("/mixed");
    // Lengths below, at and above 4 KiB, so that gathered bytes precede a write that skips
    // the array, and arrays fill exactly and overflow.
    int[] lengths = {1, 4095, 1, 4096, 10, 4097, 3000, 2000, 50_000, 7, 0, 4096};
    int off = 0;
    try (FSDataOutputStream out = fs.create(p)) {
      for (int i = 0; off < data.length; i++) {
        int n = Math.min(lengths[i % lengths.length], data.length - off);
        if (n == 1) {
          out.write(data[off]);
        } else {
          out.write(data, off, n);
        }
        off += n;
      }
      assertEquals(data.length, IOStatisticsSupport.retrieveIOStatistics(out).counters()
          .get(STREAM_WRITE_BYTES));
    }
    assertArrayEquals(data, readBack(p));
  }

  @Test
  void aWriteAfterCloseStillFails() throws IOException {
    open(null);
    FSDataOutputStream out = fs.create(new Path("/closed"));
    out.write(1);
    out.close();
    assertThrows(IOException.class, () -> out.write(new byte[10], 0, 10));
    assertThrows(IOException.class, () -> out.write(2));
    assertArrayEquals(new byte[] {1}, readBack(new Path("/closed")));
  }

  @Test
  void gatheredBytesOfAnAbortedStreamAreNotPublished() throws IOException {
    open(null);
    Path p = new Path("/aborted");
    FSDataOutputStream out = fs.create(p);
    out.write(new byte[100], 0, 100);
    out.abort();
    out.close();
    assertFalse(fs.exists(p));
  }

  @Test
  void aBadGatherSizeNamesItsKey() {
    IllegalArgumentException e =
        assertThrows(IllegalArgumentException.class, () -> open("-1"));
    assertTrue(e.getMessage().contains("fs.blob.write.gather.size"), e.getMessage());
  }
}
