package io.blobfs.tyr.engine;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;

import io.blobfs.tyr.api.TxOp;
import java.nio.ByteBuffer;
import java.nio.channels.ClosedChannelException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * An interrupted caller must not take the log away from the rest of the node: a plain
 * FileChannel closes for every user when one of them is interrupted, and the engine's close
 * then failed on it (seen in CI: a recovery thread stopped with shutdownNow).
 */
class InterruptProofChannelTest {
  @TempDir
  Path dir;

  @Test
  void aWriteByAnInterruptedThreadLandsAndTheInterruptIsKept() throws Exception {
    try (InterruptProofChannel ch = InterruptProofChannel.open(dir.resolve("f"))) {
      byte[] data = new byte[100_000];
      new Random(1).nextBytes(data);
      Thread.currentThread().interrupt();
      try {
        ch.writeFully(ByteBuffer.wrap(data), 10);
        assertThat(Thread.currentThread().isInterrupted()).isTrue();
        ByteBuffer back = ByteBuffer.allocate(data.length);
        ch.readFully(back, 10);
        ch.force(true);
        assertArrayEquals(data, back.array());
      } finally {
        Thread.interrupted();
      }
      assertThat(ch.size()).isEqualTo(10 + data.length);
    }
  }

  @Test
  void readersInterruptedOverAndOverDoNotLoseAConcurrentWritersBytes() throws Exception {
    Path file = dir.resolve("f");
    int records = 400;
    int size = 8192;
    try (InterruptProofChannel ch = InterruptProofChannel.open(file)) {
      ch.writeFully(ByteBuffer.allocate(size), 0);
      AtomicReference<Throwable> failed = new AtomicReference<>();
      CountDownLatch writing = new CountDownLatch(1);
      Thread reader = new Thread(() -> {
        ByteBuffer b = ByteBuffer.allocate(size);
        while (writing.getCount() > 0) {
          b.clear();
          try {
            ch.readFully(b, 0);
          } catch (Throwable t) {
            failed.compareAndSet(null, t);
            return;
          }
          Thread.interrupted(); // the next read enters interrupted again, below
        }
      });
      reader.start();
      List<byte[]> written = new ArrayList<>();
      Random rnd = new Random(2);
      for (int i = 0; i < records; i++) {
        byte[] r = new byte[size];
        rnd.nextBytes(r);
        written.add(r);
        reader.interrupt();
        ch.writeFully(ByteBuffer.wrap(r), (long) i * size);
      }
      writing.countDown();
      reader.interrupt();
      reader.join(60_000);
      assertThat(failed.get()).isNull();
      ch.force(false);
      byte[] all = Files.readAllBytes(file);
      for (int i = 0; i < records; i++) {
        assertArrayEquals(written.get(i),
            java.util.Arrays.copyOfRange(all, i * size, (i + 1) * size), "record " + i);
      }
    }
  }

  @Test
  void afterCloseEveryCallFails() throws Exception {
    InterruptProofChannel ch = InterruptProofChannel.open(dir.resolve("f"));
    ch.close();
    assertThat(ch.isOpen()).isFalse();
    assertThatThrownBy(() -> ch.writeFully(ByteBuffer.allocate(1), 0))
        .isInstanceOf(ClosedChannelException.class);
    assertThatThrownBy(() -> ch.readFully(ByteBuffer.allocate(1), 0))
        .isInstanceOf(ClosedChannelException.class);
  }

  @Test
  void anEngineCommittedToByInterruptedThreadsStaysOpenAndClosesCleanly() throws Exception {
    EngineConfig config = new EngineConfig(dir, 4096, 64 << 10, SyncPolicy.INTERVAL,
        java.time.Duration.ofMillis(20), 256, 1L << 30, 8, java.time.Duration.ZERO, 0.5);
    byte[] value = new byte[20_000];
    new Random(3).nextBytes(value);
    try (TyrEngine e = TyrEngine.open(config)) {
      for (int i = 0; i < 20; i++) {
        Thread.currentThread().interrupt();
        try {
          TyrEngineTest.commit(e, new TxOp.Put("k" + i, ByteBuffer.wrap(value), false));
          assertArrayEquals(value, TyrEngineTest.read(e, "k" + i));
        } finally {
          Thread.interrupted();
        }
      }
    } // close forces the log: it threw ClosedChannelException before
    try (TyrEngine e = TyrEngine.open(config)) {
      for (int i = 0; i < 20; i++) {
        assertArrayEquals(value, TyrEngineTest.read(e, "k" + i), "k" + i + " after reopen");
      }
    }
  }
}
