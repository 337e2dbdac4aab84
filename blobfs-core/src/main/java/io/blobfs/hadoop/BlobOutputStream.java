package io.blobfs.hadoop;

import static org.apache.hadoop.fs.statistics.StreamStatisticNames.*;

import io.blobfs.namespace.FileWriter;
import java.io.IOException;
import java.io.OutputStream;
import java.util.concurrent.atomic.AtomicBoolean;
import org.apache.hadoop.fs.Abortable;
import org.apache.hadoop.fs.CommonPathCapabilities;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.StreamCapabilities;
import org.apache.hadoop.fs.Syncable;
import org.apache.hadoop.fs.statistics.IOStatistics;
import org.apache.hadoop.fs.statistics.IOStatisticsSource;
import org.apache.hadoop.fs.statistics.impl.IOStatisticsStore;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Hadoop output stream over a {@link FileWriter}.
 *
 * <p>Small writes are gathered in a heap array of {@code fs.blob.write.gather.size} bytes
 * before they reach the writer: Hadoop's text output writes each line and its newline as
 * separate calls (in the Tokenizer workload 2.26 M records per 30 MB part file, so 4.5 M
 * calls of 1 and about 12 bytes), and per call the writer's bookkeeping (stripe and inline checks, a put into a
 * direct buffer) and the statistics (a map lookup in the IOStatistics store, a thread-local
 * lookup for Hadoop's per-thread counters) cost as much as HDFS's whole
 * {@code FSOutputSummer} write. Gathered, they are paid once per array. The stream's
 * {@code stream_write_bytes} still counts every call at once (through the counter's own
 * reference, not a lookup by name); Hadoop's per-thread {@code FileSystem.Statistics}
 * count bytes when they leave the array, at the latest at close (S3A counts them at
 * close). A write at least as long as the array skips it. Size 0 sends every call
 * through as before.
 *
 * <p>Nothing is visible before
 * {@link #close()}, so hflush/hsync cannot publish or persist anything: the stream
 * declares neither capability and, as S3A does, either accepts them as no-ops with a
 * warning (the default, so that tools which call them, such as Spark's event log, keep
 * working) or, with {@code fs.blob.downgrade.syncable.exceptions=false}, throws
 * {@link UnsupportedOperationException}. Either way they send nothing: neither the
 * gathered bytes nor the writer's buffer.
 */
final class BlobOutputStream extends OutputStream
    implements Syncable, StreamCapabilities, IOStatisticsSource, Abortable {
  private static final Logger LOG = LoggerFactory.getLogger(BlobOutputStream.class);
  private static final AtomicBoolean WARNED_SYNC = new AtomicBoolean();

  private final FileWriter writer;
  private final org.apache.hadoop.fs.Path path;
  private final IOStatisticsStore stats = BlobStatistics.forOutputStream();
  private final IOStatisticsStore fsStats;
  private final FileSystem.Statistics hadoopStats;
  private final boolean downgradeSyncable;
  /** Length of the gather array; 0: gathering is off. */
  private final int gatherSize;
  /**
   * Small writes gathered before they go to the writer; allocated on the first, so that
   * empty files (a job's {@code _SUCCESS}) and streams of long writes never pay for it.
   */
  private byte[] gather;
  /** write(int)'s one byte when it is not gathered. */
  private final byte[] one = new byte[1];
  private int gathered;
  /** The stream's {@code stream_write_bytes} counter, held to skip a lookup per call. */
  private final java.util.concurrent.atomic.AtomicLong bytesWritten;
  /** Bytes handed to the writer not yet added to Hadoop's per-thread statistics. */
  private long uncounted;
  private boolean closed;
  /**
   * The first failed hand-over to the writer. The bytes of a failed drain are gone from
   * the array, so the stream must never go on as if they had been sent: every later write
   * and close rethrows it, whether or not the writer itself keeps its failures.
   */
  private IOException failure;

  BlobOutputStream(FileWriter writer, org.apache.hadoop.fs.Path path, IOStatisticsStore fsStats,
      FileSystem.Statistics hadoopStats, boolean downgradeSyncable, int gatherSize) {
    this.writer = writer;
    this.gatherSize = gatherSize;
    this.bytesWritten = stats.getCounterReference(STREAM_WRITE_BYTES);
    this.downgradeSyncable = downgradeSyncable;
    this.path = path;
    this.fsStats = fsStats;
    this.hadoopStats = hadoopStats;
  }

  @Override
  public synchronized void write(int b) throws IOException {
    if (gathered < gatherSize && !closed && failure == null) {
      gatherArray()[gathered++] = (byte) b;
      bytesWritten.incrementAndGet();
    } else {
      one[0] = (byte) b;
      write(one, 0, 1);
    }
  }

  @Override
  public synchronized void write(byte[] b, int off, int len) throws IOException {
    java.util.Objects.checkFromIndexSize(off, len, b.length);
    if (closed) {
      send(b, off, len); // the closed writer throws, as it did before gathering
      return;
    }
    throwIfFailed();
    if (len < gatherSize) {
      if (len > gatherSize - gathered) {
        drain();
      }
      System.arraycopy(b, off, gatherArray(), gathered, len);
      gathered += len;
      bytesWritten.addAndGet(len);
      return;
    }
    drain(); // what was gathered goes first
    send(b, off, len);
    bytesWritten.addAndGet(len);
    count();
  }

  private byte[] gatherArray() {
    if (gather == null) {
      gather = new byte[gatherSize];
    }
    return gather;
  }

  /** Sends the gathered bytes to the writer, and counts what it has been given. */
  private void drain() throws IOException {
    if (gathered > 0) {
      int n = gathered;
      gathered = 0;
      send(gather, 0, n);
    }
    count();
  }

  private void send(byte[] b, int off, int len) throws IOException {
    try {
      writer.write(b, off, len);
    } catch (IOException e) {
      IOException translated = ErrorTranslation.translate(e, path);
      failed(translated);
      throw translated;
    } catch (RuntimeException e) {
      failed(new IOException("write of " + path + " failed", e));
      throw e;
    }
    uncounted += len;
  }

  /** Counts a failure and keeps the first. */
  private void failed(IOException e) {
    stats.incrementCounter(STREAM_WRITE_EXCEPTIONS);
    if (failure == null) {
      failure = e;
    }
  }

  private void throwIfFailed() throws IOException {
    if (failure != null) {
      throw new IOException("an earlier write to " + path
          + " failed; the file will not be created", failure);
    }
  }

  /**
   * Adds the bytes given to the writer since the last count to Hadoop's statistics; called
   * on the writing thread, whose counters Hadoop keeps apart (Spark reads a task's).
   */
  private void count() {
    if (uncounted > 0) {
      if (hadoopStats != null) {
        hadoopStats.incrementBytesWritten(uncounted);
      }
      uncounted = 0;
    }
  }

  /** Data becomes visible at close only; a flush has nothing to publish. */
  @Override
  public void flush() {
  }

  @Override
  public void hflush() {
    syncable("hflush");
  }

  @Override
  public void hsync() {
    syncable("hsync");
  }

  private void syncable(String call) {
    if (!downgradeSyncable) {
      throw new UnsupportedOperationException(call + " is not supported on " + path
          + ": blob:// files become visible and durable only when closed");
    }
    if (WARNED_SYNC.compareAndSet(false, true)) {
      LOG.warn("hflush/hsync on a blob:// stream does nothing: files become visible only "
          + "when closed");
    }
  }

  @Override
  public synchronized void close() throws IOException {
    if (closed) {
      return;
    }
    closed = true;
    try {
      try {
        throwIfFailed(); // counted when it happened
        drain(); // send() counts and keeps its failure
      } catch (IOException | RuntimeException e) {
        // The writer holds the stripes written so far and its lock; closing it would
        // remove them only if it had kept the failure itself.
        gathered = 0;
        writer.abort();
        throw e;
      }
      closeWriter();
    } finally {
      fsStats.aggregate(stats);
    }
  }

  /** Publishes the file; a failure here is the stream's first and is counted here. */
  private void closeWriter() throws IOException {
    try {
      writer.close();
      stats.incrementCounter(STREAM_WRITE_BLOCK_UPLOADS);
    } catch (IOException e) {
      stats.incrementCounter(STREAM_WRITE_EXCEPTIONS);
      throw ErrorTranslation.translate(e, path);
    } catch (RuntimeException e) {
      stats.incrementCounter(STREAM_WRITE_EXCEPTIONS);
      throw e;
    }
  }

  @Override
  public synchronized AbortableResult abort() {
    boolean wasClosed = closed;
    closed = true;
    gathered = 0; // discarded with the rest of the file
    writer.abort();
    return new AbortableResult() {
      @Override
      public boolean alreadyClosed() {
        return wasClosed;
      }

      @Override
      public IOException anyCleanupException() {
        return null;
      }
    };
  }

  @Override
  public boolean hasCapability(String capability) {
    return switch (capability.toLowerCase(java.util.Locale.ROOT)) {
      case StreamCapabilities.IOSTATISTICS, CommonPathCapabilities.ABORTABLE_STREAM -> true;
      default -> false;
    };
  }

  @Override
  public IOStatistics getIOStatistics() {
    return stats;
  }

  @Override
  public String toString() {
    return "BlobOutputStream{" + path + ", written=" + (writer.position() + gathered) + "}";
  }
}
