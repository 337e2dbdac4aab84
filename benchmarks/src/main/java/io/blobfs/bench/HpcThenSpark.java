package io.blobfs.bench;

import java.io.DataInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import org.apache.spark.api.java.JavaSparkContext;
import org.apache.spark.input.PortableDataStream;
import org.apache.spark.sql.SparkSession;
import scala.Tuple2;

/**
 * The second half of the main job's HPC-then-Spark step (scripts/main-job.sh): the MPI-IO
 * program (blobfs-fuse/src/test/mpi/mpiio.c) wrote through a FUSE mount of the main job's
 * default store; this Spark job reads that output through {@code blob://} and checks
 * every 8-byte word against the function the ranks wrote it with, so a block misplaced,
 * torn, stale or missing fails the job.
 *
 * <pre>
 *   HpcThenSpark --data-dir DIR --dir /hpc --ranks 4 --mib 4 --block 1048576
 * </pre>
 *
 * {@code --data-dir}: the embedded Týr node's log directory (the store {@code blob://main/});
 * {@code --dir}: where the program wrote {@code mpiio-n1} (N-to-1, strided) and
 * {@code mpiio-nn.RANK} (N-to-N). Exits non-zero on any mismatch.
 */
public final class HpcThenSpark {
  private HpcThenSpark() {}

  public static Map<String, String> defaults() {
    Map<String, String> d = new LinkedHashMap<>();
    d.put("data-dir", "target/main-job-tyr");
    d.put("dir", "/hpc");
    d.put("ranks", "4");
    d.put("mib", "4");
    d.put("block", "1048576");
    d.put("master", "local[2]");
    return d;
  }

  public static void main(String[] args) throws Exception {
    Args a = Args.parse(args, defaults());
    int ranks = (int) a.getLong("ranks");
    long perRank = a.getLong("mib") << 20;
    int block = (int) a.getLong("block");
    String base = "blob://main" + a.get("dir");
    SparkSession.Builder b = SparkSession.builder().appName("hpc-then-spark")
        .master(a.get("master"));
    MainJob.sparkConf().forEach(b::config);
    b.config("spark.hadoop.fs.blob.impl", "io.blobfs.hadoop.BlobFileSystem");
    b.config("spark.hadoop.fs.blob.store.main.type", "tyr");
    b.config("spark.hadoop.fs.blob.store.main.embedded-dir",
        java.nio.file.Path.of(a.get("data-dir")).toAbsolutePath().toString());
    long t0 = System.nanoTime();
    try (SparkSession spark = b.getOrCreate()) {
      JavaSparkContext sc = JavaSparkContext.fromSparkContext(spark.sparkContext());
      List<Tuple2<String, long[]>> checked = sc.binaryFiles(base + "/mpiio-*")
          .mapToPair(f -> new Tuple2<>(name(f._1()), check(name(f._1()), f._2(), ranks, block)))
          .collect();
      Map<String, long[]> byName = new LinkedHashMap<>();
      checked.forEach(t -> byName.put(t._1(), t._2()));
      StringBuilder wrong = new StringBuilder();
      expect(byName, "mpiio-n1", ranks * perRank, wrong);
      for (int r = 0; r < ranks; r++) {
        expect(byName, "mpiio-nn." + r, perRank, wrong);
      }
      if (wrong.length() > 0 || byName.size() != ranks + 1) {
        throw new IllegalStateException("HPC-then-Spark: wrong output under " + base + ": "
            + wrong + " (files: " + byName.keySet() + ")");
      }
      System.out.printf(Locale.ROOT, "HPC-then-Spark: Spark read the MPI-IO output through"
          + " %s (%d files, %d MiB), every word as the %d ranks wrote it (%.1f s)%n", base,
          byName.size(), 2 * ranks * perRank >> 20, ranks, (System.nanoTime() - t0) / 1e9);
    }
  }

  private static String name(String uri) {
    return uri.substring(uri.lastIndexOf('/') + 1);
  }

  private static void expect(Map<String, long[]> got, String name, long length,
      StringBuilder wrong) {
    long[] r = got.get(name);
    if (r == null) {
      wrong.append(name).append(" missing; ");
    } else if (r[0] != length || r[1] != 0) {
      wrong.append(String.format(Locale.ROOT, "%s: %d bytes (want %d), %d wrong words; ",
          name, r[0], length, r[1]));
    }
  }

  /** {bytes read, words that differ from what the writing rank wrote}. */
  static long[] check(String name, PortableDataStream file, int ranks, int block)
      throws IOException {
    boolean shared = name.equals("mpiio-n1");
    int fileRank = shared ? -1 : Integer.parseInt(name.substring(name.lastIndexOf('.') + 1));
    byte[] buf = new byte[block];
    long bytes = 0;
    long bad = 0;
    try (DataInputStream in = file.open()) {
      for (long k = 0; ; k++) {
        int n = readFully(in, buf);
        bytes += n;
        int rank = shared ? (int) (k % ranks) : fileRank;
        long b = shared ? k / ranks : k;
        ByteBuffer words = ByteBuffer.wrap(buf, 0, n).order(ByteOrder.LITTLE_ENDIAN);
        for (long i = 0; words.remaining() >= 8; i++) {
          bad += words.getLong() != word(rank, b, i) ? 1 : 0;
        }
        if (n < block) {
          return new long[] {bytes, bad + (n % 8 == 0 ? 0 : 1)};
        }
      }
    }
  }

  private static int readFully(InputStream in, byte[] buf) throws IOException {
    int n = 0;
    while (n < buf.length) {
      int r = in.read(buf, n, buf.length - n);
      if (r < 0) {
        break;
      }
      n += r;
    }
    return n;
  }

  /** mpiio.c's word(): each 8-byte word a function of (rank, block, word). */
  static long word(int rank, long block, long i) {
    long x = ((long) rank << 56) ^ (block << 24) ^ i;
    x ^= x >>> 31;
    x *= 0x9E3779B97F4A7C15L;
    return x ^ (x >>> 29);
  }
}
