package io.blobfs.tyr.engine;

import java.io.Closeable;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.ClosedChannelException;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;

/**
 * A log segment's file for positional I/O that an interrupt does not take away.
 *
 * <p>A {@link FileChannel} closes itself for every user when a thread blocked in it, or
 * entering it, is interrupted. The engine's callers get interrupted as a matter of course: a
 * Spark task that is killed, an executor stopped with {@code shutdownNow} while its task
 * applies a catch-up copy. One such interrupt used to close the log for the whole node,
 * and its close then failed on the closed channel. Here the channel is reopened and the
 * operation made again, with the caller's interrupt status kept for the caller: every
 * operation is positional (or a force, truncate or size), so making it again is
 * idempotent. Only {@link #close} ends the file for good.
 */
final class InterruptProofChannel implements Closeable {
  /** Reopenings one call may make: each needs another interrupt or close by someone else. */
  private static final int MAX_REOPENS = 16;

  private final Path file;
  private volatile FileChannel ch;
  private volatile boolean closed;

  private InterruptProofChannel(Path file, FileChannel ch) {
    this.file = file;
    this.ch = ch;
  }

  /** Opens (creating it if needed) {@code file} for reading and writing, owner-only. */
  static InterruptProofChannel open(Path file) throws IOException {
    return new InterruptProofChannel(file, OwnerOnly.open(file, StandardOpenOption.CREATE,
        StandardOpenOption.READ, StandardOpenOption.WRITE));
  }

  private interface Op<T> {
    T run(FileChannel ch) throws IOException;
  }

  private <T> T retrying(Op<T> op, Runnable reset) throws IOException {
    boolean interrupted = false;
    try {
      for (int reopens = 0; ; reopens++) {
        FileChannel used = ch;
        try {
          return op.run(used);
        } catch (ClosedChannelException e) {
          if (closed || reopens >= MAX_REOPENS) {
            throw e;
          }
          // Cleared so that the channel reopened below is not closed again at once.
          interrupted |= Thread.interrupted();
          reopen(used);
          reset.run();
        }
      }
    } finally {
      if (interrupted) {
        Thread.currentThread().interrupt();
      }
    }
  }

  private synchronized void reopen(FileChannel failed) throws IOException {
    if (closed) {
      throw new ClosedChannelException();
    }
    if (ch == failed) {
      ch = OwnerOnly.open(file, StandardOpenOption.READ, StandardOpenOption.WRITE);
    }
  }

  /** Writes all of {@code src} at {@code position}. */
  void writeFully(ByteBuffer src, long position) throws IOException {
    int start = src.position();
    retrying(c -> {
      long at = position;
      while (src.hasRemaining()) {
        at += c.write(src, at);
      }
      return null;
    }, () -> src.position(start));
  }

  /** Fills {@code dst} from {@code position}; EOFException if the file ends first. */
  void readFully(ByteBuffer dst, long position) throws IOException {
    int start = dst.position();
    retrying(c -> {
      long at = position;
      while (dst.hasRemaining()) {
        int n = c.read(dst, at);
        if (n < 0) {
          throw new java.io.EOFException("log ended at " + at + " in " + file);
        }
        at += n;
      }
      return null;
    }, () -> dst.position(start));
  }

  void force(boolean metaData) throws IOException {
    retrying(c -> {
      c.force(metaData);
      return null;
    }, () -> { });
  }

  void truncate(long size) throws IOException {
    retrying(c -> c.truncate(size), () -> { });
  }

  long size() throws IOException {
    return retrying(FileChannel::size, () -> { });
  }

  boolean isOpen() {
    return !closed;
  }

  @Override
  public synchronized void close() throws IOException {
    closed = true;
    ch.close();
  }
}
