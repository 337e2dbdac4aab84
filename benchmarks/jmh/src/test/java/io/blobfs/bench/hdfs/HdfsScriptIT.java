package io.blobfs.bench.hdfs;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FSDataInputStream;
import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.fs.FileSystem;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The daemons of {@code scripts/hdfs/hdfs.sh}, reached as a user reaches them: a Hadoop
 * client on {@code hdfs://}. Its own directory and ports, so a benchmark's cluster on the
 * default ones is left alone.
 */
@Timeout(value = 5, unit = TimeUnit.MINUTES)
class HdfsScriptIT {
  private static final Path SCRIPT = Path.of("../../scripts/hdfs/hdfs.sh").toAbsolutePath();
  private static final String PORT_BASE = "16520";
  private static final String OTHER_PORT_BASE = "16530";
  private static Path root;
  private static Map<String, String> env;

  @BeforeAll
  static void start() throws Exception {
    root = Path.of("target/hdfs-it").toAbsolutePath();
    Files.createDirectories(root.getParent());
    if (!Files.exists(root)) {
      Files.createDirectory(root, PosixFilePermissions.asFileAttribute(
          PosixFilePermissions.fromString("rwx------")));
    }
    env = exports(run("start"));
  }

  @AfterAll
  static void stop() throws Exception {
    if (root != null) {
      run("purge");
    }
  }

  @Test
  void writesAndReadsBackThroughHdfs() throws Exception {
    assertEquals("hdfs://127.0.0.1:" + PORT_BASE, env.get("HDFS_URI"));
    byte[] data = new byte[3 * (1 << 20) + 12345];
    new Random(42).nextBytes(data);
    // The client reads the script's configuration as a user's job reads HADOOP_CONF_DIR:
    // replication and block size are chosen by the client in HDFS.
    Configuration conf = new Configuration();
    for (String site : List.of("core-site.xml", "hdfs-site.xml")) {
      conf.addResource(new org.apache.hadoop.fs.Path(env.get("HDFS_CONF_DIR"), site));
    }
    try (FileSystem fs = FileSystem.newInstance(URI.create(env.get("HDFS_URI")), conf)) {
      org.apache.hadoop.fs.Path file = new org.apache.hadoop.fs.Path("/it/data.bin");
      try (FSDataOutputStream out = fs.create(file, true)) {
        out.write(data);
      }
      assertEquals(1, fs.getFileStatus(file).getReplication());
      assertEquals(64L << 20, fs.getFileStatus(file).getBlockSize());
      byte[] back = new byte[data.length];
      try (FSDataInputStream in = fs.open(file)) {
        in.readFully(0, back);
      }
      assertArrayEquals(data, back);
    }
    // A second start finds both daemons running and changes nothing.
    assertTrue(run("start").contains("HDFS_URI"));
    // Another port base on the same directory (another checkout's default): the daemons
    // come back on the new ports with the same data.
    Map<String, String> moved = exports(run("start", OTHER_PORT_BASE));
    assertEquals("hdfs://127.0.0.1:" + OTHER_PORT_BASE, moved.get("HDFS_URI"));
    try (FileSystem fs = FileSystem.newInstance(URI.create(moved.get("HDFS_URI")), conf)) {
      byte[] back = new byte[data.length];
      try (FSDataInputStream in = fs.open(new org.apache.hadoop.fs.Path("/it/data.bin"))) {
        in.readFully(0, back);
      }
      assertArrayEquals(data, back);
    }
  }

  private static String run(String command) throws IOException, InterruptedException {
    return run(command, PORT_BASE);
  }

  private static String run(String command, String portBase)
      throws IOException, InterruptedException {
    ProcessBuilder pb = new ProcessBuilder(List.of(SCRIPT.toString(), command))
        .redirectError(ProcessBuilder.Redirect.INHERIT);
    pb.environment().put("BLOBFS_HDFS_ROOT", root.toString());
    pb.environment().put("BLOBFS_HDFS_PORT_BASE", portBase);
    pb.environment().put("BLOBFS_HDFS_START_TIMEOUT", "120");
    // Output to a file, not a pipe: reading a pipe to its end would wait for the script
    // however long it takes, and the wait below would bound nothing.
    Path log = Files.createTempFile("hdfs-sh-", ".out");
    pb.redirectOutput(log.toFile());
    Process p = pb.start();
    if (!p.waitFor(3, TimeUnit.MINUTES)) {
      p.destroyForcibly();
      throw new IOException("hdfs.sh " + command + " did not finish in 3 minutes");
    }
    String out = Files.readString(log, StandardCharsets.UTF_8);
    Files.delete(log);
    if (p.exitValue() != 0) {
      throw new IOException("hdfs.sh " + command + " exited " + p.exitValue() + ": " + out);
    }
    return out;
  }

  private static Map<String, String> exports(String text) {
    Map<String, String> m = new HashMap<>();
    for (String line : text.split("\n")) {
      if (line.startsWith("export ")) {
        String kv = line.substring("export ".length());
        int eq = kv.indexOf('=');
        m.put(kv.substring(0, eq), kv.substring(eq + 1).replace("'", ""));
      }
    }
    return m;
  }
}
