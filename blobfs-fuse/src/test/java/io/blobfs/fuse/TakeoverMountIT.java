package io.blobfs.fuse;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.blobfs.fuse.MountedStore.Backend;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.Map;
import java.util.Random;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * Shared stripes ({@code fs.blob.fuse.takeover=true}) on a real mount, per store: the
 * kernel's requests, not a test's calls into the file system, drive the publications, and
 * what a fresh mount and another client of the store read is checked byte for byte. The
 * unit tests ({@code SharedStripesTest}) prove the rules; this proves the mount runs them
 * over a Týr server process and RADOS, which the default cannot flip without.
 */
class TakeoverMountIT {
  private static final int MIB = 1 << 20;
  @TempDir
  Path tmp;
  private MountedStore mount;

  private Path mount(Backend backend) throws Exception {
    Mounts.assumeMountable("fio");
    // stripes of 1 MiB (MountedStore's store profile), so a small change names 1 MiB
    mount = MountedStore.mount(backend, tmp, Map.of(MountConfig.TAKEOVER, "true"));
    return mount.mnt();
  }

  @AfterEach
  void unmount() throws Exception {
    if (mount != null) {
      mount.close();
    }
  }

  /** Bytes the mount's publications and early uploads sent, each byte once. */
  private long sent() {
    BlobMount m = mount.mount();
    return m.publishedBytes() + m.earlyBytes() - m.resentBytes();
  }

  @ParameterizedTest
  @EnumSource(names = {"MEMORY", "TYR", "RADOS"})
  void anEightKibibyteChangeToAnOldFileSendsItsOneStripe(Backend backend) throws Exception {
    Path mnt = mount(backend);
    byte[] want = new byte[16 * MIB];
    new Random(16).nextBytes(want);
    Files.write(mnt.resolve("f"), want); // its close publishes the whole file: 16 stripes
    byte[] patch = new byte[8192];
    new Random(17).nextBytes(patch);
    long at = 2L * MIB + 100;
    System.arraycopy(patch, 0, want, (int) at, patch.length);
    long before = sent();
    try (FileChannel ch = FileChannel.open(mnt.resolve("f"), StandardOpenOption.WRITE)) {
      assertTrue(ch.write(ByteBuffer.wrap(patch), at) == patch.length);
      ch.force(true);
    }
    long delta = sent() - before;
    // without takeover the fsync sends the whole 16 MiB again; with it, stripe 2 (the
    // memory mount's 64 KiB early-upload chunk may add one chunk)
    assertTrue(delta >= patch.length && delta <= MIB + 64 * 1024,
        delta + " bytes sent for an 8 KiB change in one 1 MiB stripe of 16");
    assertArrayEquals(want, mount.storeBytes("/f"), "another client reads the new version");
    mount.remount(tmp.resolve("staging-again"));
    assertArrayEquals(want, Files.readAllBytes(mnt.resolve("f")), "a fresh mount reads it");
  }

  /**
   * fio's own verification, 4 jobs writing disjoint 8 MiB of one file, each fsyncing at
   * its end: a publication after the first takes over the stripes the others wrote, while
   * jobs still write into theirs. Then a fresh mount's verify-only pass. This checks the
   * bytes; the bytes sent are checked by the test above (fsyncs finding nothing new send
   * nothing with or without takeover, so a bound here would not tell the two apart).
   */
  @ParameterizedTest
  @EnumSource(names = {"MEMORY", "TYR", "RADOS"})
  void fourFioJobsOnOneFileVerifyAfterTakeoverPublications(Backend backend) throws Exception {
    Path mnt = mount(backend);
    String job = "fio --ioengine=psync --verify=crc32c --verify_fatal=1 --output-format=normal"
        + " --name=shared --filename=shared --rw=write --bs=64k --size=8M --numjobs=4"
        + " --offset_increment=8M";
    String out = Mounts.sh(mnt, job + " --do_verify=1 --end_fsync=1");
    assertTrue(out.contains("err= 0"), out);
    mount.remount(tmp.resolve("staging-again"));
    out = Mounts.sh(mnt, job + " --verify_only");
    assertTrue(out.contains("err= 0"), out);
  }
}
