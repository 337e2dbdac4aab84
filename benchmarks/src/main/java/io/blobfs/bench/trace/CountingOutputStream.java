package io.blobfs.bench.trace;

import java.io.IOException;
import java.io.OutputStream;
import java.util.concurrent.atomic.LongAdder;
import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.fs.StreamCapabilities;
import org.apache.hadoop.fs.Syncable;

/**
 * Counts every write call on a wrapped stream and the time spent in writes and in close
 * (where a buffering store sends and publishes what it holds); flushes, syncs and capabilities go to it
 * unchanged, so a committer or a writer probing {@code hflush} sees the real stream.
 */
final class CountingOutputStream extends OutputStream implements Syncable, StreamCapabilities {
  private final FSDataOutputStream out;
  private final LongAdder writes;
  private final LongAdder nanos;

  CountingOutputStream(FSDataOutputStream out, LongAdder writes, LongAdder nanos) {
    this.out = out;
    this.writes = writes;
    this.nanos = nanos;
  }

  @Override
  public void write(int b) throws IOException {
    writes.increment();
    long t0 = System.nanoTime();
    try {
      out.write(b);
    } finally {
      nanos.add(System.nanoTime() - t0);
    }
  }

  @Override
  public void write(byte[] b, int off, int len) throws IOException {
    writes.increment();
    long t0 = System.nanoTime();
    try {
      out.write(b, off, len);
    } finally {
      nanos.add(System.nanoTime() - t0);
    }
  }

  @Override
  public void flush() throws IOException {
    out.flush();
  }

  @Override
  public void hflush() throws IOException {
    out.hflush();
  }

  @Override
  public void hsync() throws IOException {
    out.hsync();
  }

  @Override
  public boolean hasCapability(String capability) {
    return out.hasCapability(capability);
  }

  @Override
  public void close() throws IOException {
    long t0 = System.nanoTime();
    try {
      out.close();
    } finally {
      nanos.add(System.nanoTime() - t0);
    }
  }
}
