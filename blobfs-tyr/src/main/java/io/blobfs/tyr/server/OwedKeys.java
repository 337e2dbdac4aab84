package io.blobfs.tyr.server;

import io.blobfs.tyr.ring.Member;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeSet;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.function.LongPredicate;
import java.util.function.LongSupplier;
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
 * <p>Each key has its own schedule: first tried {@link #FIRST_DELAY_MS} after it is owed
 * (the client that got the unconfirmed answer usually makes its call again sooner, which
 * repairs it as well), then after a back-off doubling to {@link #MAX_DELAY_MS} while its
 * repairs fail; a key owed later is not held back by another that keeps failing. A repair
 * reads the blob whole into memory and makes it a replicated write, so they are bounded:
 * at most {@code maxRunning} at once, and a repair holds its blob's bytes only if the
 * running ones hold less than {@code maxHeldBytes} with it (one may always run alone,
 * and the repair puts no blob near a frame, see {@code Replicator.repair}). The keys past
 * those bounds wait, due, for a running repair to end.
 */
final class OwedKeys implements AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(OwedKeys.class);
  static final long FIRST_DELAY_MS = 1000;
  static final long MAX_DELAY_MS = 8000;
  static final int MAX_RUNNING = 16;
  static final long MAX_HELD_BYTES = 64L << 20;

  /** A repair of one key on one backup. */
  interface Repair {
    /**
     * Whether the repair confirmed {@code key} on {@code backup}, or found it no longer
     * owed (true), or failed or did not run (false). It asks {@code hold} before it reads
     * the blob's bytes into memory, and does not run if refused; they count as held until
     * the returned future completes.
     */
    CompletableFuture<Boolean> run(Member backup, String key, LongPredicate hold);
  }

  /** Runs a task after a delay (a test runs them by hand, on a clock of its own). */
  interface Timer {
    void after(long delayMs, Runnable task);
  }

  /** One owed key's state. Guarded by the OwedKeys. */
  private static final class Owed {
    /** The stamp of the failure that owed it last. */
    long stamp;
    long delayMs = FIRST_DELAY_MS;
    /** Its place in {@link #due} while it waits; null while its repair runs. */
    Due due;
    /** When its last repair ended (0: none yet), for {@link #owes}' hurry. */
    long endedAtMs;
  }

  /** A repair hurried by a waiting writer starts no sooner than this after the last. */
  static final long HURRIED_SPACING_MS = 250;

  /** A key's next try, ordered by time, then by when it was queued. */
  private record Due(long atMs, long order, Member backup, String key) {}

  private final Repair repair;
  private final Timer timer;
  private final LongSupplier clockMs;
  private final int maxRunning;
  private final long maxHeldBytes;
  private final AutoCloseable stopTimer;

  /** Owed keys per backup. Guarded by {@code this}, as is every field below. */
  private final Map<Member, Map<String, Owed>> owed = new HashMap<>();
  private final TreeSet<Due> due = new TreeSet<>(
      Comparator.comparingLong(Due::atMs).thenComparingLong(Due::order));
  private long stamps;
  private long orders;
  private int running;
  private long held;
  /** When the timer is set to pump next; Long.MAX_VALUE if not set. */
  private long armedAtMs = Long.MAX_VALUE;
  /** When the last summary of the keys still owed was logged; 0 and false: never. */
  private long lastSummaryMs;
  private boolean summarized;
  private boolean closed;

  OwedKeys(Repair repair) {
    this(repair, executorTimer(), () -> TimeUnit.NANOSECONDS.toMillis(System.nanoTime()),
        MAX_RUNNING, MAX_HELD_BYTES);
  }

  /** With {@code timer} and {@code clockMs} of the caller's, and these bounds (tests). */
  OwedKeys(Repair repair, Timer timer, LongSupplier clockMs, int maxRunning,
      long maxHeldBytes) {
    this.repair = repair;
    this.timer = timer;
    this.clockMs = clockMs;
    this.maxRunning = maxRunning;
    this.maxHeldBytes = maxHeldBytes;
    this.stopTimer = timer instanceof AutoCloseable c ? c : () -> { };
  }

  private static Timer executorTimer() {
    ScheduledExecutorService pool = Executors.newSingleThreadScheduledExecutor(r -> {
      Thread t = new Thread(r, "tyr-owed-keys");
      t.setDaemon(true);
      return t;
    });
    final class ExecutorTimer implements Timer, AutoCloseable {
      @Override
      public void after(long delayMs, Runnable task) {
        try {
          pool.schedule(task, delayMs, TimeUnit.MILLISECONDS);
        } catch (java.util.concurrent.RejectedExecutionException closed) {
          // closed meanwhile: nothing is repaired any more
        }
      }

      @Override
      public void close() {
        pool.shutdownNow();
      }
    }
    return new ExecutorTimer();
  }

  /** {@code backup} did not confirm a write of {@code keys} that this node applied. */
  void owe(Member backup, List<String> keys) {
    synchronized (this) {
      Map<String, Owed> m = owed.computeIfAbsent(backup, b -> new HashMap<>());
      long now = clockMs.getAsLong();
      for (String k : keys) {
        Owed o = m.get(k);
        if (o == null) {
          o = new Owed();
          m.put(k, o);
          queue(backup, k, o, now);
        }
        // Owed already: its schedule stands (a key that keeps failing keeps backing off);
        // a repair running now does not clear it, as it may have read the older state.
        o.stamp = ++stamps;
      }
    }
    pumpLater();
  }

  /**
   * Pumps on the timer's thread, never on the caller's: a caller may hold a replication
   * stream's lock (an install failing a stream's queue), and a repair takes the
   * Replicator's lock before a stream's, so starting one here could deadlock; and a repair
   * that ends at once would otherwise pump again within itself, a stack frame per owed key
   * (a review overflowed the stack with 1,000 keys and left the running count leaked).
   */
  private void pumpLater() {
    timer.after(0, this::pump);
  }

  /** The keys owed to {@code backup} now (for tests and logs). */
  synchronized List<String> owedTo(Member backup) {
    return new ArrayList<>(owed.getOrDefault(backup, Map.of()).keySet());
  }

  /**
   * Whether a backup owes {@code key} (its repair is due or runs). {@code hurry}: a key
   * owed and waiting for its next try is made due now, or {@link #HURRIED_SPACING_MS} after
   * its last repair ended if that is later (a writer waits for it, session 14: it no longer
   * makes its write again, which did the repair's work sooner); so while a writer waits, a
   * repair that keeps failing is tried up to 4 times a second, not after its back-off.
   */
  boolean owes(String key, boolean hurry) {
    boolean owes = false;
    boolean hurried = false;
    synchronized (this) {
      long now = clockMs.getAsLong();
      for (Map.Entry<Member, Map<String, Owed>> e : owed.entrySet()) {
        Owed o = e.getValue().get(key);
        if (o == null) {
          continue;
        }
        owes = true;
        long at = Math.max(now, o.endedAtMs + HURRIED_SPACING_MS);
        if (hurry && !closed && o.due != null && o.due.atMs() > at) {
          due.remove(o.due);
          o.due = new Due(at, ++orders, e.getKey(), key);
          due.add(o.due);
          hurried = true;
        }
      }
    }
    if (hurried) {
      pumpLater();
    }
    return owes;
  }

  /** Repairs running now (tests). */
  synchronized int running() {
    return running;
  }

  private void queue(Member backup, String key, Owed o, long now) {
    o.due = new Due(now + o.delayMs, ++orders, backup, key);
    due.add(o.due);
  }

  /** Starts the due repairs the bounds let run, and sets the timer for the next one. */
  private void pump() {
    record Start(Member backup, String key, long stamp) {}
    List<Start> starts = new ArrayList<>();
    synchronized (this) {
      if (closed) {
        return;
      }
      long now = clockMs.getAsLong();
      while (!due.isEmpty() && due.first().atMs() <= now && running < maxRunning
          && held < maxHeldBytes) {
        Due d = due.pollFirst();
        Owed o = owed.get(d.backup()).get(d.key());
        o.due = null;
        running++;
        starts.add(new Start(d.backup(), d.key(), o.stamp));
      }
      // Past the bounds, a running repair's end pumps again; else the timer, once due.
      if (!due.isEmpty() && due.first().atMs() > now && due.first().atMs() < armedAtMs) {
        long at = due.first().atMs();
        armedAtMs = at;
        timer.after(at - now, () -> {
          synchronized (this) {
            if (armedAtMs == at) {
              armedAtMs = Long.MAX_VALUE;
            }
          }
          pump();
        });
      }
    }
    for (Start s : starts) {
      start(s.backup(), s.key(), s.stamp());
    }
  }

  private void start(Member backup, String key, long stamp) {
    long[] mine = new long[1]; // the bytes this repair holds; guarded by the OwedKeys
    LongPredicate hold = bytes -> {
      synchronized (this) {
        if (held > 0 && held + bytes > maxHeldBytes) {
          return false; // one repair may always run alone, whatever its blob's size
        }
        held += bytes;
        mine[0] += bytes;
        return true;
      }
    };
    CompletableFuture<Boolean> f;
    try {
      f = repair.run(backup, key, hold);
    } catch (RuntimeException e) {
      f = CompletableFuture.failedFuture(e);
    }
    f.whenComplete((ok, e) -> {
      boolean repaired = e == null && ok;
      if (!repaired) {
        LOG.debug("repair of '{}' on backup {} not confirmed yet: {}", key, backup,
            e != null ? e.toString() : "refused");
      }
      ended(backup, key, stamp, repaired, mine);
      pumpLater();
    });
  }

  private synchronized void ended(Member backup, String key, long stamp, boolean repaired,
      long[] mine) {
    running--;
    held -= mine[0];
    Map<String, Owed> keys = owed.get(backup);
    Owed o = keys.get(key);
    long now = clockMs.getAsLong();
    o.endedAtMs = now;
    if (repaired && o.stamp == stamp) {
      keys.remove(key);
      if (keys.isEmpty()) {
        owed.remove(backup);
      }
      return;
    }
    if (repaired) {
      o.delayMs = FIRST_DELAY_MS; // owed again by a later failure: that one needs its repair
    } else {
      o.delayMs = Math.min(MAX_DELAY_MS, o.delayMs * 2);
      if (!summarized || now - lastSummaryMs >= MAX_DELAY_MS) {
        summarized = true;
        lastSummaryMs = now;
        LOG.info("keys still owed to backups ({} repairs running): {}", running,
            owedCounts());
      }
    }
    if (!closed) {
      queue(backup, key, o, now);
    }
  }

  private Map<Member, Integer> owedCounts() {
    Map<Member, Integer> n = new HashMap<>();
    owed.forEach((b, keys) -> n.put(b, keys.size()));
    return n;
  }

  @Override
  public void close() {
    synchronized (this) {
      closed = true;
      due.clear();
    }
    try {
      stopTimer.close();
    } catch (Exception e) {
      LOG.debug("stopping the owed keys' timer", e);
    }
  }
}
