package io.blobfs.tyr.protocol;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.channel.RecvByteBufAllocator;
import java.util.function.Supplier;

/**
 * A channel's read buffers, asking first whether the bytes are already awaited somewhere:
 * {@link FrameDecoder} names the unfilled rest of a large frame, and the socket reads
 * into it instead of into a buffer of its own that the decoder would then copy. Everything
 * else (how much to read, when to stop) is the channel's own allocator's.
 */
final class InPlaceReads implements RecvByteBufAllocator {
  private final RecvByteBufAllocator base;
  private final Supplier<ByteBuf> awaited;

  /** @param awaited where the next read should go, or null for a buffer of its own */
  InPlaceReads(RecvByteBufAllocator base, Supplier<ByteBuf> awaited) {
    this.base = base;
    this.awaited = awaited;
  }

  @Override
  public Handle newHandle() {
    return new DelegatingHandle(base.newHandle()) {
      @Override
      public ByteBuf allocate(ByteBufAllocator alloc) {
        ByteBuf into = awaited.get();
        return into != null ? into : delegate().allocate(alloc);
      }
    };
  }
}
