package io.blobfs.fuse;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;
import org.junit.jupiter.api.io.TempDir;

/**
 * A randomized model test: several workers make random pwrite, read, truncate, rename,
 * unlink, fsync and close/reopen calls on files of the mount and the same calls on a local
 * directory, the model; every read must match the model's, and after a remount the final
 * bytes must too. Each worker has private files and its own range of one shared file (the
 * N-to-1 pattern), so the model stays deterministic under concurrency.
 * {@code -Dblobfs.soak=true} runs 50 times as many calls; {@code -Dblobfs.fuse.seed=N}
 * replays a run.
 */
class ModelIT {
  private static final int WORKERS = 4;
  private static final int REGION = 256 << 10;
  private static final boolean SOAK = Boolean.getBoolean("blobfs.soak");
  private static final int OPS = SOAK ? 100_000 : 2_000;

  @TempDir
  Path tmp;

  /** One file opened on both sides. */
  private static final class Pair {
    FileChannel mount;
    FileChannel model;

    void open(Path m, Path l) throws IOException {
      var opts = new StandardOpenOption[] {StandardOpenOption.CREATE, StandardOpenOption.READ,
          StandardOpenOption.WRITE};
      mount = FileChannel.open(m, opts);
      model = FileChannel.open(l, opts);
    }

    void close() throws IOException {
      mount.close();
      model.close();
    }
  }

  @ParameterizedTest
  @EnumSource(names = {"MEMORY", "RADOS"})
  void randomCallsMatchALocalFile(MountedStore.Backend backend) throws Exception {
    Mounts.assumeMountable();
    long seed = Long.getLong("blobfs.fuse.seed", System.nanoTime());
    System.err.println("ModelIT " + backend + " seed " + seed + " (-Dblobfs.fuse.seed to"
        + " replay), " + OPS + " calls per worker");
    Path local = Files.createDirectories(tmp.resolve("local"));
    // memory: early uploads every 64 KiB, so that the small files take that path too
    MountedStore mount = MountedStore.mount(backend, tmp, Map.of());
    Path mnt = mount.mnt();
    List<String> names = new ArrayList<>();
    try {
      ExecutorService pool = Executors.newFixedThreadPool(WORKERS);
      List<Future<List<String>>> done = new ArrayList<>();
      for (int w = 0; w < WORKERS; w++) {
        int worker = w;
        done.add(pool.submit(() -> work(worker, new Random(seed + worker), mnt, local)));
      }
      for (Future<List<String>> f : done) {
        names.addAll(f.get());
      }
      pool.shutdown();
      names.add("shared");
      for (String name : names) {
        assertArrayEquals(Files.readAllBytes(local.resolve(name)),
            Files.readAllBytes(mnt.resolve(name)), name + " before the remount, seed " + seed);
      }
      // what the store holds after an unmount, read through a fresh mount
      mount.remount(tmp.resolve("staging2"));
      for (String name : names) {
        assertArrayEquals(Files.readAllBytes(local.resolve(name)),
            Files.readAllBytes(mnt.resolve(name)), name + " after the remount, seed " + seed);
      }
      try (var list = Files.list(mnt)) {
        assertEquals(names.stream().sorted().toList(),
            list.map(p -> p.getFileName().toString()).sorted().toList());
      }
    } finally {
      mount.close();
    }
  }

