package io.blobfs.rados;

import static org.junit.jupiter.api.Assertions.*;

import java.io.File;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * cephfs.sh: {@code scripts/ceph/cephfs-sh-test.sh} starts a cluster of its own (own root,
 * port base 16340), mounts CephFS with ceph-fuse, checks bytes read back through the mount,
 * that a second start changes nothing, that stop unmounts and ends the MDS, and that the
 * file is there again after another start.
 */
@ExtendWith(CephClusterExtension.class)
class CephfsScriptIT {

  @Test
  void mountsReadsBackRestartsAndUnmounts(CephTestCluster.Env installed) throws Exception {
    // The parameter only makes sure Ceph is installed (or skips, saying why).
    Assumptions.assumeTrue(onPath("ceph-mds") && onPath("ceph-fuse"),
        "CephFS needs ceph-mds and ceph-fuse (apt-get install ceph-mds ceph-fuse)");
    Assumptions.assumeTrue(new File("/dev/fuse").exists(), "no /dev/fuse");
    File log = File.createTempFile("cephfs-sh-test", ".log");
    try {
      Process p = new ProcessBuilder("bash", CephTestCluster.repoRoot()
          .resolve("scripts/ceph/cephfs-sh-test.sh").toString())
          .redirectErrorStream(true).redirectOutput(log).start();
      // Only a bound on a hang, above what the script allows itself on a loaded machine
      // (two cores at a load of 30), where its Ceph or namespace steps take minutes:
      // its own timeouts add up to 23 min.
      if (!p.waitFor(25, TimeUnit.MINUTES)) {
        p.destroy(); // TERM: the script's trap unmounts, stops its cluster, deletes its root
        p.waitFor(2, TimeUnit.MINUTES);
        fail("cephfs-sh-test.sh did not finish in 25 min:\n" + Files.readString(log.toPath()));
      }
      String out = Files.readString(log.toPath(), StandardCharsets.UTF_8);
      System.out.print(out);
      assertEquals(0, p.exitValue(), out);
      assertTrue(out.contains("ok: the file survived stop and start"), out);
    } finally {
      log.delete();
    }
  }

  private static boolean onPath(String program) {
    for (String d : System.getenv().getOrDefault("PATH", "").split(File.pathSeparator)) {
      if (new File(d, program).canExecute()) {
        return true;
      }
    }
    return false;
  }
}
