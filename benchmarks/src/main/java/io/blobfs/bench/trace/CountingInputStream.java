package io.blobfs.bench.trace;

import java.io.IOException;
import java.util.concurrent.atomic.LongAdder;
import org.apache.hadoop.fs.FSDataInputStream;
import org.apache.hadoop.fs.FSInputStream;

/**
 * Counts every read call on a wrapped stream (one call whatever its length) and the time
 * spent in them.
 */
final class CountingInputStream extends FSInputStream {
  private final FSDataInputStream in;
  private final LongAdder reads;
  private final LongAdder nanos;

  CountingInputStream(FSDataInputStream in, LongAdder reads, LongAdder nanos) {
    this.in = in;
    this.reads = reads;
    this.nanos = nanos;
  }

  @Override
  public int read() throws IOException {
    reads.increment();
    long t0 = System.nanoTime();
    try {
      return in.read();
    } finally {
      nanos.add(System.nanoTime() - t0);
    }
  }

  @Override
  public int read(byte[] b, int off, int len) throws IOException {
    reads.increment();
    long t0 = System.nanoTime();
    try {
      return in.read(b, off, len);
    } finally {
      nanos.add(System.nanoTime() - t0);
    }
  }

  @Override
  public int read(long position, byte[] buffer, int offset, int length) throws IOException {
    reads.increment();
    long t0 = System.nanoTime();
    try {
      return in.read(position, buffer, offset, length);
    } finally {
      nanos.add(System.nanoTime() - t0);
    }
  }

  @Override
  public void readFully(long position, byte[] buffer, int offset, int length)
      throws IOException {
    reads.increment();
    long t0 = System.nanoTime();
    try {
      in.readFully(position, buffer, offset, length);
    } finally {
      nanos.add(System.nanoTime() - t0);
    }
  }

  @Override
  public void seek(long pos) throws IOException {
    in.seek(pos);
  }

  @Override
  public long getPos() throws IOException {
    return in.getPos();
  }

  @Override
  public boolean seekToNewSource(long targetPos) throws IOException {
    return in.seekToNewSource(targetPos);
  }

  @Override
  public int available() throws IOException {
    return in.available();
  }

  @Override
  public long skip(long n) throws IOException {
    return in.skip(n);
  }

  @Override
  public void close() throws IOException {
    in.close();
  }
}
