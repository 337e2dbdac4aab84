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

  /**
   * This thread's bytes written to blob://: Hadoop's statistics are one object per scheme
   * in the JVM, so only the difference on this thread tells what one stream counted.
   */
  private static long threadBytesWritten() {
    return FileSystem.getStatistics("blob", BlobFileSystem.class).getThreadStatistics()
        .getBytesWritten();
  }

  @Test
  void smallWritesAreGatheredIntoFewStoreCalls() throws IOException {
    open(null); // the default, 64 KiB
    Path p = new Path("/lines");
    byte[] expected;
    long before = threadBytesWritten();
    try (FSDataOutputStream out = fs.create(p)) {
      expected = writeLines(out);
      // Counted at once, gathered or not.
      assertEquals(expected.length, IOStatisticsSupport.retrieveIOStatistics(out).counters()
          .get(STREAM_WRITE_BYTES));
    }
    assertArrayEquals(expected, readBack(p));
    // About 150 KB in 64 KiB arrays: 3 writer calls, each one store write here.
    assertEquals(3, storeWrites());
    assertEquals(expected.length, threadBytesWritten() - before);
  }

  @Test
  void aFileSmallerThanTheArrayIsCountedAtClose() throws IOException {
    open(null);
    Path p = new Path("/small");
    long before = threadBytesWritten();
    FSDataOutputStream out = fs.create(p);
    out.write(new byte[1000], 0, 1000);
    out.write('x');
    assertEquals(0, threadBytesWritten() - before, "still in the array");
    out.close();
    assertEquals(1001, threadBytesWritten() - before);
    assertEquals(1001, readBack(p).length);
  }

  @Test
  void theCallerMayReuseItsArrayAsSoonAsWriteReturns() throws IOException {
    open("4k");
    byte[] data = new byte[50_000];
    new Random(5).nextBytes(data);
    Path p = new Path("/reused");
    byte[] scratch = new byte[5000];
    try (FSDataOutputStream out = fs.create(p)) {
      // Short writes (gathered) and some at least as long as the array (sent through).
      int[] lengths = {10, 300, 4096, 1, 5000, 2000};
      for (int off = 0, i = 0; off < data.length; i++) {
        int n = Math.min(lengths[i % lengths.length], data.length - off);
        System.arraycopy(data, off, scratch, 0, n);
        out.write(scratch, 0, n);
        java.util.Arrays.fill(scratch, (byte) 0x5a); // garbage, were it still referenced
        off += n;
      }
    }
    assertArrayEquals(data, readBack(p));
  }

  @Test
  void hflushInTheMiddleLosesNothing() throws IOException {
    open(null);
    Path p = new Path("/flushed");
    ByteArrayOutputStream expected = new ByteArrayOutputStream();
    try (FSDataOutputStream out = fs.create(p)) {
      expected.write(writeLines(out));
      out.hflush();
      out.hsync();
      expected.write(writeLines(out));
      out.write('!');
      expected.write('!');
    }
    assertArrayEquals(expected.toByteArray(), readBack(p));
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
    int blobs = InMemoryBlobStoreProvider.named(STORE).blobCount();
    FSDataOutputStream out = fs.create(p);
    // More than the array, so that stripes were written before the abort, then some
    // gathered bytes that never left the array.
    for (int i = 0; i < 100; i++) {
      out.write(new byte[1000], 0, 1000);
    }
    assertTrue(storeWrites() > 0);
    out.abort();
    out.close();
    assertFalse(fs.exists(p));
    assertEquals(blobs, InMemoryBlobStoreProvider.named(STORE).blobCount(),
        "the written stripes and the writer's lock are removed");
  }

  /** Heap bytes this thread allocated so far (HotSpot's per-thread counter). */
  private static long allocated() {
    return ((com.sun.management.ThreadMXBean) java.lang.management.ManagementFactory
        .getThreadMXBean()).getThreadAllocatedBytes(Thread.currentThread().getId());
  }

  @Test
  void streamsWithoutShortWritesAllocateNoArray() throws IOException {
    open("16m"); // the largest array, so that allocating it cannot hide in the noise
    fs.create(new Path("/warm-up")).close();
    long before = allocated();
    fs.create(new Path("/_SUCCESS")).close(); // an empty marker file
    long marker = allocated() - before;
    assertTrue(marker < 4 << 20, "an empty file allocated " + marker + " bytes");

    byte[] data = new byte[17 << 20]; // longer than the array: sent through
    before = allocated();
    try (FSDataOutputStream out = fs.create(new Path("/long"))) {
      out.write(data, 0, data.length);
    }
    long longWrite = allocated() - before;
    // The memory store copies what it is given (CopiesOnWrite): 17 MiB, and not 16 more.
    assertTrue(longWrite < data.length + (8 << 20), "allocated " + longWrite + " bytes");
    assertEquals(data.length, readBack(new Path("/long")).length);
  }

  @Test
  void aBadGatherSizeNamesItsKey() {
    IllegalArgumentException e =
        assertThrows(IllegalArgumentException.class, () -> open("-1"));
    assertTrue(e.getMessage().contains("fs.blob.write.gather.size"), e.getMessage());
  }
}
