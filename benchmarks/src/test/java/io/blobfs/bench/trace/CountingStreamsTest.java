package io.blobfs.bench.trace;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.LongAdder;
import org.apache.hadoop.fs.FSDataInputStream;
import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.fs.FSInputStream;
import org.junit.jupiter.api.Test;

/** The time the counting streams add up is the time spent inside the wrapped calls. */
class CountingStreamsTest {
  /**
   * Long enough that a write of 3 bytes, preempted on a loaded machine (tens of ms at a
   * load of 30 on two cores), still takes less: the write test tells the two apart.
   */
  private static final long PAUSE_MS = 250;

  @Test
  void readTimeIsTheTimeInsideReads() throws IOException {
    LongAdder reads = new LongAdder();
    LongAdder nanos = new LongAdder();
    try (CountingInputStream in = new CountingInputStream(new FSDataInputStream(new Slow()),
        reads, nanos)) {
      assertThat(in.read(new byte[8], 0, 8)).isEqualTo(8);
      assertThat(in.read()).isEqualTo(0);
    }
    assertThat(reads.sum()).isEqualTo(2);
    assertThat(nanos.sum()).isGreaterThanOrEqualTo(TimeUnit.MILLISECONDS.toNanos(2 * PAUSE_MS));
  }

  @Test
  void writeTimeCountsWritesAndClose() throws IOException {
    LongAdder writes = new LongAdder();
    LongAdder nanos = new LongAdder();
    ByteArrayOutputStream sink = new ByteArrayOutputStream();
    OutputStream slowClose = new OutputStream() {
      @Override
      public void write(int b) {
        sink.write(b);
      }

      @Override
      public void close() {
        pause(); // a store that sends and publishes its buffer at close
      }
    };
    try (CountingOutputStream out = new CountingOutputStream(
        new FSDataOutputStream(slowClose, null), writes, nanos)) {
      out.write(new byte[] {1, 2, 3}, 0, 3);
      assertThat(nanos.sum()).isLessThan(TimeUnit.MILLISECONDS.toNanos(PAUSE_MS));
    }
    assertThat(sink.toByteArray()).containsExactly(1, 2, 3);
    assertThat(writes.sum()).isEqualTo(1);
    assertThat(nanos.sum()).isGreaterThanOrEqualTo(TimeUnit.MILLISECONDS.toNanos(PAUSE_MS));
  }

  private static void pause() {
    try {
      Thread.sleep(PAUSE_MS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  /** Zeros, each read call taking {@link #PAUSE_MS}. */
  private static final class Slow extends FSInputStream {
    private long pos;

    @Override
    public int read() {
      pause();
      pos++;
      return 0;
    }

    @Override
    public int read(byte[] b, int off, int len) {
      pause();
      pos += len;
      return len;
    }

    @Override
    public void seek(long p) {
      pos = p;
    }

    @Override
    public long getPos() {
      return pos;
    }

    @Override
    public boolean seekToNewSource(long targetPos) {
      return false;
    }
  }
}
