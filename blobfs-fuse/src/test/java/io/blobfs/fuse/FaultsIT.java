package io.blobfs.fuse;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.blobfs.tyr.server.TyrServerProcess;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A lost server gives EIO within the store's configured timeout, never a hung mount: with
 * the Týr server process stopped (SIGSTOP: connections stay open, nothing answers), `cat`
 * and `ls` on the mount return EIO; once it runs again, the mount works again.
 */
class FaultsIT {
  private static final int OP_TIMEOUT_S = 3;

  @TempDir
  Path tmp;
  private TyrServerProcess server;
  private BlobMount mount;
  private Path mnt;

  @BeforeEach
  void setUp() throws Exception {
    Mounts.assumeMountable("timeout");
    server = new TyrServerProcess(Files.createDirectories(tmp.resolve("tyr"))).start();
    mnt = tmp.resolve("mnt");
    mount = BlobMount.mount(Map.of(
        "fs.blob.store.lost.type", "tyr",
        "fs.blob.store.lost.address", server.address(),
        "fs.blob.store.lost.op-timeout", OP_TIMEOUT_S + "s",
        "fs.blob.store.lost.connect-timeout", "2s",
        MountConfig.STAGING_DIR, tmp.resolve("staging").toString()), "lost", false, mnt);
  }

  @AfterEach
  void tearDown() throws Exception {
    if (server != null) {
      signal("CONT");
    }
    if (mount != null) {
      mount.close();
    }
    if (server != null) {
      server.close();
    }
  }

  private void signal(String sig) throws Exception {
    assertEquals(0, new ProcessBuilder("kill", "-" + sig, Long.toString(server.pid()))
        .start().waitFor());
  }

  /** Runs a command on the mount, bounded by timeout(1) so a hang fails instead of waiting. */
  private static String[] run(Path dir, String cmd) throws Exception {
    Process p = new ProcessBuilder("timeout", "60", "sh", "-c", cmd).directory(dir.toFile())
        .redirectErrorStream(true).start();
    String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    assertTrue(p.waitFor(90, TimeUnit.SECONDS));
    return new String[] {Integer.toString(p.exitValue()), out};
  }

  @Test
  void aStoppedServerIsEioWithinTheTimeoutAndTheMountRecovers() throws Exception {
    Files.writeString(mnt.resolve("kept"), "before the fault");
    signal("STOP");
    Thread.sleep(1500); // past the kernel's 1 s cache of names and attributes
    for (String cmd : new String[] {"cat kept", "ls -l", "ls no-such-dir", "echo x > new"}) {
      long start = System.nanoTime();
      String[] r = run(mnt, cmd);
      long seconds = TimeUnit.NANOSECONDS.toSeconds(System.nanoTime() - start);
      assertTrue(!r[0].equals("0") && !r[0].equals("124"), cmd + ": exit " + r[0] + " " + r[1]);
      assertTrue(r[1].contains("Input/output error"), cmd + ": " + r[1]);
      assertTrue(seconds <= 6 * OP_TIMEOUT_S, cmd + " took " + seconds + " s");
    }
    signal("CONT");
    String[] r = run(mnt, "cat kept");
    assertEquals("0", r[0], r[1]);
    assertEquals("before the fault", r[1]);
  }
}
