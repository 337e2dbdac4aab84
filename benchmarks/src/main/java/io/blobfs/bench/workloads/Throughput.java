package io.blobfs.bench.workloads;

import java.io.IOException;
import java.io.Serializable;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.stream.IntStream;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FSDataInputStream;
import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.spark.SparkConf;
import org.apache.spark.api.java.JavaSparkContext;

/**
 * The bytes of Hadoop's TestDFSIO as a plain Spark application: one task per file writes
 * {@code SIZE} bytes in application writes of {@value #BUFFER} bytes (TestDFSIO's default
 * {@code -bufferSize}), then one task per file reads them back in reads of the same size and
 * compares every byte with what was written (a mismatch fails the job). Each file's bytes
 * come from its own seed, so no two files are alike.
 *
 * <p>As an application: {@code spark-submit --class io.blobfs.bench.workloads.Throughput JAR
 * DIR FILES SIZE RESULT}: writes {@code DIR/file-I}, reads them, leaves them in place (the
 * caller deletes DIR), and writes to the local file {@code RESULT} two lines,
 * {@code write BYTES NANOS} and {@code read BYTES NANOS}: each phase's Spark job timed on the
 * driver, from its submission to its last task's end (the Spark context's start, the store
 * client's first call and a first, empty Spark job are not in them, as TestDFSIO's exec time
 * leaves out the JVM's start and its control files).
 */
public final class Throughput {
  public static final int BUFFER = 1_000_000;

  private Throughput() {}

  public static void main(String[] args) throws IOException {
    Apps.requireArgs(args, 4, 4, "Throughput DIR FILES SIZE RESULT");
    String dir = args[0];
    int files = Integer.parseInt(args[1]);
    long size = org.apache.hadoop.util.StringUtils.TraditionalBinaryPrefix.string2long(args[2]);
    try (JavaSparkContext sc = new JavaSparkContext(new SparkConf().setAppName("Throughput"))) {
      // spark.hadoop.* settings live in the driver's configuration: the tasks get a copy.
      HadoopConf conf = new HadoopConf(sc.hadoopConfiguration());
      List<Integer> ids = IntStream.range(0, files).boxed().toList();
      // Outside the timed phases, as TestDFSIO's control files are outside its exec time:
      // the store's client opened (a blob:// client's first call loads its network stack,
      // ~0.5 s in a cold JVM; HDFS's its RPC client) and one Spark job run, whose first
      // scheduling loads Spark's own classes. Both are paid once per application on every
      // store alike, and in a 1 GB phase they would pull every ratio towards 1. Local mode:
      // the tasks share the driver's JVM, so its cached FileSystem is theirs.
      Path root = new Path(dir);
      root.getFileSystem(conf.get()).exists(root);
      sc.parallelize(ids, files).map(i -> i).reduce(Integer::sum);
      long t0 = System.nanoTime();
      long written = sc.parallelize(ids, files).map(i -> write(conf, dir, i, size))
          .reduce(Long::sum);
      long t1 = System.nanoTime();
      long read = sc.parallelize(ids, files).map(i -> read(conf, dir, i, size))
          .reduce(Long::sum);
      long t2 = System.nanoTime();
      Files.writeString(java.nio.file.Path.of(args[3]), "write " + written + " " + (t1 - t0)
          + "\nread " + read + " " + (t2 - t1) + "\n", StandardCharsets.UTF_8);
    }
  }

  /** The pattern file {@code i} repeats: {@value #BUFFER} bytes from seed {@code i}. */
  static byte[] pattern(int i) {
    byte[] b = new byte[BUFFER];
    new Random(0x5EEDL + i).nextBytes(b);
    return b;
  }

  static Path file(String dir, int i) {
    return new Path(dir, "file-" + i);
  }

  static long write(HadoopConf conf, String dir, int i, long size) throws IOException {
    byte[] p = pattern(i);
    Path f = file(dir, i);
    FileSystem fs = f.getFileSystem(conf.get());
    try (FSDataOutputStream out = fs.create(f, true)) {
      for (long left = size; left > 0; left -= BUFFER) {
        out.write(p, 0, (int) Math.min(BUFFER, left));
      }
    }
    return size;
  }

  static long read(HadoopConf conf, String dir, int i, long size) throws IOException {
    byte[] p = pattern(i);
    byte[] buf = new byte[BUFFER];
    Path f = file(dir, i);
    FileSystem fs = f.getFileSystem(conf.get());
    long total = 0;
    try (FSDataInputStream in = fs.open(f, BUFFER)) {
      for (int n; (n = in.read(buf, 0, BUFFER)) > 0; ) {
        // Reads may return less than asked: compare against the pattern where they fall.
        int off = (int) (total % BUFFER);
        int first = Math.min(n, BUFFER - off);
        if (!Arrays.equals(buf, 0, first, p, off, off + first)
            || !Arrays.equals(buf, first, n, p, 0, n - first)) {
          throw new IOException(f + ": wrong bytes at offset " + total);
        }
        total += n;
      }
    }
    if (total != size) {
      throw new IOException(f + ": read " + total + " bytes, wrote " + size);
    }
    return total;
  }

  /** A Hadoop configuration that travels to the tasks (Configuration is not serializable). */
  static final class HadoopConf implements Serializable {
    private static final long serialVersionUID = 1L;
    private final HashMap<String, String> entries = new HashMap<>();

    HadoopConf(Configuration c) {
      for (Map.Entry<String, String> e : c) {
        entries.put(e.getKey(), e.getValue());
      }
    }

    Configuration get() {
      Configuration c = new Configuration(false);
      entries.forEach(c::set);
      return c;
    }
  }
}
