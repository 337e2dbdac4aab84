package io.blobfs.fuse;

import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * fio, with its own data verification (crc32c in every block, read back after the
 * writes), on a real mount: the three patterns. fio exits non-zero on any
 * mismatch, which fails the test.
 */
class FioIT {
  @TempDir
  Path tmp;
  private Path mnt;
  private BlobMount mount;

  @BeforeEach
  void mount() throws Exception {
    Mounts.assumeMountable("fio");
    mnt = tmp.resolve("mnt");
    mount = Mounts.memory("fio-" + System.nanoTime(), mnt, tmp.resolve("staging"));
  }

  @AfterEach
  void unmount() throws Exception {
    if (mount != null) {
      mount.close();
    }
  }

  private String fio(String args) throws Exception {
    String out = Mounts.sh(mnt, "fio --ioengine=psync --verify=crc32c --do_verify=1"
        + " --verify_fatal=1 --output-format=normal " + args);
    assertTrue(out.contains("err= 0"), out);
    return out;
  }

  @Test
  void theKernelReadsAheadAsMuchAsOneRequestCarries() throws Exception {
    // INIT leaves FUSE at 128 KiB; the mount raises its device's read-ahead to max_read
    long dev = ((Number) java.nio.file.Files.getAttribute(mnt, "unix:dev")).longValue();
    long minor = (dev & 0xff) | ((dev >>> 12) & 0xffffff00L);
    String kb = java.nio.file.Files.readString(
        Path.of("/sys/class/bdi/0:" + minor + "/read_ahead_kb")).trim();
    org.junit.jupiter.api.Assertions.assertEquals("1024", kb);
  }

  @Test
  void sequentialOneMebibyteBlocks() throws Exception {
    fio("--name=seq --filename=seq --rw=write --bs=1M --size=96M");
  }

  @Test
  void randomEightKibibyteWrites() throws Exception {
    fio("--name=rand --filename=rand --rw=randwrite --bs=8k --size=16M");
  }

  @Test
  void fourJobsOnOneSharedFileWritingDisjointRanges() throws Exception {
    // MPI-IO's N-to-1 pattern: every job writes and verifies its own 8 MiB of one file
    fio("--name=shared --filename=shared --rw=write --bs=64k --size=8M --numjobs=4"
        + " --offset_increment=8M");
    Mounts.sh(mnt, "test $(stat -c %s shared) -eq 33554432");
  }
}
