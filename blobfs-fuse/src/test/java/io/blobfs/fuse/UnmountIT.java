package io.blobfs.fuse;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * An unmount ends even when a process in another mount namespace holds a copy of the
 * mount (it entered the namespace while the mount existed: unshare -m, a container, a
 * test JVM). The kernel then keeps the connection after the unmount here, and the mount's
 * close waited for its workers' reads for as long as that copy lived: bench-hpc.sh's
 * cleanup hung on it while another helper's test JVM held such a copy. Now the close
 * aborts the connection once the workers have not ended within a grace period.
 */
class UnmountIT {
  @TempDir
  Path tmp;

  @Test
  void anUnmountEndsWhileAnotherMountNamespaceHoldsACopy() throws Exception {
    Mounts.assumeMountable("unshare", "sleep");
    Path mnt = tmp.resolve("mnt");
    String store = "copy-" + System.nanoTime();
    BlobMount mount = Mounts.memory(store, mnt, tmp.resolve("staging"));
    Process holder = null;
    try {
      Files.writeString(mnt.resolve("f"), "kept");
      // a new mount namespace (private propagation): a copy of every mount, this one too
      holder = new ProcessBuilder("unshare", "-m", "sleep", "600").start();
      Path mountinfo = Path.of("/proc", Long.toString(holder.pid()), "mountinfo");
      boolean copied = false;
      for (int i = 0; i < 600 && !copied && holder.isAlive(); i++) {
        copied = Files.exists(mountinfo)
            && Files.readString(mountinfo).contains(" " + mnt + " ");
        if (!copied) {
          Thread.sleep(100); // the holder's exec and unshare: a real process starting
        }
      }
      assertTrue(copied, "the holder's namespace has no copy of " + mnt);
      CompletableFuture<Void> closed = CompletableFuture.runAsync(() -> {
        try {
          mount.close();
        } catch (Exception e) {
          throw new IllegalStateException(e);
        }
      });
      // before: never while the holder lived (600 s); now a 10 s grace, then the abort
      closed.get(120, TimeUnit.SECONDS);
    } finally {
      if (holder != null) {
        holder.destroyForcibly();
      }
    }
    // the store kept what was closed: a fresh mount reads it
    try (BlobMount again = Mounts.memory(store, mnt, tmp.resolve("staging2"))) {
      assertEquals("kept", Files.readString(mnt.resolve("f")));
    }
  }
}
