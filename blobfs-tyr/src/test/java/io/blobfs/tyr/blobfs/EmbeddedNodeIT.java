package io.blobfs.tyr.blobfs;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

import java.io.IOException;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FSDataInputStream;
import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.fs.FileSystem;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The embedded node (the main job's default store) persists to its directory: what one
 * JVM wrote through blob:// another JVM reads back, whether the first exited cleanly or
 * was killed with SIGKILL right after its file was closed.
 */
class EmbeddedNodeIT {
  @TempDir
  Path dir;

  @Test
  void whatOneJvmWroteTheNextReadsBackAfterACleanExitOrAKill() throws Exception {
    assertEquals(0, child("write", "/clean", "exit").waitFor(), "writer exited cleanly");
    assertEquals(0, child("read", "/clean", "").waitFor(), "reader found /clean");

    Process killed = child("write", "/killed", "hang");
    // The child prints WROTE once its file is closed (committed), then waits to be killed.
    String line = new String(killed.getInputStream().readNBytes(6), StandardCharsets.UTF_8);
    assertThat(line).isEqualTo("WROTE\n");
    killed.destroyForcibly().waitFor(30, TimeUnit.SECONDS);
    assertEquals(0, child("read", "/killed", "").waitFor(), "reader found /killed");
    assertEquals(0, child("read", "/clean", "").waitFor(), "and /clean is still there");
  }

  private Process child(String mode, String file, String then) throws IOException {
    return new ProcessBuilder(
        Path.of(System.getProperty("java.home"), "bin", "java").toString(), "-Xmx256m",
        "-cp", System.getProperty("java.class.path"), Child.class.getName(),
        mode, dir.toString(), file, then)
        .redirectError(ProcessBuilder.Redirect.INHERIT).start();
  }

  /** One JVM's turn: writes 5 MiB to {@code file} on the embedded node, or checks them. */
  public static final class Child {
    public static void main(String[] args) throws Exception {
      Configuration conf = new Configuration();
      conf.set("fs.blob.impl", "io.blobfs.hadoop.BlobFileSystem");
      conf.set("fs.blob.store.emb.type", "tyr");
      conf.set("fs.blob.store.emb.embedded-dir", args[1]);
      conf.set("fs.blob.store.emb.stripe.size", "1m");
      byte[] data = new byte[5 << 20];
      new Random(args[2].hashCode()).nextBytes(data);
      org.apache.hadoop.fs.Path path = new org.apache.hadoop.fs.Path(args[2]);
      FileSystem fs = FileSystem.newInstance(URI.create("blob://emb/"), conf);
      if (args[0].equals("write")) {
        try (FSDataOutputStream out = fs.create(path, true)) {
          out.write(data);
        }
        System.out.print("WROTE\n");
        System.out.flush();
        if (args[3].equals("hang")) {
          Thread.sleep(Long.MAX_VALUE);
        }
        fs.close();
        System.exit(0);
      }
      byte[] back = new byte[data.length];
      try (FSDataInputStream in = fs.open(path)) {
        in.readFully(0, back);
      }
      assertArrayEquals(data, back);
      System.exit(0);
    }
  }
}
