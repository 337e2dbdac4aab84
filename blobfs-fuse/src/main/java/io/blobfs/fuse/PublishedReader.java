package io.blobfs.fuse;

import io.blobfs.namespace.FileReader;
import io.blobfs.namespace.ReadAhead;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.util.concurrent.ExecutionException;

/**
 * Reads of one read-only handle on a published file. Random reads are one store call
 * each; once two reads follow each other, the chunks after them are fetched ahead
 * ({@link ReadAhead}), so a sequential reader finds its bytes fetched, several store
 * calls in flight, instead of waiting on one store round trip per kernel request (the
 * kernel sends at most {@code max_readahead}, 128 KiB unless raised, per request).
 *
 * <p>The kernel sends a handle's reads from several threads at once and not always in
 * order: a read below what is held is served by a store call of its own rather than
 * throwing the read-ahead away, and a read beyond it moves the read-ahead there only
 * when it continues the last read; any other read (random) is a store call of its own.
 * Each byte is copied once, from the store's buffer into the FUSE reply.
 */
final class PublishedReader {
  /** Store call size of the read-ahead; the kernel's largest request. */
  static final int CHUNK = 1 << 20;
  /** Bytes asked ahead at most, per handle. */
  static final long WINDOW = 16L << 20;
  /**
   * Chunks kept below the latest read: the kernel's concurrent requests of one
   * sequential reader reach the threads in any order, and a chunk dropped because a
   * later request came first would cost a store call of its own.
   */
  static final long BEHIND = 4L << 20;

  private final FileReader reader;
  /** Created at the second of two reads in a row; null before. */
  private ReadAhead ahead;
  /** Where the last read ended: a read starting here continues it. */
  private long expected = -1;

  PublishedReader(FileReader reader) {
    this.reader = reader;
  }

  FileReader reader() {
    return reader;
  }

  /** Fills {@code dst} from {@code offset} up to its limit or the end of the file. */
  void read(long offset, ByteBuffer dst)
      throws IOException, ExecutionException, InterruptedException {
    int start = dst.position();
    synchronized (this) {
      boolean continues = offset == expected;
      boolean held = ahead != null && offset >= ahead.firstBuffered()
          && offset < ahead.requestedEnd();
      if (continues || held) {
        if (ahead == null) {
          ahead = new ReadAhead(reader, CHUNK, WINDOW + BEHIND, BEHIND);
        }
        while (dst.hasRemaining()) {
          if (ahead.read(offset + dst.position() - start, dst) < 0) {
            break;
          }
        }
        expected = Math.max(expected, offset + dst.position() - start);
        return;
      }
      expected = offset + dst.remaining(); // assumed, so that a follower is seen at once
    }
    while (dst.hasRemaining()) { // outside the monitor: random reads run in parallel
      int n = reader.read(offset + dst.position() - start, dst).get();
      if (n <= 0) {
        break;
      }
    }
  }

  /** At release: chunks still in flight are dropped (loans given back as they arrive). */
  synchronized void close() {
    if (ahead != null) {
      ahead.clear();
      ahead = null;
    }
    reader.close();
  }
}
