package io.blobfs.store;

import java.io.IOException;
import java.io.InterruptedIOException;
import java.io.UncheckedIOException;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Future;

/** Waits on store futures and gives back the IOException a backend failed with. */
public final class Futures {
  private Futures() {}

  public static <T> T await(Future<T> future) throws IOException {
    try {
      return future.get();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      InterruptedIOException ie = new InterruptedIOException("interrupted waiting for store");
      ie.initCause(e);
      throw ie;
    } catch (ExecutionException | CancellationException e) {
      throw unwrap(e);
    }
  }

  /** The IOException inside a future's failure, wrapped in one if it is another type. */
  public static IOException unwrap(Throwable t) {
    Throwable cause = t;
    while ((cause instanceof ExecutionException || cause instanceof CompletionException)
        && cause.getCause() != null) {
      cause = cause.getCause();
    }
    if (cause instanceof UncheckedIOException u) {
      cause = u.getCause();
    }
    if (cause instanceof IOException io) {
      return io;
    }
    if (cause instanceof RuntimeException re) {
      throw re;
    }
    return new IOException(cause);
  }

  /** A future already failed with {@code t}: for backends that check input up front. */
  public static <T> CompletableFuture<T> failed(Throwable t) {
    return CompletableFuture.failedFuture(t);
  }
}
