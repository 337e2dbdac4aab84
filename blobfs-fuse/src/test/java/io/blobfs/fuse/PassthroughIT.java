package io.blobfs.fuse;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.blobfs.fuse.MountedStore.Backend;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.Map;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * FUSE passthrough ({@code fs.blob.fuse.passthrough}) on a real mount: the kernel writes a
 * file open for writing in its staged copy itself (no WRITE request reaches the mount),
 * and what it wrote is published at close, seen whole from a second mount of the store
 * (close-to-open), and verified by fio.
 */
class PassthroughIT {
  @TempDir
  Path tmp;
  private MountedStore mount;
  private BlobMount second;

  private Path mount() throws Exception {
    Mounts.assumeMountable("fio");
    mount = MountedStore.mount(Backend.MEMORY, tmp, Map.of(MountConfig.PASSTHROUGH, "true"));
    assertTrue(mount.mount().passthrough(), "the kernel (6.9+) agreed to passthrough");
    return mount.mnt();
  }

  /** A second mount of the same store (the JVM's in-memory store of that name). */
  private Path secondMount() throws Exception {
    Map<String, String> conf = new HashMap<>(mount.conf());
    conf.put(MountConfig.STAGING_DIR, tmp.resolve("staging2").toString());
    conf.remove(MountConfig.PASSTHROUGH);
    Path mnt2 = tmp.resolve("mnt2");
    second = BlobMount.mount(conf, mount.name(), false, mnt2);
    return mnt2;
  }

  @AfterEach
  void unmount() throws Exception {
    if (second != null) {
      second.close();
    }
    if (mount != null) {
      mount.close();
    }
  }

  @Test
  void writesReachTheStagedFileWithoutTheMountAndArePublishedAtClose() throws Exception {
    Path mnt = mount();
    long before = mount.mount().writeRequests();
    // 8 KiB writes at scattered offsets, in place, as fio's randwrite
    Mounts.sh(mnt, "head -c 1048576 /dev/urandom > src && : > f"
        + " && for i in 7 3 120 0 64 127; do dd if=src of=f bs=8k seek=$i skip=$i count=1"
        + " conv=notrunc status=none; done && test $(stat -c %s f) -eq 1048576");
    assertEquals(before, mount.mount().writeRequests(), "the kernel wrote the staged file itself");
    Path mnt2 = secondMount();
    String want = Mounts.sh(mnt, "for i in 7 3 120 0 64 127; do dd if=src bs=8k skip=$i count=1"
        + " status=none | md5sum; done");
    String got = Mounts.sh(mnt2, "for i in 7 3 120 0 64 127; do dd if=f bs=8k skip=$i count=1"
        + " status=none | md5sum; done");
    assertEquals(want, got, "the second mount reads what the first wrote, after its close");
    assertEquals("1048576", Mounts.sh(mnt2, "stat -c %s f").trim());
    assertEquals(Mounts.sh(mnt, "cat f | md5sum"), Mounts.sh(mnt2, "cat f | md5sum"));
  }

  @Test
  void truncateAppendAndAStatWhileOpenSeeThePassedThroughWrites() throws Exception {
    Path mnt = mount();
    String out = Mounts.sh(mnt, "exec 3>g; printf 0123456789 >&3; stat -c %s g;"
        + " truncate -s 4 g; stat -c %s g; printf abc >>g; stat -c %s g; exec 3>&-; cat g");
    assertEquals("10\n4\n7\n0123abc", out);
    Path mnt2 = secondMount();
    assertEquals("0123abc", Mounts.sh(mnt2, "cat g"));
  }

