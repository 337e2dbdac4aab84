package io.blobfs.namespace;

import io.blobfs.store.BlobNotFoundException;
import io.blobfs.store.InProcess;
import java.io.EOFException;
import java.io.FileNotFoundException;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;

/**
 * Positioned reads of one file, straight from the blobs that hold the bytes: a read is
 * split at stripe boundaries and the parts are sent together. Stateless and thread-safe;
 * the Hadoop stream adds buffering and the seek position.
 */
public final class FileReader {
  private final BlobNamespace ns;
  private final FileInfo info;
  private final FileRecord record;
  private final long maxOp;

  FileReader(BlobNamespace ns, FileInfo info) {
    this.ns = ns;
    this.info = info;
    this.record = info.record();
    this.maxOp = ns.calls().store().limits().maxOpBytes();
  }

  public FileInfo info() {
    return info;
  }

  public long length() {
    return info.length();
  }

  /**
   * True if the store serves calls in this process at memory speed ({@link InProcess}):
   * a stream then reads straight into the caller's array, with no buffer or read-ahead.
   */
  public boolean inProcess() {
    return ns.calls().store() instanceof InProcess;
  }

  /**
   * Reads {@code min(dst.remaining(), length - position)} bytes into {@code dst}, advancing
   * its position. Completes with that count, or -1 if {@code position} is at or past the
   * end of the file.
   */
  public CompletableFuture<Integer> read(long position, ByteBuffer dst) {
    if (position < 0) {
      return CompletableFuture.failedFuture(
          new EOFException("negative read position " + position + " in " + info.path()));
    }
    long length = info.length();
    if (position >= length) {
      return CompletableFuture.completedFuture(dst.hasRemaining() ? -1 : 0);
    }
    int total = (int) Math.min(dst.remaining(), length - position);
    int start = dst.position();
    if (record.isInline()) {
      dst.put(record.inline(), (int) position, total);
      return CompletableFuture.completedFuture(total);
    }
    long stripeSize = record.stripeSize();
    List<CompletableFuture<Void>> parts = new ArrayList<>();
    int done = 0;
    while (done < total) {
      long pos = position + done;
      long stripe = pos / stripeSize;
      long offset = pos % stripeSize;
      int n = (int) Math.min(Math.min(total - done, stripeSize - offset), maxOp);
      ByteBuffer slice = dst.slice(start + done, n);
      String key = ns.layout().dataKey(record.fileId(), stripe);
      parts.add(readPart(key, offset, slice, n));
      done += n;
    }
    return CompletableFuture.allOf(parts.toArray(new CompletableFuture<?>[0]))
        .thenApply(v -> {
          dst.position(start + total);
          return total;
        });
  }

  /** Reads exactly {@code n} bytes: the record says they exist, so less is an error. */
  private CompletableFuture<Void> readPart(String key, long offset, ByteBuffer slice, int n) {
    return ns.calls().read(key, offset, slice).handle((got, error) -> {
      if (error != null) {
        Throwable cause = error instanceof java.util.concurrent.CompletionException
            && error.getCause() != null ? error.getCause() : error;
        if (cause instanceof BlobNotFoundException) {
          throw new java.util.concurrent.CompletionException(new FileNotFoundException(
              info.path() + " was deleted or overwritten while open (" + key + " is gone)"));
        }
        throw new java.util.concurrent.CompletionException(cause);
      }
      return got;
    }).thenCompose(got -> {
      if (got < 0) {
        return CompletableFuture.failedFuture(new EOFException("data blob " + key
            + " of " + info.path() + " ends before the length its record gives"));
      }
      if (got < n) {
        return readPart(key, offset + got, slice, n - got);
      }
      return CompletableFuture.completedFuture(null);
    });
  }
}
