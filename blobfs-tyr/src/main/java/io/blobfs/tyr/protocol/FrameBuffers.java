package io.blobfs.tyr.protocol;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.buffer.UnpooledUnsafeDirectByteBuf;
import io.netty.util.internal.PlatformDependent;
import java.nio.ByteBuffer;
import java.util.Queue;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The buffers a server reads large frames into ({@link FrameDecoder#readInPlace}), kept
 * for later frames when they are released instead of given back.
 *
 * <p>Why not Netty's pool: it frees a 4 MiB chunk as soon as its last buffer is released,
 * and a 1 MiB frame, a quarter of a chunk, often is that last buffer; the next frame then
 * costs a new chunk, zeroed by the JVM ({@code ByteBuffer.allocateDirect}) and faulted in
 * page by page by the kernel. perf put that at a quarter of the event loops' time per
 * byte written (session 9). A buffer kept here is memory already mapped and in use.
 *
 * <p>Sizes are rounded up to 64 KiB, so that the frames of one writer (whose keys differ
 * in length) share buffers; a buffer's capacity is still the exact frame size asked for.
 * At most {@code keepBytes} are kept, across all connections; a buffer released beyond
 * that is freed. Buffers are taken on event loops and released on any thread (a worker,
 * once the log has the bytes).
 *
 * <p>A buffer is taken when a frame's header arrives, before its bytes: a peer that
 * announces large frames and sends nothing would otherwise make the server hold them
 * whole (a review found 13 such connections exhaust 1 GiB of direct memory). So at most
 * {@code takenBytes} are out at once, across all connections; past that, {@link #take}
 * answers null and the decoder gathers the frame as it arrives, as it does over TLS.
 */
public final class FrameBuffers {
  private static final int ROUND = 64 << 10;

  private final long keepBytes;
  private final long maxTakenBytes;
  private final ConcurrentHashMap<Integer, Queue<ByteBuffer>> kept = new ConcurrentHashMap<>();
  private final AtomicLong keptBytes = new AtomicLong();
  private final AtomicLong takenBytes = new AtomicLong();

  public FrameBuffers(long keepBytes, long maxTakenBytes) {
    this.keepBytes = keepBytes;
    this.maxTakenBytes = maxTakenBytes;
  }

  /**
   * A direct buffer of capacity {@code size}, empty, kept here again once released; or
   * null when the buffers out would then pass their bound (or the platform has no Unsafe,
   * whose addresses the buffer needs): the caller gathers the frame instead.
   */
  ByteBuf take(ByteBufAllocator alloc, int size) {
    if (!PlatformDependent.hasUnsafe()) {
      return null;
    }
    if (takenBytes.addAndGet(size) > maxTakenBytes) {
      takenBytes.addAndGet(-size);
      return null;
    }
    return new Kept(alloc, size);
  }

  /** Bytes of buffers taken and not yet released. */
  long takenBytes() {
    return takenBytes.get();
  }

  /** Bytes kept for later frames now. */
  long keptBytes() {
    return keptBytes.get();
  }

  private ByteBuffer reuse(int size) {
    int rounded = (int) Math.min(Integer.MAX_VALUE, ((long) size + ROUND - 1) / ROUND * ROUND);
    Queue<ByteBuffer> queue = kept.get(rounded);
    ByteBuffer b = queue == null ? null : queue.poll();
    if (b == null) {
      b = ByteBuffer.allocateDirect(rounded);
    } else {
      keptBytes.addAndGet(-b.capacity());
    }
    return b.clear().limit(size); // the frame's exact size: its buffer's capacity
  }

  /** Keeps a released buffer for a later frame; false if there is no room (then freed). */
  private boolean keep(ByteBuffer b) {
    int c = b.capacity();
    if (keptBytes.addAndGet(c) > keepBytes) {
      keptBytes.addAndGet(-c);
      return false;
    }
    kept.computeIfAbsent(c, k -> new ConcurrentLinkedQueue<>()).add(b);
    return true;
  }

  /**
   * Netty's own unpooled direct buffer, but its memory comes from and goes back to the
   * enclosing {@link FrameBuffers} (an inner class: its allocation runs in the super
   * constructor, after javac has set the enclosing instance).
   */
  private final class Kept extends UnpooledUnsafeDirectByteBuf {
    // Set after the super constructor has allocated; read only when the buffer is freed.
    private final int taken;

    Kept(ByteBufAllocator alloc, int size) {
      super(alloc, size, size);
      this.taken = size;
    }

    @Override
    protected ByteBuffer allocateDirect(int size) {
      return reuse(size);
    }

    @Override
    protected void freeDirect(ByteBuffer buffer) {
      takenBytes.addAndGet(-taken);
      if (!keep(buffer)) {
        super.freeDirect(buffer);
      }
    }
  }
}
