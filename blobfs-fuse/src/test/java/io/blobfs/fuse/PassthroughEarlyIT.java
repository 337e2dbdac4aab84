package io.blobfs.fuse;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.blobfs.fuse.MountedStore.Backend;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * Early upload of passed-through files on a real mount, per store: the kernel writes the
 * staged file (no WRITE request), the mount's poll sees it grow and sends its whole
 * chunks in the background, and the publication sends again the chunks written after
 * their send (through a shared mapping, through write(2)). Each store takes the second
 * write of a range already sent, before the commit, and the committed file holds it:
 * what another client of the store reads is the staged file's bytes.
 */
class PassthroughEarlyIT {
  private static final int MIB = 1 << 20;
  @TempDir
  Path tmp;
  private MountedStore mount;

  private Path mount(Backend backend) throws Exception {
    Mounts.assumeMountable("fio", "python3");
    mount = MountedStore.mount(backend, tmp, Map.of(MountConfig.PASSTHROUGH, "true",
        MountConfig.EARLY_UPLOAD, "1m"));
    assertTrue(mount.mount().passthrough(), "the kernel (6.9+) agreed to passthrough");
    return mount.mnt();
  }

  @AfterEach
  void unmount() throws Exception {
    if (mount != null) {
      mount.close();
    }
  }

  private static void awaitUntil(java.util.function.BooleanSupplier done) throws Exception {
    long deadline = System.nanoTime() + java.util.concurrent.TimeUnit.SECONDS.toNanos(120);
    while (!done.getAsBoolean() && System.nanoTime() < deadline) {
      Thread.sleep(20);
    }
    assertTrue(done.getAsBoolean(), "not within two minutes");
  }

  @ParameterizedTest
  @EnumSource(names = {"MEMORY", "TYR", "RADOS"})
  void chunksWrittenAfterTheirEarlySendAreSentAgainAndTheStoreHoldsTheStagedBytes(
      Backend backend) throws Exception {
    Path mnt = mount(backend);
    Path staged = tmp.resolve("staged-bytes");
    // 8 MiB in 1 MiB writes, then (once the test saw every chunk sent) a write through a
    // shared mapping into chunk 0 and a pwrite into chunk 3, an fsync, and the file's
    // bytes as the writer reads them through its descriptor (the staged file's)
    String script = "python3 -c '\n"
        + "import mmap, os, sys, time\n"
        + "fd = os.open(\"f\", os.O_RDWR | os.O_CREAT, 0o644)\n"
        + "data = os.urandom(8 << 20)\n"
        + "for off in range(0, len(data), 1 << 20):\n"
        + "    os.pwrite(fd, data[off:off + (1 << 20)], off)\n"
        + "while not os.path.exists(\"go\"):\n"
        + "    time.sleep(0.01)\n"
        + "m = mmap.mmap(fd, len(data))\n"
        + "m[100:106] = b\"MAPPED\"\n"
        + "os.pwrite(fd, b\"PWRITE\", 3 * (1 << 20) + 7)\n"
        + "os.fsync(fd)\n"
        + "open(sys.argv[1], \"wb\").write(os.pread(fd, len(data), 0))\n"
        + "m.close()\n"
        + "os.close(fd)\n"
        + "' " + staged;
    CompletableFuture<String> writer = CompletableFuture.supplyAsync(() -> {
      try {
        return Mounts.sh(mnt, script);
      } catch (Exception e) {
        throw new IllegalStateException(e);
      }
    });
    awaitUntil(() -> mount.mount().earlyBytes() >= 8L * MIB || writer.isDone());
    assertEquals(8L * MIB, mount.mount().earlyBytes(), "every chunk sent before the fsync");
    Files.createFile(mnt.resolve("go"));
    assertEquals("", writer.get().trim());
    byte[] want = Files.readAllBytes(staged);
    assertEquals(8 * MIB, want.length);
    assertEquals("MAPPED", new String(want, 100, 6, java.nio.charset.StandardCharsets.US_ASCII));
    assertArrayEquals(want, mount.storeBytes("/f"), "the store holds the staged bytes");
    assertEquals(2L * MIB, mount.mount().resentBytes(), "chunks 0 and 3 sent again, only");
  }

  /**
   * fio's own verification over a passthrough mount with early upload: 1 MiB sequential
   * writes with a crc32c in every block, an fsync, then, after a remount (so the bytes
   * come from the store, not the staged file), fio's verify-only pass.
   */
  @ParameterizedTest
  @EnumSource(names = {"MEMORY", "TYR", "RADOS"})
  void fioVerifiesWhatEarlyUploadPublished(Backend backend) throws Exception {
    Path mnt = mount(backend);
    String job = "fio --ioengine=psync --verify=crc32c --verify_fatal=1"
        + " --output-format=normal --name=seq --filename=seq --rw=write --bs=1M --size=64M"
        // 2 s of writing, so that the 50 ms growth poll has seen whole chunks before the
        // fsync on every store (at full speed the fsync could come first: nothing early)
        + " --rate=32m";
    String out = Mounts.sh(mnt, job + " --do_verify=1 --end_fsync=1");
    assertTrue(out.contains("err= 0"), out);
    assertTrue(mount.mount().earlyBytes() > 0, "uploaded early");
    // fio opens the file three times: a create to lay it out (a fallocate the mount
    // refuses), the writes and the fsync, then O_RDWR again for its verify pass, which
    // reads only. No whole second upload (its small verify state file aside; a chunk the
    // publication found changed after its early send is counted once): the verify pass's
    // close used to upload the whole file again (session 14)
    long sent = mount.mount().publishedBytes() + mount.mount().earlyBytes()
        - mount.mount().resentBytes();
    assertTrue(sent <= 64L * MIB + 64 * 1024, sent + " bytes sent for a 64 MiB file");
    mount.remount(tmp.resolve("staging-again"));
    out = Mounts.sh(mnt, job + " --verify_only");
    assertTrue(out.contains("err= 0"), out);
  }
}
