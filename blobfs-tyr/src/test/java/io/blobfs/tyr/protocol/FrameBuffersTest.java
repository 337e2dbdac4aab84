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

  /**
   * A bound full of buffers of a size no longer asked for makes room for today's sizes:
   * the buffers released least recently are freed first (before, a 512 KiB frame's buffer
   * was freed on release while stale 1 MiB ones held the whole bound, and every later
   * 512 KiB frame cost new memory).
   */
  @Test
  void buffersOfSizesNoLongerAskedForAreEvictedLeastRecentlyReleasedFirst() {
    FrameBuffers buffers = new FrameBuffers(2 * MIB, 64 * MIB);
    ByteBuf old1 = buffers.take(ALLOC, MIB);
    ByteBuf old2 = buffers.take(ALLOC, MIB);
    old1.release();
    old2.release();
    assertThat(buffers.keptBytes()).isEqualTo(2 * MIB);

    ByteBuf a = buffers.take(ALLOC, MIB / 2);
    ByteBuf b = buffers.take(ALLOC, MIB / 2);
    long addressA = a.memoryAddress();
    long addressB = b.memoryAddress();
    a.release(); // evicts old1, the least recently released
    assertThat(buffers.keptBytes()).isEqualTo(MIB + MIB / 2);
    b.release(); // fits beside old2
    assertThat(buffers.keptBytes()).isEqualTo(2 * MIB);

    ByteBuf again1 = buffers.take(ALLOC, MIB / 2);
    ByteBuf again2 = buffers.take(ALLOC, MIB / 2);
    assertThat(java.util.List.of(again1.memoryAddress(), again2.memoryAddress()))
        .containsExactlyInAnyOrder(addressA, addressB);
    assertThat(buffers.keptBytes()).isEqualTo(MIB); // old2 alone
    again1.release();
    again2.release();
    ByteBuf large = buffers.take(ALLOC, 3 * MIB); // larger than the bound: never kept
    large.release();
    assertThat(buffers.keptBytes()).isEqualTo(2 * MIB);
  }

  /** A closed FrameBuffers keeps nothing: what it kept is freed, later releases too. */
  @Test
  void closeFreesWhatIsKeptAndALaterReleaseIsNotKept() {
    FrameBuffers buffers = new FrameBuffers(64 * MIB, 64 * MIB);
    ByteBuf out = buffers.take(ALLOC, MIB);
    buffers.take(ALLOC, 2 * MIB).release();
    assertThat(buffers.keptBytes()).isEqualTo(2 * MIB);
    buffers.close();
    assertThat(buffers.keptBytes()).isZero();
    assertThat(buffers.takenBytes()).isEqualTo(MIB);
    out.writeLong(7); // still usable until released
    out.release();
    assertThat(buffers.keptBytes()).isZero();
    assertThat(buffers.takenBytes()).isZero();
  }
}
