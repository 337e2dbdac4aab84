package io.blobfs.namespace;

import io.blobfs.store.Futures;
import io.blobfs.store.LendsReads.ReadLoan;
import java.io.EOFException;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.util.ArrayDeque;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;

/**
 * Sequential read-ahead over a {@link FileReader}: the chunks that follow the reader's
 * position are requested before they are needed, up to a fixed number of bytes, so a
 * store with per-call latency serves several at once (on RADOS, from several objects and
 * OSDs in parallel). Memory stays bounded by {@code maxBytes} plus one chunk whatever
 * the file size. Not thread-safe: one per input stream.
 *
 * <p>A chunk is either read into a direct buffer of ours (librados reads into it in
 * place) or, where the store lends the buffers its reads arrive in ({@link
 * FileReader#lends}, Týr over TCP), kept in those: each byte is then copied once, into
 * the caller's array, instead of into our buffer first.
 */
public final class ReadAhead {
  /** A chunk's bytes, whichever way they were fetched. */
  private interface Bytes {
    void copyTo(int at, byte[] b, int off, int len);

    /** Copies {@code len} bytes from {@code at} into {@code dst} at its position, advancing it. */
    void copyTo(int at, ByteBuffer dst, int len);

    /** Done with them: a loan goes back to the store; our buffer may be reused. */
    void release();
  }

  private record Chunk(long start, int length, CompletableFuture<Bytes> bytes) {}

  private final FileReader reader;
  private final boolean lend;
  private final int chunkSize;
  private final long maxBytes;
  private final long keepBehind;
  private final ArrayDeque<Chunk> chunks = new ArrayDeque<>();
  /** Buffers of consumed chunks, reused: direct buffers are costly to allocate. */
  private final ArrayDeque<ByteBuffer> free = new ArrayDeque<>();
  private long next;
  private long requested;

  public ReadAhead(FileReader reader, int chunkSize, long maxBytes) {
    this(reader, chunkSize, maxBytes, 0);
  }

  /**
   * As {@link #ReadAhead(FileReader, int, long)}, keeping chunks up to {@code keepBehind}
   * bytes below the position of the latest read (counted in {@code maxBytes}), for a
   * reader whose sequential reads may arrive slightly out of order (a FUSE mount's
   * threads serving the kernel's concurrent read-ahead requests): a read just below one
   * already served finds its chunk still held instead of costing a store call.
   */
  public ReadAhead(FileReader reader, int chunkSize, long maxBytes, long keepBehind) {
    if (chunkSize <= 0 || maxBytes < chunkSize + keepBehind || keepBehind < 0) {
      throw new IllegalArgumentException("read-ahead of " + maxBytes
          + " bytes cannot hold one chunk of " + chunkSize + " and " + keepBehind + " behind");
    }
    this.reader = reader;
    this.lend = reader.lends();
    this.chunkSize = chunkSize;
    this.maxBytes = maxBytes;
    this.keepBehind = keepBehind;
  }

  /**
   * Copies bytes of the file from {@code pos} into {@code b}: {@code len} of them, or
   * fewer up to the end of the chunk that holds {@code pos} (at least one). Returns the
   * count, or -1 at or past the end of the file.
   */
  public int read(long pos, byte[] b, int off, int len) throws IOException {
    Chunk c = chunkAt(pos);
    if (c == null) {
      return -1;
    }
    Bytes bytes = Futures.await(c.bytes());
    int at = (int) (pos - c.start());
    int n = Math.min(len, c.length() - at);
    bytes.copyTo(at, b, off, n);
    return n;
  }

  /**
   * As {@link #read(long, byte[], int, int)}, into {@code dst} from its position up to
   * its limit (or the end of the chunk): one copy from the store's buffer into the
   * caller's, which may be direct (a FUSE reply). Advances {@code dst}'s position.
   */
  public int read(long pos, ByteBuffer dst) throws IOException {
    Chunk c = chunkAt(pos);
    if (c == null) {
      return -1;
    }
    Bytes bytes = Futures.await(c.bytes());
    int at = (int) (pos - c.start());
    int n = Math.min(dst.remaining(), c.length() - at);
    bytes.copyTo(at, dst, n);
    return n;
  }

  /** The first byte still held or in flight (where a read costs no new store call). */
  public long firstBuffered() {
    return chunks.isEmpty() ? next : chunks.peek().start();
  }

  /** The end of what has been asked of the store: reads below it are being fetched. */
  public long requestedEnd() {
    return next;
  }

