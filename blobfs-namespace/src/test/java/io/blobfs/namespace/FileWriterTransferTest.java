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

  private static InMemoryBlobStore store() {
    return new InMemoryBlobStore("t", new StoreLimits(200, 1L << 30, Integer.MAX_VALUE));
  }

  /** Stripes of 10,000 bytes, 4,096-byte buffers, a 100-byte inline threshold. */
  private static BlobNamespace ns(InMemoryBlobStore store) {
    return new BlobNamespace(store, new NamespaceOptions(10_000, 4096, 16_384, 100, false,
        100), StoreCallCounters.NONE);
  }

  /** A staged file holding {@code data}, open to be read from (the caller closes it). */
  private FileChannel staged(byte[] data) throws java.io.IOException {
    FileChannel ch = FileChannel.open(tmp.resolve("staged"), StandardOpenOption.CREATE,
        StandardOpenOption.WRITE, StandardOpenOption.READ);
    ch.write(ByteBuffer.wrap(data), 0);
    return ch;
  }

  private static byte[] readAll(BlobNamespace ns, String path) throws Exception {
    FileReader r = ns.open(FsPath.parse(path));
    ByteBuffer b = ByteBuffer.allocate((int) r.length());
    while (b.hasRemaining() && r.read(b.position(), b).get() > 0) { }
    return b.array();
  }

  /**
   * A range sent a second time after {@link FileWriter#awaitWrites} holds the second bytes
   * once committed, even where the store completes the first send late: its writes are
   * acknowledged before the second goes out. (Without the wait the late first write landed
   * over the second, and the file published the old bytes.)
   */
  @Test
  void aRangeSentAgainAfterAwaitWritesHoldsTheSecondBytes() throws Exception {
    InMemoryBlobStore mem = store();
    java.util.concurrent.atomic.AtomicBoolean slow = new java.util.concurrent.atomic.AtomicBoolean(true);
    // the store applies the first send's data writes 300 ms late, the second's at once
    io.blobfs.store.BlobStore late = (io.blobfs.store.BlobStore) java.lang.reflect.Proxy
        .newProxyInstance(getClass().getClassLoader(),
            new Class<?>[] {io.blobfs.store.BlobStore.class}, (proxy, m, args) -> {
              if (m.getName().equals("write") && ((String) args[0]).startsWith("d/")
                  && slow.get()) {
                return java.util.concurrent.CompletableFuture.runAsync(() -> {
                  try {
                    Thread.sleep(300);
                  } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                  }
                  mem.write((String) args[0], (Long) args[1], (ByteBuffer) args[2]).join();
                });
              }
              try {
                return m.invoke(mem, args);
              } catch (java.lang.reflect.InvocationTargetException e) {
                throw e.getCause();
              }
            });
    BlobNamespace ns = new BlobNamespace(late, new NamespaceOptions(10_000, 4096, 1 << 20,
        100, false, 100), StoreCallCounters.NONE);
    byte[] data = new byte[30_000];
    new Random(7).nextBytes(data);
    byte[] again = new byte[8_000];
    new Random(8).nextBytes(again);
    try (FileChannel ch = staged(data)) {
      FileWriter w = ns.create(FsPath.parse("/again"), false);
      w.transferFrom(ch, 0, data.length);
      w.awaitWrites();
      slow.set(false);
      ch.write(ByteBuffer.wrap(again), 5_000); // the staged bytes change after their send
      w.seek(5_000);
      w.transferFrom(ch, 5_000, again.length);
      w.seek(data.length);
      w.close();
    }
    byte[] want = data.clone();
    System.arraycopy(again, 0, want, 5_000, again.length);
    assertArrayEquals(want, readAll(ns, "/again"));
  }

  @Test
  void transferFromSumsExactlyTheBytesItSends() throws Exception {
    BlobNamespace ns = ns(store());
    byte[] data = new byte[45_678];
    new Random(6).nextBytes(data);
    java.util.zip.CRC32C sum = new java.util.zip.CRC32C();
    try (FileChannel ch = staged(data)) {
      FileWriter w = ns.create(FsPath.parse("/s"), false);
      w.transferFrom(ch, 1_000, 30_000, sum); // small heap buffer, then direct ones
      w.transferFrom(ch, 31_000, data.length - 31_000 + 3_000L, sum); // a hole at the end
      w.close();
    }
    byte[] want = Arrays.copyOf(Arrays.copyOfRange(data, 1_000, data.length),
        data.length - 1_000 + 3_000);
    assertArrayEquals(want, readAll(ns, "/s"));
    java.util.zip.CRC32C expected = new java.util.zip.CRC32C();
    expected.update(want);
    org.junit.jupiter.api.Assertions.assertEquals(expected.getValue(), sum.getValue());
  }

  @Test
  void transferFromAChannelWritesItsBytesAcrossStripesAndZerosPastItsEnd() throws Exception {
    // stripes of 10,000 bytes, 4,096-byte buffers, 100-byte inline threshold: the transfer
    // crosses buffer and stripe boundaries, and the first buffer is the small heap one
    BlobNamespace ns = ns(store());
    byte[] data = new byte[45_678];
    new Random(5).nextBytes(data);
    try (FileChannel ch = staged(data)) {
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

  @Test
  void rangesWrittenOutOfOrderAfterSeeksMakeTheWholeFile() throws Exception {
    // stripes of 10,000 bytes: the ranges cross stripe and buffer boundaries, the last one
    // written is the file's start, and one range is rewritten in the middle
    BlobNamespace ns = ns(store());
    byte[] data = new byte[45_678];
    new Random(6).nextBytes(data);
    try (FileChannel ch = staged(data)) {
      FileWriter w = ns.create(FsPath.parse("/f"), false);
      int[][] ranges = {{30_000, 45_678}, {12_345, 30_000}, {0, 12_345}};
      for (int[] r : ranges) {
        w.seek(r[0]);
        w.transferFrom(ch, r[0], r[1] - r[0]);
      }
      w.seek(20_000);
      w.write(data, 20_000, 50); // the same bytes again: a no-op rewrite
      w.close();
      // a small file written at an offset is still striped: its stripe holds the bytes
      FileWriter small = ns.create(FsPath.parse("/small"), false);
      small.seek(10);
      small.transferFrom(ch, 10, 40);
      small.seek(0);
      small.transferFrom(ch, 0, 10);
      small.close();
    }
    assertArrayEquals(data, readAll(ns, "/f"));
    assertArrayEquals(Arrays.copyOf(data, 50), readAll(ns, "/small"));
  }

  @Test
  void anAbortedWriterThatSoughtPastItsStartRemovesEveryStripeItWrote() throws Exception {
    InMemoryBlobStore store = store();
    BlobNamespace ns = ns(store);
    FileWriter w = ns.create(FsPath.parse("/f"), false);
    w.seek(35_000); // stripe 3
    w.write(new byte[5000], 0, 5000);
    w.seek(0);
    w.write(new byte[10], 0, 10); // buffered: never sent
    w.abort();
    for (int stripe = 0; stripe <= 4; stripe++) {
      org.junit.jupiter.api.Assertions.assertFalse(
          store.stat(ns.layout().dataKey(w.fileId(), stripe)).exists(), "stripe " + stripe);
    }
  }
}
