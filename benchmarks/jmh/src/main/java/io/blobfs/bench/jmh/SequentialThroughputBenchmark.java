package io.blobfs.bench.jmh;

import io.blobfs.store.Futures;
import io.blobfs.store.StoreOptions;
import io.blobfs.store.memory.InMemoryBlobStore;
import io.blobfs.store.memory.InMemoryBlobStoreProvider;
import java.io.IOException;
import java.net.URI;
import java.nio.ByteBuffer;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FSDataInputStream;
import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;
import org.openjdk.jmh.infra.Blackhole;

/**
 * Sequential write and read of the same bytes through {@code blob://} (BlobFileSystem on
 * the in-memory store) and through the store SPI directly, in the same stripe layout: the
 * difference is what the namespace layer and the Hadoop streams cost.
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.SingleShotTime)
@OutputTimeUnit(TimeUnit.MILLISECONDS)
@Warmup(iterations = 5)
@Measurement(iterations = 20)
@Fork(value = 1, jvmArgsAppend = {"-Xmx6g", "-Xms6g", "-XX:+AlwaysPreTouch",
    "-XX:G1HeapRegionSize=32m"})
public class SequentialThroughputBenchmark {
  static final String STORE = "jmh";
  static final long STRIPE = 64L << 20;

  @Param("1g")
  public String size;

  /** Application I/O size: 1 MiB (large, sent straight through) and 64 KiB (buffered). */
  @Param({"1m", "64k"})
  public String ioSize;

  private long bytes;
  private int io;
  private byte[] chunk;
  private FileSystem fs;
  private InMemoryBlobStore store;
  private Path readFile;
  private String readFileId;
  private int writes;

  @Setup(Level.Trial)
  public void setUp() throws IOException {
    bytes = StoreOptions.parseBytes("size", size);
    io = (int) StoreOptions.parseBytes("ioSize", ioSize);
    chunk = new byte[io];
    new Random(1).nextBytes(chunk);
    Configuration conf = new Configuration();
    conf.set("fs.blob.impl", "io.blobfs.hadoop.BlobFileSystem");
    conf.set("fs.blob.stripe.size", Long.toString(STRIPE));
    fs = FileSystem.newInstance(URI.create("blob://" + STORE + "/"), conf);
    store = InMemoryBlobStoreProvider.named(STORE);
    readFile = new Path("/read-fixture");
    writeThroughFs(readFile);
    // The fixture's data blobs are what the SPI side reads: the very same bytes.
    readFileId = ((io.blobfs.hadoop.BlobFileStatus) fs.getFileStatus(readFile)).getEtag();
    // Both sides' forks run both paths once, so that the JIT compiles the store's calls
    // from the same profile in each: a fork that only ever saw the SPI's calls compiled
    // them about 10% faster at 1 MiB (73 against 81.5 ms a GiB, either path, in one JVM).
    readBlobFs(new Blackhole("Today's password is swordfish. I understand instantiating Blackholes directly is dangerous."));
    readSpi(new Blackhole("Today's password is swordfish. I understand instantiating Blackholes directly is dangerous."));
  }

  @TearDown(Level.Trial)
  public void tearDown() throws IOException {
    fs.close();
    InMemoryBlobStoreProvider.drop(STORE);
  }

  @TearDown(Level.Invocation)
  public void dropWritten() throws IOException {
    fs.delete(new Path("/written"), true);
    for (long s = 0; s < stripes(); s++) {
      store.delete("spi/" + s);
    }
    // Every operation allocates a whole file's worth of store memory: start each one from
    // a collected heap so that neither side pays for the other's garbage.
    System.gc();
  }

  private long stripes() {
    return (bytes + STRIPE - 1) / STRIPE;
  }

  private void writeThroughFs(Path path) throws IOException {
    try (FSDataOutputStream out = fs.create(path, true)) {
      for (long done = 0; done < bytes; done += io) {
        out.write(chunk, 0, (int) Math.min(io, bytes - done));
      }
    }
  }

  @Benchmark
  public void writeBlobFs() throws IOException {
    writeThroughFs(new Path("/written/file" + (writes++)));
  }

  @Benchmark
  public void writeSpi() throws IOException {
    for (long done = 0; done < bytes; done += io) {
      int n = (int) Math.min(io, bytes - done);
      Futures.await(store.write("spi/" + done / STRIPE, done % STRIPE,
          ByteBuffer.wrap(chunk, 0, n)));
    }
  }

  @Benchmark
  public void readBlobFs(Blackhole bh) throws IOException {
    byte[] buf = new byte[io];
    long total = 0;
    try (FSDataInputStream in = fs.open(readFile)) {
      int n;
      while ((n = in.read(buf, 0, buf.length)) > 0) {
        total += n;
      }
    }
    check(total);
    bh.consume(buf);
  }

  @Benchmark
  public void readSpi(Blackhole bh) throws IOException {
    ByteBuffer buf = ByteBuffer.allocate(io);
    long total = 0;
    for (long done = 0; done < bytes; done += io) {
      buf.clear().limit((int) Math.min(io, bytes - done));
      total += Futures.await(store.read("d/" + readFileId + "/" + done / STRIPE,
          done % STRIPE, buf));
    }
    check(total);
    bh.consume(buf);
  }

  private void check(long total) {
    if (total != bytes) {
      throw new IllegalStateException("read " + total + " bytes, expected " + bytes);
    }
  }
}
