package io.blobfs.hadoop;

import static org.junit.jupiter.api.Assertions.*;

import io.blobfs.namespace.BlobNamespace;
import io.blobfs.namespace.ChunkBuffers;
import io.blobfs.namespace.FileWriter;
import io.blobfs.namespace.FsPath;
import io.blobfs.namespace.NamespaceOptions;
import io.blobfs.namespace.StoreCallCounters;
import io.blobfs.store.FaultInjectingBlobStore;
import io.blobfs.store.InProcess;
import io.blobfs.store.StoreLimits;
import io.blobfs.store.memory.InMemoryBlobStore;
import java.io.IOException;
import java.util.Random;
import org.junit.jupiter.api.Test;

/**
 * A file system's streams read ahead into buffers they share: a stream opened after
 * another one closed finds the buffers that one left (a fresh direct buffer costs a page
 * fault per page, 8,192 per stream with the default 32 MiB read-ahead).
 */
class SharedReadAheadBuffersTest {
  private static final int CHUNK = 64 << 10;
  private static final FsPath FILE = FsPath.parse("/f");

  private final InMemoryBlobStore memory =
      new InMemoryBlobStore("shared", new StoreLimits(1024, 1L << 30, Integer.MAX_VALUE));
  // Not in-process, as a Týr server or RADOS: streams read ahead instead of reading in place.
  private final BlobNamespace ns = new BlobNamespace(
      FaultInjectingBlobStore.over(memory, InProcess.class).store(),
      new NamespaceOptions(1 << 20, 4 << 10, 64 << 10, 1024, false, 100),
      StoreCallCounters.NONE);
  private final ChunkBuffers shared = ChunkBuffers.forReadAhead(CHUNK, 4L * CHUNK);

  private BlobInputStream open() throws IOException {
    return new BlobInputStream(ns.open(FILE), ReadPolicy.SEQUENTIAL, CHUNK, 4L * CHUNK,
        4 << 10, BlobStatistics.forFileSystem(), null, shared);
  }

  private byte[] file() throws IOException {
    byte[] data = new byte[1_000_003];
    new Random(3).nextBytes(data);
    try (FileWriter w = ns.create(FILE, true)) {
      w.write(data, 0, data.length);
    }
    return data;
  }

  @Test
  void aClosedStreamLeavesItsBuffersToTheNext() throws IOException {
    byte[] data = file();
    long allocated = -1;
    for (int stream = 0; stream < 3; stream++) {
      byte[] back = new byte[data.length];
      try (BlobInputStream in = open()) {
        for (int pos = 0; pos < data.length; ) {
          pos += in.read(back, pos, Math.min(100_000, data.length - pos));
        }
        assertEquals(-1, in.read(new byte[1], 0, 1));
      }
      assertArrayEquals(data, back, "stream " + stream);
      if (allocated < 0) {
        allocated = shared.allocated();
        assertTrue(allocated > 0 && allocated <= 5, allocated + " buffers allocated");
      }
      // later streams read into the first one's buffers and gave them back
      assertEquals(allocated, shared.allocated(), "stream " + stream + " allocated buffers");
      assertEquals(allocated, shared.kept(), "stream " + stream);
    }
  }

  @Test
  void streamsOpenTogetherNeverShareABufferTheyStillRead() throws IOException {
    byte[] data = file();
    byte[] a = new byte[data.length];
    byte[] b = new byte[data.length];
    try (BlobInputStream in1 = open(); BlobInputStream in2 = open()) {
      // alternating reads of odd sizes: each stream gives buffers back as it passes its
      // chunks and takes them again ahead; the other one must never see them half-read
      int p1 = 0;
      int p2 = 0;
      Random sizes = new Random(5);
      while (p1 < data.length || p2 < data.length) {
        if (p1 < data.length) {
          p1 += in1.read(a, p1, Math.min(1 + sizes.nextInt(90_000), data.length - p1));
        }
        if (p2 < data.length) {
          p2 += in2.read(b, p2, Math.min(1 + sizes.nextInt(30_000), data.length - p2));
        }
      }
    }
    assertArrayEquals(data, a);
    assertArrayEquals(data, b);
    assertTrue(shared.kept() <= 5, shared.kept() + " kept, above one read-ahead's bound");
  }
}
