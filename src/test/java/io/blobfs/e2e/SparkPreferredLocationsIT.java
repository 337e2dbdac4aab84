package io.blobfs.e2e;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.blobfs.rados.CephClusterExtension;
import io.blobfs.rados.CephClusterExtension.Cluster;
import io.blobfs.rados.CephTestCluster;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.EtagSource;
import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.io.LongWritable;
import org.apache.hadoop.io.Text;
import org.apache.hadoop.mapred.FileSplit;
import org.apache.hadoop.mapred.TextInputFormat;
import org.apache.spark.Partition;
import org.apache.spark.SparkConf;
import org.apache.spark.api.java.JavaSparkContext;
import org.apache.spark.rdd.HadoopPartition;
import org.apache.spark.rdd.RDD;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import scala.jdk.javaapi.CollectionConverters;

/**
 * Spark schedules by the hosts BlobFS reports: on the multi-OSD cluster (CRUSH hosts
 * host-a/b/c), the preferred locations of every input partition of a multi-stripe
 * {@code blob://} file are exactly the host of that stripe's RADOS object, as the monitor
 * itself places it ({@code ceph osd map}, then {@code ceph osd find} for the OSD's host).
 */
@ExtendWith(CephClusterExtension.class)
@Cluster(layout = "multi")
class SparkPreferredLocationsIT {
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final String STORE = "rados-loc";
  private static final int STRIPE = 64 << 10;

  private static CephTestCluster.Env env;
  private static JavaSparkContext sc;
  private static String namespace;

  @BeforeAll
  static void start(CephTestCluster.Env cluster) {
    env = cluster;
    sc = new JavaSparkContext(new SparkConf()
        .setMaster("local[2]")
        .setAppName("blobfs-e2e-locality")
        .set("spark.ui.enabled", "false")
        .set("spark.log.level", "WARN")
        .set("spark.driver.host", "127.0.0.1")
        .set("spark.driver.bindAddress", "127.0.0.1")
        .set("spark.hadoop.fs.blob.impl", E2eSupport.BLOBFS_IMPL));
    namespace = "e2e-loc-" + ProcessHandle.current().pid();
    Configuration conf = CephTestCluster.hadoopConf(env, STORE, namespace);
    for (Map.Entry<String, String> e : conf) {
      if (e.getKey().startsWith("fs.blob.")) {
        sc.hadoopConfiguration().set(e.getKey(), e.getValue());
      }
    }
    sc.hadoopConfiguration().set("fs.blob.store." + STORE + ".stripe.size",
        String.valueOf(STRIPE));
  }

  @AfterAll
  static void stop() {
    if (sc != null) {
      sc.stop();
    }
  }

  @Test
  void inputPartitionsPreferTheCrushHostsOfTheirStripes() throws IOException {
    Path file = new Path("blob://" + STORE + "/input/lines.txt");
    FileSystem fs = file.getFileSystem(sc.hadoopConfiguration());
    int stripes = 9;
    long length = writeLines(fs, file, 8L * STRIPE + STRIPE / 2);
    FileStatus status = fs.getFileStatus(file);
    assertThat(status.getBlockSize()).isEqualTo(STRIPE);
    String fileId = ((EtagSource) status).getEtag();

    // minPartitions 1: FileInputFormat cuts one split per block, so per stripe
    RDD<?> rdd = sc.hadoopFile(file.toString(), TextInputFormat.class, LongWritable.class,
        Text.class, 1).rdd();
    Partition[] partitions = rdd.partitions();
    assertThat(partitions).hasSize(stripes);
    Map<Integer, String> hostOfOsd = new HashMap<>();
    Set<String> distinct = new LinkedHashSet<>();
    for (Partition p : partitions) {
      FileSplit split = (FileSplit) ((HadoopPartition) p).inputSplit().value();
      int s = (int) (split.getStart() / STRIPE);
      assertThat(split.getStart()).isEqualTo((long) s * STRIPE);
      assertThat(split.getLength()).isEqualTo(Math.min(STRIPE, length - split.getStart()));

      List<String> preferred = CollectionConverters.asJava(rdd.preferredLocations(p));
      List<String> expected = new ArrayList<>();
      JsonNode where = JSON.readTree(CephTestCluster.ceph(env, "osd", "map", env.pool(),
          fileId + "/" + s, namespace + ".d", "-f", "json"));
      for (JsonNode osd : where.get("up")) {
        String host = hostOfOsd.computeIfAbsent(osd.asInt(), SparkPreferredLocationsIT::host);
        if (!expected.contains(host)) {
          expected.add(host);
        }
      }
      assertThat(preferred).as("preferred locations of stripe " + s).isEqualTo(expected);
      distinct.addAll(preferred);
    }
    assertThat(distinct.size()).as("hosts over all partitions " + distinct).isGreaterThan(1);
    assertThat(sc.textFile(file.toString(), 1).count()).isEqualTo(length / 64);
    fs.delete(new Path("blob://" + STORE + "/input"), true);
  }

  /** The CRUSH host of an OSD, as the monitor reports it. */
  private static String host(int osd) {
    try {
      return JSON.readTree(CephTestCluster.ceph(env, "osd", "find", String.valueOf(osd),
          "-f", "json")).get("crush_location").get("host").asText();
    } catch (IOException e) {
      throw new java.io.UncheckedIOException(e);
    }
  }

  /** Writes 64-byte lines up to {@code length} bytes (a multiple of 64); returns the length. */
  private static long writeLines(FileSystem fs, Path file, long length) throws IOException {
    try (FSDataOutputStream out = fs.create(file, true)) {
      for (long i = 0; i < length / 64; i++) {
        String line = String.format("%063d\n", i);
        out.write(line.getBytes(StandardCharsets.US_ASCII));
      }
    }
    return length;
  }
}
