package io.blobfs.fuse;

import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import io.blobfs.fuse.MountedStore.Backend;
import java.util.Map;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;
import org.junit.jupiter.api.io.TempDir;

/**
 * fio, with its own data verification (crc32c in every block, read back after the
 * writes), on a real mount: the three patterns. fio exits non-zero on any
 * mismatch, which fails the test. Over the in-memory store and over RADOS.
 */
class FioIT {
  @TempDir
  Path tmp;
  private Path mnt;
  private MountedStore mount;

  private void mount(Backend backend) throws Exception {
    Mounts.assumeMountable("fio");
    mount = MountedStore.mount(backend, tmp, Map.of());
    mnt = mount.mnt();
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
  void theKernelReadsAheadEightRequestsAtOnce() throws Exception {
    mount(Backend.MEMORY);
    // INIT leaves FUSE at 128 KiB; the mount raises its device's read-ahead to 8 requests
    // of max_read (1 MiB), so that the kernel sends several of a reader's requests at once
    long dev = ((Number) java.nio.file.Files.getAttribute(mnt, "unix:dev")).longValue();
    long minor = (dev & 0xff) | ((dev >>> 12) & 0xffffff00L);
    String kb = java.nio.file.Files.readString(
        Path.of("/sys/class/bdi/0:" + minor + "/read_ahead_kb")).trim();
    org.junit.jupiter.api.Assertions.assertEquals("8192", kb);
  }

  @ParameterizedTest
  @EnumSource(names = {"MEMORY", "RADOS"})
  void sequentialOneMebibyteBlocks(Backend backend) throws Exception {
    mount(backend);
    fio("--name=seq --filename=seq --rw=write --bs=1M --size=96M");
  }

  @ParameterizedTest
  @EnumSource(names = {"MEMORY", "RADOS"})
  void randomEightKibibyteWrites(Backend backend) throws Exception {
    mount(backend);
    fio("--name=rand --filename=rand --rw=randwrite --bs=8k --size=16M");
  }

  @ParameterizedTest
  @EnumSource(names = {"MEMORY", "RADOS"})
  void fourJobsOnOneSharedFileWritingDisjointRanges(Backend backend) throws Exception {
    mount(backend);
    // MPI-IO's N-to-1 pattern: every job writes and verifies its own 8 MiB of one file
    fio("--name=shared --filename=shared --rw=write --bs=64k --size=8M --numjobs=4"
        + " --offset_increment=8M");
    Mounts.sh(mnt, "test $(stat -c %s shared) -eq 33554432");
  }
}
