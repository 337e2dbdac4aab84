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
 * Hadoop output stream over a {@link FileWriter}. Nothing is visible before
 * {@link #close()}, so hflush/hsync cannot publish or persist anything: the stream
 * declares neither capability and, as S3A does, either accepts them as no-ops with a
 * warning (the default, so that tools which call them, such as Spark's event log, keep
 * working) or, with {@code fs.blob.downgrade.syncable.exceptions=false}, throws
 * {@link UnsupportedOperationException}.
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
  private final byte[] one = new byte[1];
  private final boolean downgradeSyncable;
  private boolean closed;

  BlobOutputStream(FileWriter writer, org.apache.hadoop.fs.Path path, IOStatisticsStore fsStats,
      FileSystem.Statistics hadoopStats, boolean downgradeSyncable) {
    this.writer = writer;
    this.downgradeSyncable = downgradeSyncable;
    this.path = path;
    this.fsStats = fsStats;
    this.hadoopStats = hadoopStats;
  }

  @Override
  public synchronized void write(int b) throws IOException {
    one[0] = (byte) b;
    write(one, 0, 1);
  }

  @Override
  public synchronized void write(byte[] b, int off, int len) throws IOException {
    try {
      writer.write(b, off, len);
    } catch (IOException e) {
      stats.incrementCounter(STREAM_WRITE_EXCEPTIONS);
      throw ErrorTranslation.translate(e, path);
    }
    stats.incrementCounter(STREAM_WRITE_BYTES, len);
    if (hadoopStats != null) {
      hadoopStats.incrementBytesWritten(len);
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
      writer.close();
      stats.incrementCounter(STREAM_WRITE_BLOCK_UPLOADS);
    } catch (IOException e) {
      stats.incrementCounter(STREAM_WRITE_EXCEPTIONS);
      throw ErrorTranslation.translate(e, path);
    } catch (RuntimeException e) {
      stats.incrementCounter(STREAM_WRITE_EXCEPTIONS);
      throw e;
    } finally {
      fsStats.aggregate(stats);
    }
  }

  @Override
  public synchronized AbortableResult abort() {
    boolean wasClosed = closed;
    closed = true;
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
    return "BlobOutputStream{" + path + ", written=" + writer.position() + "}";
  }
}
