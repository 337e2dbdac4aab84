package io.blobfs.namespace;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;

import io.blobfs.store.StoreLimits;
import io.blobfs.store.memory.InMemoryBlobStore;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.Arrays;
import java.util.Random;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class FileWriterTransferTest {
  @TempDir
  Path tmp;

  private static byte[] readAll(BlobNamespace ns, String path) throws Exception {
    FileReader r = ns.open(FsPath.parse(path));
    ByteBuffer b = ByteBuffer.allocate((int) r.length());
    while (b.hasRemaining() && r.read(b.position(), b).get() > 0) { }
    return b.array();
  }

  @Test
  void transferFromAChannelWritesItsBytesAcrossStripesAndZerosPastItsEnd() throws Exception {
    // stripes of 10,000 bytes, 4,096-byte buffers, 100-byte inline threshold: the transfer
    // crosses buffer and stripe boundaries, and the first buffer is the small heap one
    BlobNamespace ns = new BlobNamespace(new InMemoryBlobStore("t", new StoreLimits(200,
        1L << 30, Integer.MAX_VALUE)), new NamespaceOptions(10_000, 4096, 16_384, 100, false,
        100), StoreCallCounters.NONE);
    byte[] data = new byte[45_678];
    new Random(5).nextBytes(data);
    Path file = tmp.resolve("staged");
    try (FileChannel ch = FileChannel.open(file, StandardOpenOption.CREATE,
        StandardOpenOption.WRITE, StandardOpenOption.READ)) {
      ch.write(ByteBuffer.wrap(data), 0);
      FileWriter w = ns.create(FsPath.parse("/f"), false);
      w.write(new byte[] {1, 2, 3}, 0, 3); // bytes before the transfer keep their place
      w.transferFrom(ch, 0, data.length + 5_000L); // 5,000 past the end: a hole
      w.close();
      FileWriter small = ns.create(FsPath.parse("/inline"), false);
      small.transferFrom(ch, 100, 50);
      small.close();
    }
    byte[] want = new byte[3 + data.length + 5_000];
    want[0] = 1;
    want[1] = 2;
    want[2] = 3;
    System.arraycopy(data, 0, want, 3, data.length);
    assertArrayEquals(want, readAll(ns, "/f"));
    assertArrayEquals(Arrays.copyOfRange(data, 100, 150), readAll(ns, "/inline"));
  }
}
