package io.blobfs.namespace;

import io.blobfs.store.Futures;
import java.io.EOFException;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.util.ArrayDeque;

/**
 * Sequential read-ahead over a {@link FileReader}: the chunks that follow the reader's
 * position are requested before they are needed, up to a fixed number of bytes, so a
 * store with per-call latency serves several at once (on RADOS, from several objects and
 * OSDs in parallel). Memory stays bounded by {@code maxBytes} plus one chunk whatever
 * the file size. Not thread-safe: one per input stream.
 */
public final class ReadAhead {
  private record Chunk(long start, int length, ByteBuffer buffer,
      java.util.concurrent.CompletableFuture<Integer> done) {}

  private final FileReader reader;
  private final int chunkSize;
  private final long maxBytes;
  private final ArrayDeque<Chunk> chunks = new ArrayDeque<>();
  /** Buffers of consumed chunks, reused: direct buffers are costly to allocate. */
  private final ArrayDeque<ByteBuffer> free = new ArrayDeque<>();
  private long next;
  private long requested;

  public ReadAhead(FileReader reader, int chunkSize, long maxBytes) {
    if (chunkSize <= 0 || maxBytes < chunkSize) {
      throw new IllegalArgumentException("read-ahead of " + maxBytes
          + " bytes cannot hold one chunk of " + chunkSize);
    }
    this.reader = reader;
    this.chunkSize = chunkSize;
    this.maxBytes = maxBytes;
  }

  /**
   * The bytes of the file from {@code pos} to the end of the chunk that holds it (at least
   * one), as a view valid until the next call; null at or past the end of the file.
   */
  public ByteBuffer at(long pos) throws IOException {
    if (pos >= reader.length()) {
      return null;
    }
    while (!chunks.isEmpty() && chunks.peek().start() + chunks.peek().length() <= pos) {
      Chunk done = chunks.poll();
      if (done.done().isDone() && done.buffer().capacity() == chunkSize) {
        free.add(done.buffer());
      }
    }
    if (chunks.isEmpty() || chunks.peek().start() > pos) {
      clear();
      next = pos;
    }
    topUp();
    Chunk c = chunks.peek();
    int n = Futures.await(c.done());
    if (n < c.length()) {
      throw new EOFException(reader.info().path() + " ended at " + (c.start() + Math.max(n, 0))
          + " before the " + reader.length() + " bytes its record gives");
    }
    ByteBuffer view = c.buffer().duplicate();
    view.limit(c.length());
    view.position((int) (pos - c.start()));
    return view;
  }

  private void topUp() {
    long inFlight = 0;
    for (Chunk c : chunks) {
      inFlight += c.length();
    }
    long length = reader.length();
    while (next < length && (chunks.isEmpty() || inFlight + chunkSize <= maxBytes)) {
      int n = (int) Math.min(chunkSize, length - next);
      // Direct: a store in native code (librados) reads into it without a copy of its own.
      ByteBuffer buf = free.isEmpty() ? ByteBuffer.allocateDirect(chunkSize) : free.poll();
      buf.clear().limit(n);
      chunks.add(new Chunk(next, n, buf, reader.read(next, buf)));
      next += n;
      inFlight += n;
      requested += n;
    }
  }

  /** Forgets every chunk; reads still in flight finish into buffers nobody keeps. */
  public void clear() {
    chunks.clear();
  }

  /** Bytes asked of the store so far. */
  public long bytesRequested() {
    return requested;
  }
}
