package io.blobfs.fuse;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.blobfs.fuse.MountedStore.Backend;
import io.blobfs.namespace.BlobNamespace;
import io.blobfs.namespace.FsPath;
import java.nio.file.Path;
import java.util.Map;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The MPI-IO program (src/test/mpi/mpiio.c, built with MPICH's mpicc by
 * scripts/build-mpiio.sh) under mpirun with 4 ranks, ROMIO's default driver, on the mount
 * over a Týr server process: N-to-1 strided collective writes into one shared file, and
 * N-to-N, a file per rank; then every rank reads back and checks another rank's blocks
 * (the program exits non-zero on a mismatch). Another client of the store then finds
 * the files, whole, under the same names.
 */
class MpiIoIT {
  private static final int MIB_PER_RANK = 8;
  private static final int BLOCK = 1 << 20;

  @TempDir
  Path tmp;
  private MountedStore mount;

  @AfterEach
  void unmount() throws Exception {
    if (mount != null) {
      mount.close();
    }
  }

  private String mpiio(String mode) throws Exception {
    Mounts.assumeMountable("mpicc", "mpirun");
    String bin = Mounts.sh(tmp, "'" + repoScript("build-mpiio.sh") + "' '" + tmp.resolve("mpiio")
        + "'").strip();
    mount = MountedStore.mount(Backend.TYR, tmp, Map.of());
    String out = Mounts.sh(mount.mnt(), "mpirun -n 4 '" + bin + "' " + mode + " . "
        + MIB_PER_RANK + " " + BLOCK).strip();
    System.err.println("MpiIoIT: " + out);
    String last = out.substring(out.lastIndexOf('\n') + 1);
    assertTrue(last.matches("mpiio " + mode + " write_MBps=[0-9.]+ read_MBps=[0-9.]+ ok"), out);
    return last;
  }

  @Test
  void nToOneStridedIntoASharedFile() throws Exception {
    mpiio("n1");
    BlobNamespace other = mount.client();
    assertEquals(4L * MIB_PER_RANK << 20, other.getFileInfo(FsPath.parse("/mpiio-n1")).length());
  }

  @Test
  void nToNAFilePerRank() throws Exception {
    mpiio("nn");
    BlobNamespace other = mount.client();
    for (int r = 0; r < 4; r++) {
      assertEquals((long) MIB_PER_RANK << 20,
          other.getFileInfo(FsPath.parse("/mpiio-nn." + r)).length(), "rank " + r);
    }
  }

  private static Path repoScript(String name) {
    return Path.of(System.getProperty("user.dir")).getParent().resolve("scripts").resolve(name);
  }
}
