package io.blobfs.tyr.server;

import io.blobfs.tyr.ring.Member;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.BiFunction;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * As primary: the keys a backup did not confirm a write of, which this node applied. Left
 * alone, the two replicas would differ until the key is written again (a plain read may
 * be served by either, and a failover to the backup would revert the write). So each is
 * repaired in the background: {@code repair} makes the key's current state a write again
 * on the replicated path, which reaches the backup in stream order after every earlier
 * write of the key, until one is confirmed or the repair says the key no longer needs it
 * (this node lost the key's primary role, or the backup left its write set: that node
 * catches up from the primary of the day before it serves again).
 *
 * <p>A pass runs {@link #FIRST_DELAY_MS} after a key is first owed (the client that got
 * the unconfirmed answer usually makes its call again sooner, which repairs it as well),
 * and again after a back-off doubling to {@link #MAX_DELAY_MS} while some key stays owed.
 */
final class OwedKeys implements AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(OwedKeys.class);
  static final long FIRST_DELAY_MS = 1000;
  static final long MAX_DELAY_MS = 8000;

  /** Whether a repair confirmed the key, or found it no longer owed (true), or failed. */
  private final BiFunction<Member, String, CompletableFuture<Boolean>> repair;
  /** Owed keys per backup, each with the stamp of the failure that owed it last. */
  private final Map<Member, Map<String, Long>> owed = new HashMap<>();
  private final AtomicLong stamps = new AtomicLong();
  private final ScheduledExecutorService timer = Executors.newSingleThreadScheduledExecutor(
      r -> {
        Thread t = new Thread(r, "tyr-owed-keys");
        t.setDaemon(true);
        return t;
      });
  /** Guarded by {@code this}. */
  private boolean scheduled;
  private long delayMs = FIRST_DELAY_MS;

  OwedKeys(BiFunction<Member, String, CompletableFuture<Boolean>> repair) {
    this.repair = repair;
  }

  /** {@code backup} did not confirm a write of {@code keys} that this node applied. */
  synchronized void owe(Member backup, List<String> keys) {
    Map<String, Long> m = owed.computeIfAbsent(backup, b -> new HashMap<>());
    for (String k : keys) {
      m.put(k, stamps.incrementAndGet());
    }
    schedule();
  }

  /** The keys owed to {@code backup} now (for tests and logs). */
  synchronized List<String> owedTo(Member backup) {
    return new ArrayList<>(owed.getOrDefault(backup, Map.of()).keySet());
  }

  private void schedule() {
    if (!scheduled && !owed.isEmpty() && !timer.isShutdown()) {
      scheduled = true;
      timer.schedule(this::pass, delayMs, TimeUnit.MILLISECONDS);
    }
  }

  /** One repair of every owed key at once; the next pass once all have answered. */
  private void pass() {
    record Try(Member backup, String key, long stamp) {}
    List<Try> tries = new ArrayList<>();
    synchronized (this) {
      owed.forEach((b, keys) -> keys.forEach((k, s) -> tries.add(new Try(b, k, s))));
    }
    List<CompletableFuture<Void>> done = new ArrayList<>();
    for (Try t : tries) {
      CompletableFuture<Boolean> f;
      try {
        f = repair.apply(t.backup(), t.key());
      } catch (RuntimeException e) {
        f = CompletableFuture.failedFuture(e);
      }
      done.add(f.handle((ok, e) -> {
        if (e == null && ok) {
          synchronized (this) {
            Map<String, Long> keys = owed.get(t.backup());
            // Not if a later failure owed it again meanwhile: that one needs its repair.
            if (keys != null && keys.remove(t.key(), t.stamp()) && keys.isEmpty()) {
              owed.remove(t.backup());
            }
          }
        } else {
          LOG.debug("repair of '{}' on backup {} not confirmed yet: {}", t.key(), t.backup(),
              e != null ? e.toString() : "refused");
        }
        return null;
      }));
    }
    CompletableFuture.allOf(done.toArray(new CompletableFuture<?>[0])).whenComplete((x, e) -> {
      synchronized (this) {
        scheduled = false;
        delayMs = owed.isEmpty() ? FIRST_DELAY_MS : Math.min(MAX_DELAY_MS, delayMs * 2);
        if (!owed.isEmpty()) {
          LOG.info("keys still owed to backups after a repair pass: {}", owedCounts());
        }
        schedule();
      }
    });
  }

  private Map<Member, Integer> owedCounts() {
    Map<Member, Integer> n = new HashMap<>();
    owed.forEach((b, keys) -> n.put(b, keys.size()));
    return n;
  }

  @Override
  public void close() {
    timer.shutdownNow();
  }
}
