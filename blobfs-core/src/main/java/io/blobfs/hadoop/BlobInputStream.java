package io.blobfs.hadoop;

import static org.apache.hadoop.fs.statistics.StreamStatisticNames.*;

import io.blobfs.namespace.ChunkBuffers;
import io.blobfs.namespace.FileReader;
import io.blobfs.namespace.ReadAhead;
import io.blobfs.store.Futures;
import java.io.EOFException;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.function.IntFunction;
import org.apache.hadoop.fs.CanUnbuffer;
import org.apache.hadoop.fs.FSExceptionMessages;
import org.apache.hadoop.fs.FSInputStream;
import org.apache.hadoop.fs.FileRange;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.StreamCapabilities;
import org.apache.hadoop.fs.VectoredReadUtils;
import org.apache.hadoop.fs.statistics.IOStatistics;
import org.apache.hadoop.fs.statistics.IOStatisticsSource;
import org.apache.hadoop.fs.statistics.impl.IOStatisticsStore;

/**
 * Hadoop input stream over a {@link FileReader}: a seek position and one read buffer.
 * Large reads go straight into the caller's array; smaller ones are served from a
 * buffer sized by the read policy. Positioned and vectored reads bypass the buffer and
 * may run concurrently with each other.
 */
final class BlobInputStream extends FSInputStream
    implements CanUnbuffer, StreamCapabilities, IOStatisticsSource {
  /**
   * A request at least this large goes straight into the caller's array: it amortises a
   * store call by itself, and a copy through the buffer would cost more than it saves.
   */
  static final int DIRECT_READ_MIN = 1 << 20;

  private final FileReader reader;
  private final boolean inProcess;
  private final long length;
  private final String path;
  private final int sequentialBuffer;
  private final long readAheadBytes;
  private final int randomMin;
  private final IOStatisticsStore stats = BlobStatistics.forInputStream();
  private final IOStatisticsStore fsStats;
  private final FileSystem.Statistics hadoopStats;
  /** The file system's read-ahead buffers, shared by its streams; null: none to share. */
  private final ChunkBuffers sharedBuffers;
  private ReadPolicy policy;
  private long pos;
  private ReadAhead readAhead;
  private long readAheadCounted;
  private byte[] buffer;
  private long bufferStart;
  private int bufferLength;
  private volatile boolean closed;

  BlobInputStream(FileReader reader, ReadPolicy policy, int sequentialBuffer,
      long readAheadBytes, int randomMin, IOStatisticsStore fsStats,
      FileSystem.Statistics hadoopStats, ChunkBuffers sharedBuffers) {
    this.reader = reader;
    this.sharedBuffers = sharedBuffers;
    this.inProcess = reader.inProcess();
    this.readAheadBytes = readAheadBytes;
    this.length = reader.length();
    this.path = reader.info().path().toString();
    this.policy = policy;
    this.sequentialBuffer = sequentialBuffer;
    this.randomMin = randomMin;
    this.fsStats = fsStats;
    this.hadoopStats = hadoopStats;
    stats.incrementCounter(STREAM_READ_OPENED);
  }

  @Override
  public synchronized int read() throws IOException {
    byte[] one = new byte[1];
    int n = read(one, 0, 1);
    return n <= 0 ? -1 : one[0] & 0xff;
  }

  @Override
  public synchronized int read(byte[] b, int off, int len) throws IOException {
    checkOpen();
    java.util.Objects.checkFromIndexSize(off, len, b.length);
    if (len == 0) {
      return 0;
    }
    if (pos >= length) {
      return -1;
    }
    stats.incrementCounter(STREAM_READ_OPERATIONS);
    int n;
    if (inProcess) {
      n = fetch(pos, ByteBuffer.wrap(b, off, len)); // a copy through a buffer costs more
    } else if (policy != ReadPolicy.RANDOM && readAheadBytes >= sequentialBuffer) {
      n = readAhead(b, off, len);
    } else if (buffered(pos)) {
      n = Math.min(len, (int) (bufferStart + bufferLength - pos));
      System.arraycopy(buffer, (int) (pos - bufferStart), b, off, n);
    } else if (len >= Math.min(fetchSize(len), DIRECT_READ_MIN)) {
      n = fetch(pos, ByteBuffer.wrap(b, off, len));
    } else {
      fill(pos, fetchSize(len));
      n = Math.min(len, bufferLength);
      System.arraycopy(buffer, 0, b, off, n);
    }
    pos += n;
    if (n < len) {
      stats.incrementCounter(STREAM_READ_OPERATIONS_INCOMPLETE);
    }
    count(n);
    return n;
  }

  /** Sequential reads on a store with latency: served from chunks fetched in parallel. */
  private int readAhead(byte[] b, int off, int len) throws IOException {
    if (readAhead == null) {
      // The file system's buffers when they fit this stream's chunks (an openFile buffer
      // size of its own gets buffers of its own).
      readAhead = sharedBuffers != null && sharedBuffers.size() == sequentialBuffer
          ? new ReadAhead(reader, readAheadBytes, sharedBuffers)
          : new ReadAhead(reader, sequentialBuffer, readAheadBytes);
    }
    int n;
    try {
      n = readAhead.read(pos, b, off, len);
    } catch (IOException e) {
      stats.incrementCounter(STREAM_READ_EXCEPTIONS);
      throw e;
    }
    long fetched = readAhead.bytesRequested();
    stats.incrementCounter(STREAM_READ_TOTAL_BYTES, fetched - readAheadCounted);
    readAheadCounted = fetched;
    return n;
  }

  private boolean buffered(long at) {
    return buffer != null && at >= bufferStart && at < bufferStart + bufferLength;
  }

  /** Bytes to fetch per store read for a caller asking {@code wanted}. */
  private int fetchSize(int wanted) {
    return policy == ReadPolicy.RANDOM ? Math.max(wanted, randomMin) : sequentialBuffer;
  }

  private void fill(long at, int size) throws IOException {
    int want = (int) Math.min(size, length - at);
    if (buffer == null || buffer.length < want) {
      buffer = new byte[Math.max(want, Math.min(size, sequentialBuffer))];
    }
    bufferStart = at;
    bufferLength = 0;
    bufferLength = fetch(at, ByteBuffer.wrap(buffer, 0, want));
  }

  private int fetch(long at, ByteBuffer dst) throws IOException {
    try {
      int n = Futures.await(reader.read(at, dst));
      if (n > 0) {
        stats.incrementCounter(STREAM_READ_TOTAL_BYTES, n);
      }
      return n;
    } catch (IOException e) {
      stats.incrementCounter(STREAM_READ_EXCEPTIONS);
      throw e;
    }
  }

  private void count(int n) {
    if (n > 0) {
      stats.incrementCounter(STREAM_READ_BYTES, n);
      if (hadoopStats != null) {
        hadoopStats.incrementBytesRead(n);
      }
    }
  }

  @Override
  public synchronized void seek(long target) throws IOException {
    checkOpen();
    if (target < 0) {
      throw new EOFException(FSExceptionMessages.NEGATIVE_SEEK + " " + target + " in " + path);
    }
    if (target > length) {
      throw new EOFException(FSExceptionMessages.CANNOT_SEEK_PAST_EOF + " " + target
          + " > " + length + " in " + path);
    }
    if (target == pos) {
      return;
    }
    stats.incrementCounter(STREAM_READ_SEEK_OPERATIONS);
    boolean backward = target < pos;
    stats.incrementCounter(backward
        ? STREAM_READ_SEEK_BACKWARD_OPERATIONS : STREAM_READ_SEEK_FORWARD_OPERATIONS);
    if (policy == ReadPolicy.ADAPTIVE && !buffered(target)
        && (backward || target > pos + Math.max(sequentialBuffer, readAheadBytes))) {
      policy = ReadPolicy.RANDOM;
      stats.incrementCounter(STREAM_READ_SEEK_POLICY_CHANGED);
      dropReadAhead();
    }
    pos = target;
  }

  @Override
  public synchronized long getPos() throws IOException {
    return pos;
  }

  @Override
  public boolean seekToNewSource(long targetPos) {
    return false;
  }

  @Override
  public synchronized int available() throws IOException {
    checkOpen();
    return (int) Math.min(Integer.MAX_VALUE, length - pos);
  }

  @Override
  public int read(long position, byte[] b, int off, int len) throws IOException {
    checkOpen();
    validatePositionedReadArgs(position, b, off, len);
    if (len == 0) {
      return 0;
    }
    if (position >= length) {
      return -1;
    }
    int n = fetch(position, ByteBuffer.wrap(b, off, len));
    count(n);
    return n;
  }

  @Override
  public void readFully(long position, byte[] b, int off, int len) throws IOException {
    checkOpen();
    validatePositionedReadArgs(position, b, off, len);
    if (position > length - len) { // position + len may be past Long.MAX_VALUE
      throw new EOFException(FSExceptionMessages.EOF_IN_READ_FULLY + " " + path + " at "
          + position + " + " + len + " > " + length);
    }
    stats.incrementCounter(STREAM_READ_FULLY_OPERATIONS);
    if (len > 0) {
      count(fetch(position, ByteBuffer.wrap(b, off, len)));
    }
  }

  @Override
  public void readVectored(List<? extends FileRange> ranges, IntFunction<ByteBuffer> allocate)
      throws IOException {
    checkOpen();
    List<? extends FileRange> sorted =
        VectoredReadUtils.validateAndSortRanges(ranges, Optional.of(length));
    stats.incrementCounter(STREAM_READ_VECTORED_OPERATIONS);
    stats.incrementCounter(STREAM_READ_VECTORED_INCOMING_RANGES, sorted.size());
    for (FileRange range : sorted) {
      ByteBuffer buf = allocate.apply(range.getLength());
      CompletableFuture<ByteBuffer> result = reader.read(range.getOffset(), buf)
          .thenApply(n -> {
            if (n < range.getLength()) {
              throw new java.util.concurrent.CompletionException(new EOFException(
                  "range " + range + " runs past the end of " + path));
            }
            count(n);
            buf.flip();
            return buf;
          });
      range.setData(result);
    }
  }

  private void dropReadAhead() {
    if (readAhead != null) {
      readAhead.clear();
      readAhead = null;
    }
  }

  @Override
  public synchronized void unbuffer() {
    dropReadAhead();
    reader.unbuffer(); // the store's snapshots of its stripes; a later read opens them again
    buffer = null;
    bufferLength = 0;
    stats.incrementCounter(STREAM_READ_UNBUFFERED);
  }

  @Override
  public synchronized void close() {
    if (closed) {
      return;
    }
    closed = true;
    dropReadAhead();
    reader.close();
    buffer = null;
    stats.incrementCounter(STREAM_READ_CLOSED);
    fsStats.aggregate(stats);
  }

  private void checkOpen() throws IOException {
    if (closed) {
      throw new IOException(FSExceptionMessages.STREAM_IS_CLOSED + ": " + path);
    }
  }

  @Override
  public boolean hasCapability(String capability) {
    switch (capability.toLowerCase(java.util.Locale.ROOT)) {
      case StreamCapabilities.UNBUFFER:
      case StreamCapabilities.IOSTATISTICS:
      case StreamCapabilities.VECTOREDIO:
        return true;
      default:
        return false;
    }
  }

  @Override
  public IOStatistics getIOStatistics() {
    return stats;
  }

  @Override
  public String toString() {
    return "BlobInputStream{" + path + ", pos=" + pos + ", length=" + length + ", policy="
        + policy + ", " + stats + "}";
  }
}
