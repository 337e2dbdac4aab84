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
import java.util.concurrent.atomic.AtomicLong;

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
 *
 * <p>Memory per stream: our direct buffers are chunk-sized and recycled, those of chunks
 * dropped by a seek too, once the store has finished filling them; until then their bytes
 * count against {@code maxBytes}, so a stream holds at most {@code maxBytes} plus one
 * chunk per seek whose dropped reads are still in flight (in practice {@code maxBytes}
 * plus one chunk: the read after a seek waits for its own chunk, asked after them).
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

  /** {@code buffer}: the direct buffer of ours the store reads into; null for a loan. */
  private record Chunk(long start, int length, ByteBuffer buffer,
      CompletableFuture<Bytes> bytes) {}

  private final FileReader reader;
  private final boolean lend;
  private final int chunkSize;
  private final long maxBytes;
  private final long keepBehind;
  private final ArrayDeque<Chunk> chunks = new ArrayDeque<>();
  /**
   * Buffers of consumed or dropped chunks, reused: direct buffers are costly to allocate,
   * and one left to the garbage collector stays outside any bound until a GC. Thread-safe:
   * a dropped chunk's buffer comes back on the store's thread when its read completes.
   * Shared with the read-aheads of other streams when the caller gives one ({@link
   * #ReadAhead(FileReader, long, ChunkBuffers)}): a stream then starts with the buffers a
   * closed one left.
   */
  private final ChunkBuffers free;
  /** Bytes of dropped chunks whose reads still fill our buffers: counted in maxBytes. */
  private final AtomicLong droppedInFlight = new AtomicLong();
  private int buffersAllocated;
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
    this(reader, maxBytes, keepBehind, ChunkBuffers.forReadAhead(checkedSize(chunkSize, maxBytes),
        maxBytes));
  }

  /**
   * As {@link #ReadAhead(FileReader, int, long)}, in chunks of {@code buffers}' size, taking
   * its buffers from {@code buffers} and giving them back there, for the next stream.
   */
  public ReadAhead(FileReader reader, long maxBytes, ChunkBuffers buffers) {
    this(reader, maxBytes, 0, buffers);
  }

  private ReadAhead(FileReader reader, long maxBytes, long keepBehind, ChunkBuffers buffers) {
    int chunkSize = buffers.size();
    if (maxBytes < chunkSize + keepBehind || keepBehind < 0) {
      throw new IllegalArgumentException("read-ahead of " + maxBytes
          + " bytes cannot hold one chunk of " + chunkSize + " and " + keepBehind + " behind");
    }
    this.reader = reader;
    this.lend = reader.lends();
    this.chunkSize = chunkSize;
    this.maxBytes = maxBytes;
    this.keepBehind = keepBehind;
    this.free = buffers;
  }

  private static int checkedSize(int chunkSize, long maxBytes) {
    if (chunkSize <= 0 || maxBytes < chunkSize) {
      throw new IllegalArgumentException("read-ahead of " + maxBytes
          + " bytes cannot hold one chunk of " + chunkSize);
    }
    return chunkSize;
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
        drop(done);
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
    long inFlight = droppedInFlight.get();
    for (Chunk c : chunks) {
      inFlight += c.length();
    }
    long length = reader.length();
    while (next < length && (chunks.isEmpty() || inFlight + chunkSize <= maxBytes)) {
      // chunks end on multiples of the chunk size, so that a read-ahead started mid-chunk
      // (a reader that seeked) still asks for whole stripes, never two halves of two
      int n = (int) Math.min(chunkSize - next % chunkSize, length - next);
      chunks.add(lend ? new Chunk(next, n, null, lent(next, n)) : buffered(next, n));
      next += n;
      inFlight += n;
      requested += n;
    }
  }

  private CompletableFuture<Bytes> lent(long start, int n) {
    return reader.lend(start, n).thenApply(Lent::new);
  }

  private Chunk buffered(long start, int n) {
    ByteBuffer buf = free.poll();
    if (buf == null) {
      buf = free.allocate();
      buffersAllocated++;
    }
    buf.clear().limit(n);
    return new Chunk(start, n, buf, read(start, n, buf));
  }

  private CompletableFuture<Bytes> read(long start, int n, ByteBuffer buf) {
    return reader.read(start, buf).thenApply(got -> {
      if (got < n) {
        throw new CompletionException(new EOFException(reader.info().path() + " ended at "
            + (start + Math.max(got, 0)) + " before the " + reader.length()
            + " bytes its record gives"));
      }
      return new Buffered(buf);
    });
  }

  /**
   * Forgets every chunk; loans still in flight are released when they arrive, and buffers
   * of ours still being filled come back to the pool when the store is done with them.
   */
  public void clear() {
    while (!chunks.isEmpty()) {
      drop(chunks.poll());
    }
  }

  /** A chunk nobody will read: its loans or buffer go back once its read has completed. */
  private void drop(Chunk c) {
    if (c.buffer() == null) {
      c.bytes().thenAccept(Bytes::release);
      return;
    }
    // Never back in the pool before the read completes: the store may still write into it.
    // A read that failed may have failed by a timeout of ours while the store still holds
    // the buffer (RADOS's backstop, a Týr local read), so only a read that succeeded gives
    // its buffer back; a failed one's is left to the garbage collector.
    droppedInFlight.addAndGet(c.length());
    c.bytes().whenComplete((bytes, error) -> {
      droppedInFlight.addAndGet(-c.length());
      if (error == null) {
        free.offer(c.buffer());
      }
    });
  }

  /** Direct buffers this read-ahead has allocated (the rest were reused). */
  public int buffersAllocated() {
    return buffersAllocated;
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

    @Override
    public void release() {
      free.offer(buffer); // dropped if the pool is full: it holds a bound's worth
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
