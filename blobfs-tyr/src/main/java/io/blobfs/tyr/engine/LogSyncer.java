package io.blobfs.tyr.engine;

import io.blobfs.tyr.api.CommitResult;
import io.blobfs.tyr.api.ErrorCode;
import io.blobfs.tyr.api.TyrException;
import java.io.IOException;
import java.util.ArrayDeque;
import java.util.Map;
import java.util.concurrent.CompletableFuture;

/**
 * The thread that forces the log to disk, and (with {@link SyncPolicy#ALWAYS}) the commits
 * waiting for it: group commit, one force for every commit logged since the last.
 *
 * <p>With sync=always only this thread publishes, and in commit order, so that no reader
 * sees a commit before it is durable or a later commit before an earlier one. With
 * sync=interval it only forces the log: a commit is published as it is logged.
 *
 * <p><b>Locks.</b> The monitor of {@link #pending} guards the queue and is the syncer's
 * wake-up. It is the innermost of the engine's locks: taken under the commit lock by
 * {@link #await}, and never held while taking another engine lock (the force, and the
 * publishing under the publish lock, happen outside it). The order of all the engine's
 * locks is in {@link TyrEngine}.
 */
final class LogSyncer {
  /** What the syncer needs of the engine. */
  interface Engine {
    /** Records that the log failed, so that the node refuses writes. */
    void fail(Throwable cause);

    /** True once the engine closes: no commit is queued after that. */
    boolean closed();
  }

  private record Pending(long version, Map<String, BlobState> changes,
      CompletableFuture<CommitResult> future, CommitResult result) {}

  private final EngineConfig config;
  private final WriteAheadLog log;
  private final BlobVersions versions;
  private final Engine engine;
  private final ArrayDeque<Pending> pending = new ArrayDeque<>();
  private final Thread thread;

  /** Starts the syncer, unless the policy is {@link SyncPolicy#NONE} (nothing to force). */
  LogSyncer(EngineConfig config, WriteAheadLog log, BlobVersions versions, Engine engine) {
    this.config = config;
    this.log = log;
    this.versions = versions;
    this.engine = engine;
    if (config.syncPolicy() == SyncPolicy.NONE) {
      thread = null;
    } else {
      thread = Daemons.create("log-sync", config, this::run);
      thread.start();
    }
  }

  /**
   * Queues a logged, staged commit (sync=always) to be published and completed once the log
   * is forced past it. Called under the commit lock, in commit order.
   */
  void await(long version, Map<String, BlobState> changes, CompletableFuture<CommitResult> done,
      CommitResult result) {
    synchronized (pending) {
      pending.add(new Pending(version, changes, done, result));
      pending.notifyAll();
    }
  }

  private void run() {
    while (true) {
      try {
        if (config.syncPolicy() == SyncPolicy.INTERVAL) {
          synchronized (pending) {
            if (engine.closed()) {
              return;
            }
            pending.wait(config.syncInterval().toMillis());
          }
          log.force();
          continue;
        }
        synchronized (pending) {
          while (pending.isEmpty()) {
            if (engine.closed()) {
              return;
            }
            pending.wait(100);
          }
        }
        long durable = log.force();
        while (true) {
          Pending p;
          synchronized (pending) {
            p = pending.peek();
            if (p == null || p.version() > durable) {
              break;
            }
            pending.poll();
          }
          versions.publish(p.changes());
          p.future().complete(p.result());
        }
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        return;
      } catch (IOException | RuntimeException e) {
        engine.fail(e);
        failPending(e);
        if (engine.closed()) {
          return;
        }
      }
    }
  }

  /**
   * Waits for the syncer to end; the engine has closed first, so it drains what is queued
   * and ends. Never interrupted: an interrupt during force() would close the log's channel.
   */
  void stop() {
    Daemons.stop(thread, pending);
  }

  /** Fails every queued commit: it is logged, but whether it reached the disk is unknown. */
  void failPending(Throwable cause) {
    synchronized (pending) {
      for (Pending p : pending) {
        p.future().completeExceptionally(new TyrException(ErrorCode.SERVER_ERROR,
            "the log could not be forced to disk; the commit's fate is unknown until the "
                + "node restarts: " + cause, cause));
      }
      pending.clear();
    }
  }
}