  @Test
  void aFileHeldOpenForReadingIsWrittenWithoutPassthroughAndBothSeeTheBytes() throws Exception {
    Path mnt = mount();
    Mounts.sh(mnt, "printf old > h");
    // a reader holds the published file through the page cache: the kernel refuses to
    // mix that with passthrough on one inode, so the writer's open must not ask for it
    long held = mount.mount().writeRequests();
    assertEquals("new", Mounts.sh(mnt, "exec 4<h; printf new >h; exec 4<&-; cat h"));
    assertEquals(held + 1, mount.mount().writeRequests(), "served here, as without the key");
    // with the reader gone, the next writer passes through again
    long before = mount.mount().writeRequests();
    Mounts.sh(mnt, "printf again >h");
    assertEquals(before, mount.mount().writeRequests());
    assertEquals("again", Mounts.sh(secondMount(), "cat h"));
  }

  @Test
  void manySmallFilesWrittenAndClosedDoNotWaitEach() throws Exception {
    // session 12's first skip waited up to 20 ms before each publication for the file's
    // times to age: ~34 ms per file here, against ~2 before it and after its removal
    Path mnt = mount();
    Mounts.sh(mnt, "mkdir w && for i in $(seq 1 20); do echo warm > w/$i; done");
    long t0 = System.nanoTime();
    Mounts.sh(mnt, "mkdir d && for i in $(seq 1 200); do echo hello > d/$i; done");
    double ms = (System.nanoTime() - t0) / 1e6 / 200;
    System.out.printf("PassthroughIT: %.2f ms per small file (echo > f), passthrough%n", ms);
    assertTrue(ms < 15, ms + " ms per file");
  }

  @Test
  void aCloseRightAfterAnFsyncUploadsNothingMore() throws Exception {
    Path mnt = mount();
    Mounts.sh(mnt, "head -c 1048576 /dev/urandom > src");
    long before = mount.mount().publishedBytes() + mount.mount().earlyBytes();
    // dd's conv=fsync: its writes, an fsync, then its close (flush) and release; a part
    // of q may go up in the background first (early upload every 64 KiB here)
    Mounts.sh(mnt, "dd if=src of=q bs=64k conv=fsync status=none");
    assertEquals(1048576, mount.mount().publishedBytes() + mount.mount().earlyBytes() - before,
        "q uploaded once, by its fsync and before it, not again at its close");
    assertEquals(Mounts.sh(mnt, "md5sum < src"), Mounts.sh(secondMount(), "md5sum < q"));
  }

  @Test
  void aWriteThroughASharedMappingAfterAnFsyncIsPublishedAtTheClose() throws Exception {
    Mounts.assumeMountable("python3");
    Path mnt = mount();
    Path mnt2 = secondMount();
    // the mapping's page is dirty and writable after the fsync's publication unless the
    // publication wrote it back: then the second write through it would move no time and
    // the close would find the staged file as the fsync stamped it
    String out = Mounts.sh(mnt, "python3 -c '\n"
        + "import mmap, os, sys\n"
        + "fd = os.open(\"mm\", os.O_RDWR | os.O_CREAT, 0o644)\n"
        + "os.ftruncate(fd, 8192)\n"
        + "m = mmap.mmap(fd, 8192)\n"
        + "m[0:3] = b\"one\"\n"
        + "os.fsync(fd)\n"
        + "print(open(sys.argv[1], \"rb\").read(3).decode())\n"
        + "m[0:3] = b\"two\"\n"
        + "os.close(fd)\n"
        + "print(open(sys.argv[1], \"rb\").read(3).decode())\n"
        + "m.close()\n"
        + "' " + mnt2.resolve("mm"));
    assertEquals("one\ntwo\n", out, "the second mount reads the fsync's, then the close's version");
  }

  @Test
  void fioRandomEightKibWritesVerifyAndAreSeenFromASecondMount() throws Exception {
    Path mnt = mount();
    String out = Mounts.sh(mnt, "fio --ioengine=psync --verify=crc32c --do_verify=1"
        + " --verify_fatal=1 --output-format=normal --name=rand --filename=rand"
        + " --rw=randwrite --bs=8k --size=16M");
    assertTrue(out.contains("err= 0"), out);
    assertEquals(Mounts.sh(mnt, "md5sum < rand"), Mounts.sh(secondMount(), "md5sum < rand"));
  }
}
