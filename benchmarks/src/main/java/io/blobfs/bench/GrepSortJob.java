package io.blobfs.bench;

import io.blobfs.bench.workloads.Committer;
import io.blobfs.bench.workloads.Grep;
import io.blobfs.bench.workloads.Sort;
import io.blobfs.bench.workloads.TextDataGenerator;
import java.io.IOException;
import java.io.OutputStream;
import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;
import java.util.Properties;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.FileUtil;
import org.apache.hadoop.fs.LocalFileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.spark.SparkConf;
import org.apache.spark.api.java.JavaSparkContext;

/**
 * A job for {@code spark-submit}: generates text under {@code --base}, runs Grep and Sort
 * on it, and copies both outputs to {@code --copy-to} (a local {@code file://} directory,
 * since an in-memory store ends with its JVM). It names BlobFS only through paths and
 * configuration, so it runs with BlobFS added by {@code --jars} alone:
 *
 * <pre>
 * spark-submit --master local[2] --class io.blobfs.bench.GrepSortJob \
 *   --jars blobfs-bundle.jar --conf spark.hadoop.fs.blob.impl=io.blobfs.hadoop.BlobFileSystem \
 *   blobfs-benchmarks.jar --base blob://submit/run1 --copy-to file:///tmp/out \
 *   [--size 4m] [--files 4] [--partitions 2] [--seed 1] [--pattern ceph] [--committer classic]
 * </pre>
 *
 * Writes under {@code --copy-to}: {@code grep/} and {@code sort/} (part files and
 * {@code _SUCCESS} as committed), and {@code job.properties} (input summary, the file system
 * class that served {@code --base}, and its storage counters).
 */
public final class GrepSortJob {
  private GrepSortJob() {}

  static Map<String, String> defaults() {
    Map<String, String> d = new LinkedHashMap<>();
    d.put("base", null);
    d.put("copy-to", null);
    d.put("size", "4m");
    d.put("files", "4");
    d.put("partitions", "2");
    d.put("seed", "1");
    d.put("pattern", "ceph");
    d.put("committer", "classic");
    return d;
  }

  public static void main(String[] args) throws IOException {
    Args a = Args.parse(args, defaults());
    TextDataGenerator.Spec spec =
        new TextDataGenerator.Spec(a.getBytes("size"), a.getInt("files"), a.getLong("seed"));
    Committer committer = Committer.parse(a.get("committer"));

    try (JavaSparkContext sc = new JavaSparkContext(new SparkConf().setAppName("blobfs-grep-sort"))) {
      Configuration hconf = sc.hadoopConfiguration();
      Path base = new Path(a.get("base"));
      FileSystem fs = base.getFileSystem(hconf);
      base = fs.makeQualified(base);
      Path input = new Path(base, "input");
      Path grep = new Path(base, "grep");
      Path sort = new Path(base, "sort");

      StorageCounters before = StorageCounters.of(fs);
      TextDataGenerator.Summary summary = TextDataGenerator.generate(fs, input, spec);
      Grep.run(sc, input.toString(), grep.toString(), a.get("pattern"), committer);
      Sort.run(sc, input.toString(), sort.toString(), a.getInt("partitions"), committer);
      StorageCounters calls = StorageCounters.of(fs).minus(before);

      Path copyTo = new Path(a.get("copy-to"));
      FileSystem dstFs = copyTo.getFileSystem(hconf);
      if (dstFs instanceof LocalFileSystem local) {
        dstFs = local.getRawFileSystem(); // no .crc side files next to the copies
      }
      dstFs.mkdirs(copyTo);
      copy(fs, grep, dstFs, new Path(copyTo, "grep"), hconf);
      copy(fs, sort, dstFs, new Path(copyTo, "sort"), hconf);

      Properties p = new Properties();
      p.setProperty("base", base.toString());
      p.setProperty("fs.class", fs.getClass().getName());
      p.setProperty("committer", committer.id());
      p.setProperty("spark.version", sc.version());
      p.setProperty("input.files", Integer.toString(summary.files()));
      p.setProperty("input.lines", Long.toString(summary.lines()));
      p.setProperty("input.bytes", Long.toString(summary.bytes()));
      calls.asMap().forEach((k, v) -> p.setProperty("counter." + k, Long.toString(v)));
      try (OutputStream o = dstFs.create(new Path(copyTo, "job.properties"), true)) {
        p.store(o, "GrepSortJob");
      }
      System.out.printf(Locale.ROOT, "GrepSortJob: %s on %s (%s), committer %s; results in %s%n",
          summary, base, fs.getClass().getName(), committer.id(), copyTo);
      System.out.println("GrepSortJob storage calls: " + calls.nonZero());
    }
  }

  private static void copy(FileSystem srcFs, Path src, FileSystem dstFs, Path dst,
      Configuration conf) throws IOException {
    if (!FileUtil.copy(srcFs, src, dstFs, dst, false, true, conf)) {
      throw new IOException("copy of " + src + " to " + dst + " failed");
    }
  }
}
