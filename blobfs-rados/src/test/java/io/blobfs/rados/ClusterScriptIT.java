package io.blobfs.rados;

import static org.junit.jupiter.api.Assertions.*;

import java.io.File;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * cluster.sh keeps its keyrings to the caller: {@code scripts/ceph/cluster-sh-test.sh}
 * starts a cluster of its own (own root, port base 16300) under umask 000 and checks
 * every keyring is 0600, checks that roots another user could control are refused, that
 * a cluster whose OSD was frozen (SIGSTOP, then SIGCONT or not) fails {@code status} and is
 * replaced by {@code start} with one that serves I/O, and that the scripts' default port
 * bases are below Linux's ephemeral range.
 */
@ExtendWith(CephClusterExtension.class)
class ClusterScriptIT {

  @Test
  void keyringsArePrivateAndForeignRootsAreRefused(CephTestCluster.Env installed)
      throws Exception {
    // The parameter only makes sure Ceph is installed (or skips, saying why).
    File log = File.createTempFile("cluster-sh-test", ".log");
    try {
      Process p = new ProcessBuilder("bash", CephTestCluster.repoRoot()
          .resolve("scripts/ceph/cluster-sh-test.sh").toString())
          .redirectErrorStream(true).redirectOutput(log).start();
      // Only a bound on a hang, above what the script allows itself on a loaded machine
      // (two cores at a load of 30), where its Ceph or namespace steps take minutes:
      // a Ceph start, untimed in the script, takes minutes there.
      if (!p.waitFor(15, TimeUnit.MINUTES)) {
        p.destroy(); // TERM: the script's trap stops its cluster and deletes its root
        p.waitFor(2, TimeUnit.MINUTES);
        fail("cluster-sh-test.sh did not finish in 15 min:\n" + Files.readString(log.toPath()));
      }
      String out = Files.readString(log.toPath(), StandardCharsets.UTF_8);
      System.out.print(out);
      assertEquals(0, p.exitValue(), out);
    } finally {
      log.delete();
    }
  }
}
