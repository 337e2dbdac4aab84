package io.blobfs.hadoop;

import static org.apache.hadoop.fs.statistics.StreamStatisticNames.STREAM_WRITE_EXCEPTIONS;
import static org.junit.jupiter.api.Assertions.*;

import io.blobfs.namespace.BlobNamespace;
import io.blobfs.namespace.FileWriter;
import io.blobfs.namespace.FsPath;
import io.blobfs.namespace.NamespaceOptions;
import io.blobfs.namespace.StoreCallCounters;
import io.blobfs.store.FaultInjectingBlobStore;
import io.blobfs.store.FaultInjectingBlobStore.Op;
import io.blobfs.store.StoreLimits;
import io.blobfs.store.memory.InMemoryBlobStore;
import java.io.IOException;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.statistics.impl.IOStatisticsStore;
import org.junit.jupiter.api.Test;

/**
 * A store write that fails while gathered bytes are handed to the writer, at close or
 * when the array overflows: the stream keeps the failure, so later writes and close throw
 * it, close gives the writer's data blobs and lock up (nothing is left for the sweeper),
 * nothing is published, and the failure is counted once.
 */
class OutputStreamFailureTest {
  private static final FsPath FILE = FsPath.parse("/f");
  private static final int GATHER = 64 << 10;

  private final InMemoryBlobStore memory =
      new InMemoryBlobStore("failures", new StoreLimits(1024, 1L << 30, Integer.MAX_VALUE));
  private final FaultInjectingBlobStore faults = FaultInjectingBlobStore.over(memory);
  // Inline 0 and 4 KiB buffers: every hand-over to the writer is a store write.
  private final BlobNamespace ns = new BlobNamespace(faults.store(),
      new NamespaceOptions(1 << 20, 4 << 10, 4 << 10, 0, false, 100), StoreCallCounters.NONE);
  private final IOStatisticsStore fsStats = BlobStatistics.forFileSystem();

  private BlobOutputStream create() throws IOException {
    FileWriter writer = ns.create(FILE, true);
    return new BlobOutputStream(writer, new Path("blob://failures/f"), fsStats, null, true,
        GATHER);
  }

  private static void writeSmall(BlobOutputStream out, int bytes) throws IOException {
    byte[] chunk = new byte[10];
    for (int i = 0; i < bytes; i += chunk.length) {
      out.write(chunk, 0, chunk.length);
    }
  }

  private long exceptions(BlobOutputStream out) {
    return out.getIOStatistics().counters().get(STREAM_WRITE_EXCEPTIONS);
  }

  @Test
  void aFailureSendingTheGatheredBytesAtCloseAbortsTheWriter() throws IOException {
    int before = memory.blobCount();
    BlobOutputStream out = create();
    writeSmall(out, 10_000); // all of it gathered: no store write yet
    faults.on(Op.WRITE).always().failBefore();

    assertThrows(IOException.class, out::close);

    assertEquals(before, memory.blobCount(), "no data blob or lock left behind");
    assertTrue(ns.probe(FILE).isEmpty());
    assertEquals(1, exceptions(out));
    assertEquals(1, fsStats.counters().get(STREAM_WRITE_EXCEPTIONS));
    assertThrows(IOException.class, () -> out.write(new byte[5], 0, 5));
    assertThrows(IOException.class, () -> out.write(1));
    out.close(); // a second close does nothing, as on any closed stream
    assertTrue(ns.probe(FILE).isEmpty());
  }

  @Test
  void aFailureWhenTheArrayOverflowsIsRethrownByLaterWritesAndClose() throws IOException {
    int before = memory.blobCount();
    BlobOutputStream out = create();
    faults.on(Op.WRITE).always().failBefore();

    assertThrows(IOException.class, () -> writeSmall(out, GATHER + 10));
    // The bytes of the failed drain are gone from the stream: nothing may be written on
    // as if they had been sent.
    assertThrows(IOException.class, () -> out.write(new byte[5], 0, 5));
    assertThrows(IOException.class, () -> out.write(1));
    faults.clear(); // the store is back; the file must still not be published
    assertThrows(IOException.class, out::close);

    assertTrue(ns.probe(FILE).isEmpty());
    assertEquals(before, memory.blobCount(), "no data blob or lock left behind");
    assertEquals(1, exceptions(out));
  }
}
