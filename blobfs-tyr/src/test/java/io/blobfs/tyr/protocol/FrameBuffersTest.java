package io.blobfs.tyr.protocol;

import static org.assertj.core.api.Assertions.assertThat;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import org.junit.jupiter.api.Test;

/** Frame buffers are kept for later frames of about the same size, within their bound. */
class FrameBuffersTest {
  private static final ByteBufAllocator ALLOC = ByteBufAllocator.DEFAULT;
  private static final int MIB = 1 << 20;

  @Test
  void aReleasedBufferServesTheNextFrameOfAboutItsSize() throws Exception {
    FrameBuffers buffers = new FrameBuffers(64 * MIB, 64 * MIB);
    ByteBuf first = buffers.take(ALLOC, MIB + 100);
    assertThat(first.capacity()).isEqualTo(MIB + 100);
    assertThat(first.maxCapacity()).isEqualTo(MIB + 100);
    assertThat(first.isDirect()).isTrue();
    assertThat(first.writerIndex()).isZero();
    long address = first.memoryAddress();
    first.writerIndex(first.capacity());
    // released on another thread, as a worker releases a frame once the log has it
    Thread worker = new Thread(first::release);
    worker.start();
    worker.join();
    assertThat(buffers.keptBytes()).isEqualTo(MIB + (64 << 10)); // rounded up to 64 KiB

    ByteBuf second = buffers.take(ALLOC, MIB + 300); // same 64 KiB class: same memory
    assertThat(second.memoryAddress()).isEqualTo(address);
    assertThat(second.capacity()).isEqualTo(MIB + 300);
    assertThat(second.writerIndex()).isZero();
    assertThat(buffers.keptBytes()).isZero();
    ByteBuf other = buffers.take(ALLOC, 3 * MIB); // another class: new memory
    assertThat(other.memoryAddress()).isNotEqualTo(address);
    second.release();
    other.release();
    assertThat(buffers.keptBytes()).isEqualTo(MIB + (64 << 10) + 3 * MIB);
  }

  @Test
  void atMostTheBoundIsKeptAndTheRestFreed() {
    FrameBuffers buffers = new FrameBuffers(2 * MIB, 64 * MIB);
    ByteBuf a = buffers.take(ALLOC, MIB);
    ByteBuf b = buffers.take(ALLOC, MIB);
    ByteBuf c = buffers.take(ALLOC, MIB);
    a.release();
    b.release();
    c.release();
    assertThat(buffers.keptBytes()).isEqualTo(2 * MIB);
    FrameBuffers none = new FrameBuffers(0, 64 * MIB);
    none.take(ALLOC, MIB).release();
    assertThat(none.keptBytes()).isZero();
  }

  @Test
  void atMostTheBoundIsOutAtOnceAndAReleaseMakesRoom() {
    FrameBuffers buffers = new FrameBuffers(0, 2 * MIB);
    ByteBuf a = buffers.take(ALLOC, MIB);
    ByteBuf b = buffers.take(ALLOC, MIB);
    assertThat(a).isNotNull();
    assertThat(b).isNotNull();
    assertThat(buffers.takenBytes()).isEqualTo(2 * MIB);
    assertThat(buffers.take(ALLOC, 1)).isNull(); // the caller gathers this frame instead
    a.release();
    assertThat(buffers.takenBytes()).isEqualTo(MIB);
    ByteBuf c = buffers.take(ALLOC, MIB);
    assertThat(c).isNotNull();
    b.release();
    c.release();
    assertThat(buffers.takenBytes()).isZero();
  }
}