  /** Returns the names of its private files at the end. */
  private static List<String> work(int w, Random rnd, Path mnt, Path local) throws Exception {
    String name = "p" + w;
    Pair priv = new Pair();
    priv.open(mnt.resolve(name), local.resolve(name));
    Pair shared = new Pair();
    shared.open(mnt.resolve("shared"), local.resolve("shared"));
    long base = (long) w * REGION;
    for (int op = 0; op < OPS; op++) {
      int kind = rnd.nextInt(100);
      if (kind < 35) {
        long off = rnd.nextInt(2 * REGION);
        byte[] b = new byte[1 + rnd.nextInt(64 << 10)];
        rnd.nextBytes(b);
        write(priv, off, b);
      } else if (kind < 50) {
        long off = base + rnd.nextInt(REGION - 8192);
        byte[] b = new byte[1 + rnd.nextInt(8192)];
        rnd.nextBytes(b);
        write(shared, off, b);
      } else if (kind < 65) {
        compare(priv, rnd.nextInt(3 * REGION), 1 + rnd.nextInt(128 << 10), name);
      } else if (kind < 72) {
        // only its own range: the others' ranges change under it
        long off = base + rnd.nextInt(REGION);
        compare(shared, off, 1 + rnd.nextInt((int) (base + REGION - off)), "shared");
      } else if (kind < 78) {
        long size = rnd.nextInt(2 * REGION);
        priv.mount.truncate(size);
        priv.model.truncate(size);
        // FileChannel.truncate never grows a file; RandomAccessFile.setLength does
        if (rnd.nextBoolean()) {
          grow(mnt.resolve(name), local.resolve(name), size + rnd.nextInt(REGION));
        }
      } else if (kind < 83) {
        priv.mount.force(rnd.nextBoolean());
        priv.model.force(true);
        shared.mount.force(true);
      } else if (kind < 88) {
        String to = name.endsWith("x") ? "p" + w : "p" + w + "x";
        Files.move(mnt.resolve(name), mnt.resolve(to)); // the open channels follow the file
        Files.move(local.resolve(name), local.resolve(to));
        name = to;
      } else if (kind < 91) {
        priv.close();
        Files.delete(mnt.resolve(name));
        Files.delete(local.resolve(name));
        priv.open(mnt.resolve(name), local.resolve(name));
      } else {
        priv.close(); // close-to-open: the reopened file reads what was closed
        priv.open(mnt.resolve(name), local.resolve(name));
      }
    }
    priv.close();
    shared.close();
    return List.of(name);
  }

  private static void grow(Path m, Path l, long size) throws IOException {
    try (var a = new java.io.RandomAccessFile(m.toFile(), "rw");
         var b = new java.io.RandomAccessFile(l.toFile(), "rw")) {
      if (a.length() < size) {
        a.setLength(size);
        b.setLength(size);
      }
    }
  }

  private static void write(Pair p, long off, byte[] b) throws IOException {
    p.mount.write(ByteBuffer.wrap(b), off);
    p.model.write(ByteBuffer.wrap(b), off);
  }

  private static void compare(Pair p, long off, int len, String name) throws IOException {
    if (!name.equals("shared")) { // the shared file's size moves with the other workers
      assertEquals(p.model.size(), p.mount.size(), name + " size");
      assertArrayEquals(read(p.model, off, len), read(p.mount, off, len),
          name + " at " + off + "+" + len);
      return;
    }
    // Another worker writes the mount first and the model second, so between the two a
    // write above this worker's range has grown the mount's file but not yet the model's:
    // the mount may then read past the model's end of file. Within this worker's own range
    // such bytes are holes (only this worker writes there) and must read as zeros.
    byte[] model = read(p.model, off, len);
    byte[] mount = read(p.mount, off, len);
    assertTrue(mount.length >= model.length, "shared at " + off + "+" + len + ": the mount read "
        + mount.length + " bytes, the model " + model.length);
    assertArrayEquals(model, java.util.Arrays.copyOf(mount, model.length),
        "shared at " + off + "+" + len);
    assertArrayEquals(new byte[mount.length - model.length],
        java.util.Arrays.copyOfRange(mount, model.length, mount.length),
        "shared at " + off + "+" + len + ": past the model's end of file, holes read zeros");
  }

  private static byte[] read(FileChannel c, long off, int len) throws IOException {
    ByteBuffer b = ByteBuffer.allocate(len);
    while (b.hasRemaining()) {
      int n = c.read(b, off + b.position());
      if (n < 0) {
        break;
      }
    }
    return java.util.Arrays.copyOf(b.array(), b.position());
  }
}
