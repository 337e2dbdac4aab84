package io.blobfs.fuse.kernel;

import java.util.TreeMap;
import java.util.concurrent.atomic.LongAdder;

/**
 * Counts the kernel's requests by opcode: how many, their payload bytes (writes and reads)
 * and the time spent serving them in this process. The write path's profile starts here:
 * how many requests a workload costs and how large they are says whether the time goes
 * into per-request overhead (many small writes) or into the store (few large ones).
 * Logged at unmount at INFO; {@link #summary()} for tests.
 */
final class RequestStats {
  private static final int OPCODES = 64;
  private final LongAdder[] count = adders();
  private final LongAdder[] bytes = adders();
  private final LongAdder[] nanos = adders();

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
            + "), " + nanos[i].sum() / 1_000_000 + " ms served");
      }
    }
    StringBuilder b = new StringBuilder();
    seen.forEach((op, s) -> b.append("\n  ").append(Opcode.name(op)).append(": ").append(s));
    return b.toString();
  }
}
