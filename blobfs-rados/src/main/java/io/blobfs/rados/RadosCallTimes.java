package io.blobfs.rados;

import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.LongAdder;

/**
 * Counts and times of this JVM's RADOS calls, by kind, over every store: the store's own
 * calls ({@code store.stat}, {@code store.put}, ...) and the name index's steps inside
 * them ({@code index.read}: a merged read of every shard; {@code index.set},
 * {@code index.cond}: one write op on a shard; {@code index.exist}: stats of pending
 * entries' objects, counted per object). A benchmark takes a {@link #snapshot} before and
 * after a job and subtracts, to see which call got slower when a job does (issue 14's
 * Spark SQL writes). Two adders per kind: cheap beside a round trip to an OSD.
 */
public final class RadosCallTimes {
  private static final Map<String, LongAdder[]> CALLS = new ConcurrentHashMap<>();

  private RadosCallTimes() {}

  /** Records {@code count} calls of {@code kind} that took the time since {@code t0}. */
  static void record(String kind, long t0, long count) {
    long nanos = System.nanoTime() - t0;
    LongAdder[] a = CALLS.computeIfAbsent(kind, k -> new LongAdder[] {new LongAdder(),
        new LongAdder()});
    a[0].add(count);
    a[1].add(nanos);
  }

  static void record(String kind, long t0) {
    record(kind, t0, 1);
  }

  /** Per kind: {calls, nanoseconds} so far. */
  public static Map<String, long[]> snapshot() {
    Map<String, long[]> out = new TreeMap<>();
    CALLS.forEach((k, a) -> out.put(k, new long[] {a[0].sum(), a[1].sum()}));
    return out;
  }

  /** {@code after} minus {@code before}, per kind, as "kind n=.. ms=.. (x ms/call)". */
  public static String delta(Map<String, long[]> before, Map<String, long[]> after) {
    StringBuilder sb = new StringBuilder();
    after.forEach((k, a) -> {
      long[] b = before.getOrDefault(k, new long[2]);
      long n = a[0] - b[0];
      double ms = (a[1] - b[1]) / 1e6;
      if (n > 0) {
        sb.append(String.format(java.util.Locale.ROOT, "%s n=%d %.0f ms (%.2f ms/call); ", k,
            n, ms, ms / n));
      }
    });
    return sb.toString();
  }
}
