package io.blobfs.e2e;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.fail;

import io.blobfs.fuse.BlobMount;
import io.blobfs.tyr.server.TyrServerProcess;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.stream.Stream;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.FileSystem;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The paper's convergence, both ways, on one Týr server process: what a POSIX program
 * writes through the FUSE mount, blob:// (Hadoop's FileSystem, as Spark uses it) reads
 * with the same path and bytes; and what blob:// writes, the mount reads.
 */
class FuseConvergenceIT {
  private static final String STORE = "conv";

  @TempDir
  Path tmp;
  private TyrServerProcess server;
  private BlobMount mount;
  private FileSystem blob;
  private Path mnt;

  @BeforeEach
  void setUp() throws Exception {
    String why = !Files.exists(Path.of("/dev/fuse")) ? "no /dev/fuse"
        : !"root".equals(System.getProperty("user.name")) ? "mounting needs root" : null;
    if (why != null) {
      if ("true".equals(System.getenv("CI"))) {
        fail("FUSE tests cannot run under CI=true: " + why);
      }
      Assumptions.abort(why);
    }
    server = new TyrServerProcess(Files.createDirectories(tmp.resolve("tyr")), "--sync", "always")
        .start();
    Map<String, String> conf = Map.of(
        "fs.blob.store." + STORE + ".type", "tyr",
        "fs.blob.store." + STORE + ".address", server.address(),
        "fs.blob.store." + STORE + ".stripe.size", "1m",
        "fs.blob.fuse.staging.dir", tmp.resolve("staging").toString());
    mnt = tmp.resolve("mnt");
    mount = BlobMount.mount(conf, STORE, false, mnt);
    Configuration hadoop = new Configuration(false);
    hadoop.set("fs.blob.impl", E2eSupport.BLOBFS_IMPL);
    hadoop.setBoolean("fs.blob.impl.disable.cache", true);
    conf.forEach(hadoop::set);
    blob = FileSystem.get(URI.create("blob://" + STORE + "/"), hadoop);
  }

  @AfterEach
  void tearDown() throws Exception {
    if (blob != null) {
      blob.close();
    }
    if (mount != null) {
      mount.close();
    }
    if (server != null) {
      server.close();
    }
  }

  private static byte[] random(int n, long seed) {
    byte[] b = new byte[n];
    new Random(seed).nextBytes(b);
    return b;
  }

  @Test
  void whatTheMountWritesBlobReads() throws Exception {
    byte[] big = random(5 << 20, 1); // five stripes
    byte[] small = "x,y\n1,2\n".getBytes();
    Files.createDirectories(mnt.resolve("hpc/run1"));
    Files.write(mnt.resolve("hpc/run1/field.bin"), big);
    Files.write(mnt.resolve("hpc/run1/summary.csv"), small);
    // a shared file written at two offsets by two descriptors, as an MPI-IO program would
    try (var a = java.nio.channels.FileChannel.open(mnt.resolve("hpc/run1/shared"),
             java.nio.file.StandardOpenOption.CREATE, java.nio.file.StandardOpenOption.WRITE);
         var b = java.nio.channels.FileChannel.open(mnt.resolve("hpc/run1/shared"),
             java.nio.file.StandardOpenOption.WRITE)) {
      b.write(java.nio.ByteBuffer.wrap(Arrays.copyOfRange(big, 1 << 20, 2 << 20)), 1 << 20);
      a.write(java.nio.ByteBuffer.wrap(Arrays.copyOfRange(big, 0, 1 << 20)), 0);
    }
    assertArrayEquals(big, read(blob, "/hpc/run1/field.bin"));
    assertArrayEquals(small, read(blob, "/hpc/run1/summary.csv"));
    assertArrayEquals(Arrays.copyOf(big, 2 << 20), read(blob, "/hpc/run1/shared"));
    assertEquals(List.of("field.bin", "shared", "summary.csv"),
        Stream.of(blob.listStatus(new org.apache.hadoop.fs.Path("/hpc/run1")))
            .map(s -> s.getPath().getName()).sorted().toList());
    FileStatus st = blob.getFileStatus(new org.apache.hadoop.fs.Path("/hpc/run1/field.bin"));
    assertEquals(Files.size(mnt.resolve("hpc/run1/field.bin")), st.getLen());
    assertEquals(Files.getLastModifiedTime(mnt.resolve("hpc/run1/field.bin")).toMillis(),
        st.getModificationTime());
  }

  @Test
  void whatBlobWritesTheMountReads() throws Exception {
    byte[] big = random(3 << 20, 2);
    try (OutputStream out = blob.create(new org.apache.hadoop.fs.Path("/spark/out/part-00000"))) {
      out.write(big);
    }
    try (OutputStream out = blob.create(new org.apache.hadoop.fs.Path("/spark/out/_SUCCESS"))) {
      // empty marker, as Spark's committer writes it
    }
    assertArrayEquals(big, Files.readAllBytes(mnt.resolve("spark/out/part-00000")));
    try (Stream<Path> list = Files.list(mnt.resolve("spark/out"))) {
      assertEquals(List.of("_SUCCESS", "part-00000"),
          list.map(p -> p.getFileName().toString()).sorted().toList());
    }
    assertEquals(0, Files.size(mnt.resolve("spark/out/_SUCCESS")));
    // and a rename through blob:// is what the mount sees next
    blob.rename(new org.apache.hadoop.fs.Path("/spark/out"), new org.apache.hadoop.fs.Path("/spark/final"));
    assertArrayEquals(big, Files.readAllBytes(mnt.resolve("spark/final/part-00000")));
  }

  private static byte[] read(FileSystem fs, String path) throws IOException {
    try (InputStream in = fs.open(new org.apache.hadoop.fs.Path(path))) {
      ByteArrayOutputStream out = new ByteArrayOutputStream();
      in.transferTo(out);
      return out.toByteArray();
    }
  }
}
