package io.blobfs.fuse;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.blobfs.fuse.MountedStore.Backend;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * A lost server gives EIO within the store's configured timeout, never a hung mount: with
 * the Týr server process, or the RADOS cluster's only OSD, stopped (SIGSTOP: connections
 * stay open, nothing answers), `cat` and `ls` on the mount return EIO; once it runs
 * again, the mount works again.
 */
class FaultsIT {
  private static final int OP_TIMEOUT_S = 3;

  @TempDir
  Path tmp;
  private MountedStore mount;
  private long serverPid = -1;
  private Path mnt;

  private void mount(Backend backend) throws Exception {
    Mounts.assumeMountable("timeout");
    mount = MountedStore.mount(backend, tmp, Map.of(
        ".op-timeout", OP_TIMEOUT_S + "s",
        ".connect-timeout", "2s"));
    mnt = mount.mnt();
    serverPid = mount.serverPid();
  }

  @AfterEach
  void tearDown() throws Exception {
    if (serverPid > 0) {
      signal("CONT"); // whatever failed, never leave the server (or the OSD) stopped
    }
    if (mount != null) {
      mount.close();
    }
  }

  private void signal(String sig) throws Exception {
    assertEquals(0, new ProcessBuilder("kill", "-" + sig, Long.toString(serverPid))
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

  @ParameterizedTest
  @EnumSource(names = {"TYR", "RADOS"})
  void aStoppedServerIsEioWithinTheTimeoutAndTheMountRecovers(Backend backend)
      throws Exception {
    mount(backend);
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
