package io.blobfs.fuse;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The mount over a RADOS pool at its quota ({@code ceph osd pool set-quota POOL max_bytes
 * N}): writers get ENOSPC ("No space left on device") at close and fsync, where the mount
 * publishes (writes land in the local staging file first); what was closed before reads
 * back; once the quota is raised, the same mount writes again.
 */
class FullPoolIT {
  private static final String POOL = "fuse-quota";

  @TempDir
  Path tmp;
  private MountedStore mount;

  @AfterEach
  void tearDown() throws Exception {
    try {
      if (mount != null) {
        mount.close();
      }
    } finally {
      MountedStore.cephAdmin("osd", "pool", "set-quota", POOL, "max_bytes", "0");
    }
  }

  /** Runs {@code cmd} in the mount; returns exit status and output. */
  private String[] run(String cmd) throws Exception {
    Process p = new ProcessBuilder("timeout", "120", "sh", "-c", cmd)
        .directory(mount.mnt().toFile()).redirectErrorStream(true).start();
    String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    assertTrue(p.waitFor(150, TimeUnit.SECONDS));
    return new String[] {Integer.toString(p.exitValue()), out};
  }

  private static void awaitFlag(boolean full) throws Exception {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(90);
    while (MountedStore.cephAdmin("osd", "pool", "ls", "detail").lines()
        .anyMatch(l -> l.contains("'" + POOL + "'") && l.contains("full_quota")) != full) {
      assertTrue(System.nanoTime() < deadline, "the pool's full flag never became " + full);
      Thread.sleep(500);
    }
  }

  @Test
  void aPoolAtItsQuotaIsEnospcAtCloseAndFsyncAndWritesAgainOnceRaised() throws Exception {
    Mounts.assumeMountable("dd", "timeout");
    Map<String, String> env = MountedStore.ceph();
    MountedStore.cephAdmin("osd", "pool", "create", POOL, "8");
    MountedStore.cephAdmin("osd", "pool", "application", "enable", POOL, "rados");
    MountedStore.cephAdmin("osd", "pool", "set-quota", POOL, "max_bytes", "0");
    awaitFlag(false);
    // client.admin: client.blobfs-all's caps name the cluster's two pools only
    mount = MountedStore.mount(MountedStore.Backend.RADOS, tmp, Map.of(".pool", POOL,
        ".client-id", "admin", ".keyring", env.get("CEPH_KEYRING"), ".op-timeout", "20s"));
    Path mnt = mount.mnt();

    byte[] closed = new byte[6 << 20];
    new Random(1).nextBytes(closed);
    Files.write(mnt.resolve("closed"), closed);
    MountedStore.cephAdmin("osd", "pool", "set-quota", POOL, "max_bytes",
        Long.toString(2L << 20));
    awaitFlag(true);

    String[] dd = run("dd if=/dev/urandom of=too-big bs=1M count=4 conv=fsync 2>&1");
    assertNotEquals("0", dd[0], dd[1]);
    assertTrue(dd[1].contains("No space left on device"), dd[1]);
    String[] cp = run("cp /etc/services on-close 2>&1"); // no fsync: close(2) publishes
    assertNotEquals("0", cp[0], cp[1]);
    assertTrue(cp[1].contains("No space left on device"), cp[1]);
    assertArrayEquals(closed, Files.readAllBytes(mnt.resolve("closed")), "reads go on");

    MountedStore.cephAdmin("osd", "pool", "set-quota", POOL, "max_bytes", "0");
    awaitFlag(false);
    String[] again = run("dd if=/dev/urandom of=after bs=1M count=4 conv=fsync 2>&1"
        + " && cp /etc/services on-close && cmp /etc/services on-close && stat -c %s after");
    assertEquals("0", again[0], again[1]);
    assertTrue(again[1].strip().endsWith("4194304"), again[1]);
    assertArrayEquals(closed, Files.readAllBytes(mnt.resolve("closed")));
  }
}
