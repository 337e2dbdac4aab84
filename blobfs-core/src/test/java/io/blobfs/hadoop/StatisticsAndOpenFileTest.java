package io.blobfs.hadoop;

import static org.apache.hadoop.fs.statistics.StoreStatisticNames.*;
import static org.apache.hadoop.fs.statistics.StreamStatisticNames.*;
import static org.junit.jupiter.api.Assertions.*;

import io.blobfs.store.memory.InMemoryBlobStoreProvider;
import java.io.IOException;
import java.net.URI;
import java.util.Arrays;
import java.util.HashMap;
import java.util.Map;
import java.util.Random;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.BlockLocation;
import org.apache.hadoop.fs.FSDataInputStream;
import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.LocatedFileStatus;
import org.apache.hadoop.fs.Options.OpenFileOptions;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.RemoteIterator;
import org.apache.hadoop.fs.StorageStatistics;
import org.apache.hadoop.fs.statistics.IOStatistics;
import org.apache.hadoop.fs.statistics.IOStatisticsSupport;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** The counters behind the paper's storage-call figures, and openFile's options. */
class StatisticsAndOpenFileTest {
  private static final String STORE = "stats-test";
  private FileSystem fs;

  @BeforeEach
  void setUp() throws IOException {
    Configuration conf = new Configuration();
    conf.set("fs.blob.impl", BlobFileSystem.class.getName());
    conf.set("fs.blob.stripe.size", "64k");
    fs = FileSystem.newInstance(URI.create("blob://" + STORE + "/"), conf);
  }

  @AfterEach
  void tearDown() throws IOException {
    fs.close();
    InMemoryBlobStoreProvider.drop(STORE);
  }

  private Map<String, Long> counters() {
    Map<String, Long> m = new HashMap<>();
    StorageStatistics s = fs.getStorageStatistics();
    s.getLongStatistics().forEachRemaining(l -> m.put(l.getName(), l.getValue()));
    return m;
  }

  private static byte[] data(int n) {
    byte[] b = new byte[n];
    new Random(n).nextBytes(b);
    return b;
  }

  @Test
  void everyHadoopAndStoreCallIsCounted() throws IOException {
    byte[] bytes = data(200_000); // 4 stripes of 64 KiB
    try (FSDataOutputStream out = fs.create(new Path("/in/a"))) {
      out.write(bytes);
    }
    fs.mkdirs(new Path("/out"));
    fs.getFileStatus(new Path("/in/a"));
    fs.listStatus(new Path("/in"));
    byte[] back = new byte[bytes.length];
    try (FSDataInputStream in = fs.open(new Path("/in/a"))) {
      in.readFully(0, back);
    }
    assertArrayEquals(bytes, back);
    assertTrue(fs.rename(new Path("/in/a"), new Path("/in/b")));
    assertTrue(fs.delete(new Path("/in"), true));

    Map<String, Long> c = counters();
    assertEquals(1, c.get(OP_CREATE));
    assertEquals(1, c.get(OP_MKDIRS));
    assertEquals(1, c.get(OP_GET_FILE_STATUS));
    assertEquals(1, c.get(OP_LIST_STATUS));
    assertEquals(1, c.get(OP_OPEN));
    assertEquals(1, c.get(OP_RENAME));
    assertEquals(1, c.get(OP_DELETE));
    assertEquals(bytes.length, c.get(STREAM_WRITE_BYTES));
    assertEquals(bytes.length, c.get(STREAM_READ_BYTES));
    assertEquals(4, c.get("store_write"), "one write per 64 KiB stripe");
    // The memory store is transactional: the rename and the directory delete are one
    // commit each; only the 4 data stripes are deleted one by one, and the writer's lock
    // on them (released at close).
    assertEquals(2, c.get("store_commit"));
    assertEquals(5, c.get("store_delete"));
    assertTrue(c.get("store_bytes_written") >= bytes.length);
    assertTrue(c.get("store_bytes_read") >= bytes.length);
    // The older per-scheme statistics Spark reports as task input/output.
    FileSystem.Statistics legacy = FileSystem.getStatistics("blob", BlobFileSystem.class);
    assertTrue(legacy.getBytesRead() >= bytes.length);
    assertTrue(legacy.getBytesWritten() >= bytes.length);
  }

  @Test
  void streamsCarryTheirOwnIoStatistics() throws IOException {
    Path p = new Path("/f");
    FSDataOutputStream out = fs.create(p);
    out.write(data(1000));
    IOStatistics outStats = IOStatisticsSupport.retrieveIOStatistics(out);
    assertEquals(1000, outStats.counters().get(STREAM_WRITE_BYTES));
    out.close();
    try (FSDataInputStream in = fs.open(p)) {
      in.read(new byte[10]);
      in.seek(500);
      in.read(new byte[10]);
      IOStatistics inStats = IOStatisticsSupport.retrieveIOStatistics(in);
      assertEquals(20, inStats.counters().get(STREAM_READ_BYTES));
      assertEquals(1, inStats.counters().get(STREAM_READ_SEEK_OPERATIONS));
    }
  }

  @Test
  void openFileWithOurStatusSkipsTheMetadataRead() throws Exception {
    Path p = new Path("/big");
    byte[] bytes = data(300_000);
    try (FSDataOutputStream out = fs.create(p)) {
      out.write(bytes);
    }
    FileStatus st = fs.getFileStatus(p);
    long readsBefore = counters().get("store_read");
    byte[] back = new byte[bytes.length];
    try (FSDataInputStream in = fs.openFile(p).withFileStatus(st)
        .opt(OpenFileOptions.FS_OPTION_OPENFILE_READ_POLICY, "random, sequential")
        .build().get()) {
      in.readFully(0, back);
    }
    assertArrayEquals(bytes, back);
    long reads = counters().get("store_read") - readsBefore;
    assertEquals(5, reads, "only the 5 stripe reads (300000 bytes / 64 KiB), no record read");
  }

  @Test
  void openFileRejectsUnknownMandatoryKeys() throws IOException {
    Path p = new Path("/f");
    fs.create(p).close();
    assertThrows(IllegalArgumentException.class,
        () -> fs.openFile(p).must("fs.option.openfile.no-such-option", "x").build());
  }

  @Test
  void listFilesReturnsLocatedStatusesCoveringEveryStripe() throws IOException {
    byte[] bytes = data(150_000);
    try (FSDataOutputStream out = fs.create(new Path("/d/e/f"))) {
      out.write(bytes);
    }
    RemoteIterator<LocatedFileStatus> it = fs.listFiles(new Path("/d"), true);
    assertTrue(it.hasNext());
    LocatedFileStatus f = it.next();
    assertFalse(it.hasNext());
    BlockLocation[] blocks = f.getBlockLocations();
    assertEquals(3, blocks.length);
    assertEquals(Arrays.asList(0L, 65536L, 131072L),
        Arrays.stream(blocks).map(BlockLocation::getOffset).toList());
    assertEquals(bytes.length, Arrays.stream(blocks).mapToLong(BlockLocation::getLength).sum());
    assertArrayEquals(new String[] {"localhost"}, blocks[0].getHosts());
    assertEquals(65536, fs.getFileStatus(new Path("/d/e/f")).getBlockSize());
    assertEquals(65536, fs.getDefaultBlockSize(new Path("/")));
  }
}
