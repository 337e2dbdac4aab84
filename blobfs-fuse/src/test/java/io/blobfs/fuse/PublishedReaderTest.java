package io.blobfs.fuse;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.blobfs.namespace.BlobNamespace;
import io.blobfs.namespace.FileWriter;
import io.blobfs.namespace.FsPath;
import io.blobfs.namespace.NamespaceOptions;
import io.blobfs.namespace.StoreCallCounters;
import io.blobfs.store.StoreLimits;
import io.blobfs.store.memory.InMemoryBlobStore;
import java.nio.ByteBuffer;
import java.util.Arrays;
import java.util.Random;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

class PublishedReaderTest {
  private static final int MIB = 1 << 20;
  private final AtomicLong storeReads = new AtomicLong();
  private BlobNamespace ns;
  private byte[] data;

  @BeforeEach
  void setUp() throws Exception {
    StoreCallCounters counters = (counter, delta) -> {
      if (counter.equals(StoreCallCounters.READ)) {
        storeReads.addAndGet(delta);
      }
    };
    ns = new BlobNamespace(new InMemoryBlobStore("reads", new StoreLimits(200, 1L << 30,
        Integer.MAX_VALUE)), new NamespaceOptions(MIB, MIB, 4 * MIB, 0, false, 100), counters);
    data = new byte[6 * MIB + 12345];
    new Random(7).nextBytes(data);
    FileWriter w = ns.create(FsPath.parse("/f"), false);
    w.write(data, 0, data.length);
    w.close();
  }

  private PublishedReader open() throws Exception {
    return new PublishedReader(ns.open(FsPath.parse("/f")));
  }

  /** A read as the kernel asks it: into a direct reply buffer; returns the bytes. */
  private static byte[] read(PublishedReader r, long offset, int len) throws Exception {
    ByteBuffer dst = ByteBuffer.allocateDirect(len);
    r.read(offset, dst);
    byte[] got = new byte[dst.position()];
    dst.flip().get(got);
    return got;
  }

  private byte[] expected(long offset, int len) {
    int from = (int) Math.min(offset, data.length);
    return Arrays.copyOfRange(data, from, (int) Math.min(data.length, offset + len));
  }

  @Test
  void sequentialKernelRequestsAreServedByFewLargeStoreReads() throws Exception {
    PublishedReader r = open();
    storeReads.set(0);
    int requests = 0;
    for (long off = 0; off < data.length; off += 128 << 10) {
      assertArrayEquals(expected(off, 128 << 10), read(r, off, 128 << 10), "at " + off);
      requests++;
    }
    assertEquals(0, read(r, data.length, 4096).length); // end of file
    // one store call per kernel request (53) without read-ahead; 1 MiB chunks with it
    assertTrue(storeReads.get() <= 9, storeReads.get() + " store reads for " + requests
        + " requests");
    r.close();
  }

  @Test
  void requestsOutOfOrderFromSeveralThreadsReadTheRightBytes() throws Exception {
    PublishedReader r = open();
    long[] offsets = {0, 256 << 10, 128 << 10, 512 << 10, 384 << 10, 3 * MIB, 5L * MIB,
        64 << 10, 640 << 10, 6L * MIB, 2L * MIB};
    for (long off : offsets) {
      assertArrayEquals(expected(off, 128 << 10), read(r, off, 128 << 10), "at " + off);
    }
    r.close();
  }

  /**
   * The kernel sends a sequential reader's requests (its read-ahead, async_read) to the
   * mount's threads at once, which take them in any order: a request just below one
   * already served must find its chunk still held, not cost a store call of its own.
   */
  @Test
  void sequentialRequestsServedOutOfOrderCostNoExtraStoreReads() throws Exception {
    PublishedReader r = open();
    storeReads.set(0);
    long[] offsets = {0, MIB, 3L * MIB, 2L * MIB, 5L * MIB, 4L * MIB, 6L * MIB};
    for (long off : offsets) {
      assertArrayEquals(expected(off, MIB), read(r, off, MIB), "at " + off);
    }
    // the first request alone (not yet known to be sequential), then the six 1 MiB
    // chunks of the read-ahead from 1 MiB on, each fetched once
    assertEquals(7, storeReads.get(), "store reads");
    r.close();
  }

  @Test
  void randomReadsFetchNothingAhead() throws Exception {
    PublishedReader r = open();
    storeReads.set(0);
    Random rnd = new Random(3);
    int reads = 200;
    for (int i = 0; i < reads; i++) {
      long off = (long) rnd.nextInt(data.length / 8192) * 8192;
      assertArrayEquals(expected(off, 8192), read(r, off, 8192), "at " + off);
    }
    // a chance pair of adjacent reads may start a read-ahead; never one per read
    assertTrue(storeReads.get() < reads + 20, storeReads.get() + " store reads");
    r.close();
  }
}