  /** The chunk that holds {@code pos}, requesting the following ones; null past the end. */
  private Chunk chunkAt(long pos) throws IOException {
    if (pos >= reader.length()) {
      return null;
    }
    while (!chunks.isEmpty()
        && chunks.peek().start() + chunks.peek().length() + keepBehind <= pos) {
      Chunk done = chunks.poll();
      if (done.bytes().isDone() && !done.bytes().isCompletedExceptionally()) {
        done.bytes().join().release();
      } else {
        discard(done);
      }
    }
    if (chunks.isEmpty() || chunks.peek().start() > pos || pos >= next) {
      clear();
      next = pos;
    }
    topUp();
    for (Chunk c : chunks) { // chunks are contiguous from the first: pos is in one
      if (pos < c.start() + c.length()) {
        return c;
      }
    }
    throw new IllegalStateException("no chunk holds " + pos); // topUp asks for pos first
  }

  private void topUp() {
    long inFlight = 0;
    for (Chunk c : chunks) {
      inFlight += c.length();
    }
    long length = reader.length();
    while (next < length && (chunks.isEmpty() || inFlight + chunkSize <= maxBytes)) {
      // chunks end on multiples of the chunk size, so that a read-ahead started mid-chunk
      // (a reader that seeked) still asks for whole stripes, never two halves of two
      int n = (int) Math.min(chunkSize - next % chunkSize, length - next);
      chunks.add(new Chunk(next, n, lend ? lent(next, n) : buffered(next, n)));
      next += n;
      inFlight += n;
      requested += n;
    }
  }

  private CompletableFuture<Bytes> lent(long start, int n) {
    return reader.lend(start, n).thenApply(Lent::new);
  }

  private CompletableFuture<Bytes> buffered(long start, int n) {
    // Direct: a store in native code (librados) reads into it without a copy of its own.
    ByteBuffer buf = free.isEmpty() ? ByteBuffer.allocateDirect(chunkSize) : free.poll();
    buf.clear().limit(n);
    return reader.read(start, buf).thenApply(got -> {
      if (got < n) {
        throw new CompletionException(new EOFException(reader.info().path() + " ended at "
            + (start + Math.max(got, 0)) + " before the " + reader.length()
            + " bytes its record gives"));
      }
      return new Buffered(buf);
    });
  }

  /** Forgets every chunk; loans still in flight are released when they arrive. */
  public void clear() {
    while (!chunks.isEmpty()) {
      discard(chunks.poll());
    }
  }

  /**
   * A chunk nobody will read: its loans go back whenever they arrive; a buffer of ours
   * still being filled is left to the garbage collector, since the store writes into it.
   */
  private static void discard(Chunk c) {
    c.bytes().thenAccept(bytes -> {
      if (bytes instanceof Lent) {
        bytes.release();
      }
    });
  }

  /** Bytes asked of the store so far. */
  public long bytesRequested() {
    return requested;
  }

  private final class Buffered implements Bytes {
    private final ByteBuffer buffer;

    Buffered(ByteBuffer buffer) {
      this.buffer = buffer;
    }

    @Override
    public void copyTo(int at, byte[] b, int off, int len) {
      buffer.get(at, b, off, len);
    }

    @Override
    public void copyTo(int at, ByteBuffer dst, int len) {
      dst.put(dst.position(), buffer, at, len);
      dst.position(dst.position() + len);
    }

    /** On the reader's thread only (the free list is not shared). */
    @Override
    public void release() {
      if (buffer.capacity() == chunkSize) {
        free.add(buffer);
      }
    }
  }

  /** A chunk as the store's loans, in order (one per stripe a chunk spans, or more). */
  private static final class Lent implements Bytes {
    private final List<ReadLoan> loans;

    Lent(List<ReadLoan> loans) {
      this.loans = loans;
    }

    @Override
    public void copyTo(int at, byte[] b, int off, int len) {
      for (ReadLoan loan : loans) {
        if (len == 0) {
          return;
        }
        if (at >= loan.length()) {
          at -= loan.length();
          continue;
        }
        int n = Math.min(len, loan.length() - at);
        loan.copyTo(at, b, off, n);
        off += n;
        len -= n;
        at = 0;
      }
    }

    @Override
    public void copyTo(int at, ByteBuffer dst, int len) {
      for (ReadLoan loan : loans) {
        if (len == 0) {
          return;
        }
        if (at >= loan.length()) {
          at -= loan.length();
          continue;
        }
        int n = Math.min(len, loan.length() - at);
        loan.copyTo(at, dst, n);
        len -= n;
        at = 0;
      }
    }

    @Override
    public void release() {
      loans.forEach(ReadLoan::release);
    }
  }
}
