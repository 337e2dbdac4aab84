package io.blobfs.fuse.kernel;

import java.util.TreeMap;
import java.util.concurrent.atomic.LongAccumulator;
import java.util.concurrent.atomic.LongAdder;

/**
 * Counts the kernel's requests by opcode: how many, their payload bytes (writes and reads)
 * and the time spent serving them in this process. The write path's profile starts here:
 * how many requests a workload costs and how large they are says whether the time goes
 * into per-request overhead (many small writes) or into the store (few large ones).
 * The slowest request and the count of those over {@link #SLOW_NANOS} per opcode say
 * whether a tail a program sees (fio's p99 of random 8 KiB writes) is spent in this
 * process or outside it, in the kernel's round trip and the scheduler.
 * Logged at unmount at INFO; {@link #summary()} for tests.
 */
final class RequestStats {
  private static final int OPCODES = 64;
  private final LongAdder[] count = adders();
  private final LongAdder[] bytes = adders();
  private final LongAdder[] nanos = adders();
  private final LongAdder[] slow = adders();
  private final LongAccumulator[] max = maxima();
  /** A request served slower than this is counted as slow: 5 ms. */
  static final long SLOW_NANOS = 5_000_000;

  private static LongAccumulator[] maxima() {
    LongAccumulator[] a = new LongAccumulator[OPCODES];
    for (int i = 0; i < OPCODES; i++) {
      a[i] = new LongAccumulator(Math::max, 0);
    }
    return a;
  }

  private static LongAdder[] adders() {
    LongAdder[] a = new LongAdder[OPCODES];
    for (int i = 0; i < OPCODES; i++) {
      a[i] = new LongAdder();
    }
    return a;
  }

  void record(int opcode, long payload, long elapsedNanos) {
    int i = opcode >= 0 && opcode < OPCODES ? opcode : 0;
    count[i].increment();
    bytes[i].add(payload);
    nanos[i].add(elapsedNanos);
    max[i].accumulate(elapsedNanos);
    if (elapsedNanos > SLOW_NANOS) {
      slow[i].increment();
    }
  }

  /** Requests of {@code opcode} served slower than {@link #SLOW_NANOS}. */
  long slow(int opcode) {
    return slow[opcode].sum();
  }

  long count(int opcode) {
    return count[opcode].sum();
  }

  long bytes(int opcode) {
    return bytes[opcode].sum();
  }

  /** "opcode=count/bytes/ms" for every opcode seen, in opcode order. */
  String summary() {
    TreeMap<Integer, String> seen = new TreeMap<>();
    for (int i = 0; i < OPCODES; i++) {
      long c = count[i].sum();
      if (c > 0) {
        seen.put(i, c + " requests, " + bytes[i].sum() + " bytes (avg " + bytes[i].sum() / c
            + "), " + nanos[i].sum() / 1_000_000 + " ms served, " + slow[i].sum()
            + " over " + SLOW_NANOS / 1_000_000 + " ms, slowest " + max[i].get() / 1_000 + " us");
      }
    }
    StringBuilder b = new StringBuilder();
    seen.forEach((op, s) -> b.append("\n  ").append(Opcode.name(op)).append(": ").append(s));
    return b.toString();
  }
}
