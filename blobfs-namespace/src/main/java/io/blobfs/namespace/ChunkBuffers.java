package io.blobfs.namespace;

import java.nio.ByteBuffer;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;

/**
 * Direct buffers of one size kept for reuse by {@link ReadAhead}s, so that a stream opened
 * after another one closed reads into the buffers it left instead of allocating its own.
 *
 * <p>Why: a fresh direct buffer costs more than its allocation: the JDK zeroes it, and
 * every page of it is a page fault when first touched. A read-ahead of 32 MiB in 4 MiB
 * chunks allocated 8 buffers per stream, 8,192 page faults per stream: on a Týr server
 * with local reads, where the bytes otherwise cost one {@code pread} and one copy, that
 * was a measurable share of a TestDFSIO read map's CPU (benchmarks/reports/
 * dfsio-s11-localread.md). A closed stream's buffers were left to the garbage collector,
 * so they stayed allocated until a GC anyway.
 *
 * <p>Bounded: it keeps at most {@code maxKept} buffers; a buffer given back beyond that is
 * dropped (to the garbage collector, as before). Thread-safe: buffers come back on the
 * store's threads when a dropped chunk's read completes.
 */
public final class ChunkBuffers {
  private final int size;
  private final BlockingQueue<ByteBuffer> free;
  private final java.util.concurrent.atomic.AtomicLong allocated =
      new java.util.concurrent.atomic.AtomicLong();

  /** Buffers of {@code size} bytes, at most {@code maxKept} kept while unused. */
  public ChunkBuffers(int size, int maxKept) {
    if (size <= 0 || maxKept <= 0) {
      throw new IllegalArgumentException("buffers of " + size + " bytes, " + maxKept + " kept");
    }
    this.size = size;
    this.free = new LinkedBlockingQueue<>(maxKept);
  }

  /**
   * Enough for one read-ahead of {@code maxBytes} in chunks of {@code size}: what it has in
   * flight plus the chunk being read.
   */
  public static ChunkBuffers forReadAhead(int size, long maxBytes) {
    return new ChunkBuffers(size, (int) Math.min(Integer.MAX_VALUE - 1, maxBytes / size) + 1);
  }

  public int size() {
    return size;
  }

  /** A kept buffer (cleared), or null: then the caller {@linkplain #allocate allocates} one. */
  ByteBuffer poll() {
    ByteBuffer b = free.poll();
    return b == null ? null : b.clear();
  }

  /**
   * A new buffer of {@link #size}: direct, so that a store in native code (librados) reads
   * into it without a copy of its own.
   */
  ByteBuffer allocate() {
    allocated.incrementAndGet();
    return ByteBuffer.allocateDirect(size);
  }

  /** Buffers allocated so far (for tests: the rest were reused). */
  public long allocated() {
    return allocated.get();
  }

  /** Done with {@code b}: kept for the next reader if there is room, else dropped. */
  void offer(ByteBuffer b) {
    if (b.capacity() == size) {
      free.offer(b);
    }
  }

  /** Buffers kept now (for tests). */
  public int kept() {
    return free.size();
  }

  /** Drops every kept buffer (the file system closing). */
  public void clear() {
    free.clear();
  }
}
