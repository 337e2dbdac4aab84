package io.blobfs.tyr.protocol;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.buffer.UnpooledUnsafeDirectByteBuf;
import io.netty.util.internal.PlatformDependent;
import io.netty.util.ResourceLeakDetector;
import io.netty.util.ResourceLeakDetectorFactory;
import io.netty.util.ResourceLeakTracker;
import java.io.Closeable;
import java.nio.ByteBuffer;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

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
 * that evicts (frees) the buffers released least recently, so that sizes no longer asked
 * for do not hold the bound against the sizes of today's frames. Buffers are taken on
 * event loops and released on any thread (a worker, once the log has the bytes); one lock
 * guards what is kept, taken once per frame of 256 KiB or more.
 *
 * <p>{@link #close} frees every kept buffer; one released after it is freed at once. A
 * buffer taken here is tracked by Netty's leak detector as its own buffers are (one never
 * released is reported with where it was taken), and {@link #takenBytes} counts those
 * out: a server's close warns when it is not zero, and tests assert it.
 *
 * <p>A buffer is taken when a frame's header arrives, before its bytes: a peer that
 * announces large frames and sends nothing would otherwise make the server hold them
 * whole (a review found 13 such connections exhaust 1 GiB of direct memory). So at most
 * {@code takenBytes} are out at once, across all connections; past that, {@link #take}
 * answers null and the decoder gathers the frame as it arrives, as it does over TLS.
 */
public final class FrameBuffers implements Closeable {
  private static final Logger LOG = LoggerFactory.getLogger(FrameBuffers.class);
  private static final int ROUND = 64 << 10;
  private static final ResourceLeakDetector<ByteBuf> LEAKS =
      ResourceLeakDetectorFactory.instance().newResourceLeakDetector(ByteBuf.class);

  private final long keepBytes;
  private final long maxTakenBytes;
  private final AtomicLong takenBytes = new AtomicLong();
  private final Object lock = new Object();
  /** Kept buffers, least recently released first. Guarded by {@link #lock}. */
  private final ArrayDeque<ByteBuffer> kept = new ArrayDeque<>();
  /** The capacities of {@link #kept}. Guarded by {@link #lock}. */
  private long keptBytes;
  /** Guarded by {@link #lock}. */
  private boolean closed;

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
  public long takenBytes() {
    return takenBytes.get();
  }

  /** Bytes kept for later frames now. */
  public long keptBytes() {
    synchronized (lock) {
      return keptBytes;
    }
  }

  /**
   * Frees every kept buffer; those still out are freed when released. Logs a warning
   * when some are still out: by then (a server's event loops and workers stopped) every
   * frame should have been released.
   */
  @Override
  public void close() {
    List<ByteBuffer> free;
    synchronized (lock) {
      closed = true;
      free = new ArrayList<>(kept);
      kept.clear();
      keptBytes = 0;
    }
    free.forEach(PlatformDependent::freeDirectBuffer);
    long out = takenBytes.get();
    if (out != 0) {
      LOG.warn("{} bytes of frame buffers not released at close", out);
    }
  }

  private ByteBuffer reuse(int size) {
    int rounded = (int) Math.min(Integer.MAX_VALUE, ((long) size + ROUND - 1) / ROUND * ROUND);
    ByteBuffer b = null;
    synchronized (lock) {
      // the most recently released first: the likeliest still in the CPU's caches
      for (Iterator<ByteBuffer> i = kept.descendingIterator(); i.hasNext(); ) {
        ByteBuffer k = i.next();
        if (k.capacity() == rounded) {
          i.remove();
          keptBytes -= rounded;
          b = k;
          break;
        }
      }
    }
    if (b == null) {
      b = ByteBuffer.allocateDirect(rounded);
    }
    return b.clear().limit(size); // the frame's exact size: its buffer's capacity
  }

  /**
   * Keeps a released buffer for a later frame, evicting the least recently released
   * beyond the bound; false if it cannot be kept (larger than the bound, or closed): then
   * the caller frees it.
   */
  private boolean keep(ByteBuffer b) {
    int c = b.capacity();
    List<ByteBuffer> evicted = new ArrayList<>(0);
    synchronized (lock) {
      if (closed || c > keepBytes) {
        return false;
      }
      while (keptBytes + c > keepBytes) {
        ByteBuffer old = kept.removeFirst();
        keptBytes -= old.capacity();
        evicted.add(old);
      }
      kept.addLast(b);
      keptBytes += c;
    }
    evicted.forEach(PlatformDependent::freeDirectBuffer);
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
    /** Netty's leak detector's record of this buffer; null when not sampled. */
    private final ResourceLeakTracker<ByteBuf> leak;

    Kept(ByteBufAllocator alloc, int size) {
      super(alloc, size, size);
      this.taken = size;
      this.leak = LEAKS.track(this);
    }

    @Override
    protected ByteBuffer allocateDirect(int size) {
      return reuse(size);
    }

    @Override
    protected void freeDirect(ByteBuffer buffer) {
      if (!keep(buffer)) {
        super.freeDirect(buffer);
      }
    }

    @Override
    protected void deallocate() {
      super.deallocate();
      takenBytes.addAndGet(-taken);
      if (leak != null) {
        leak.close(this);
      }
    }
  }
}
