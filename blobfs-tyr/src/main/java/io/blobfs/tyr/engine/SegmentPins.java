package io.blobfs.tyr.engine;

import java.util.HashMap;
import java.util.HashSet;
import java.util.Iterator;
import java.util.Map;
import java.util.Set;

/**
 * Segments that local readers were granted and compaction must not delete yet. A pin
 * ends when its reader releases it, or when its lease runs out, so a reader that crashed
 * or never says so holds the disk for one lease at most. Pins are taken under the
 * engine's segment lock held shared and consulted with it held exclusively, so a segment
 * is either pinned before compaction looks or not given to any reader after it.
 */
final class SegmentPins {
  private record Pin(Set<Long> segments, long deadlineNanos) {}

  private final Map<Long, Pin> pins = new HashMap<>();
  private long nextId;

  synchronized long pin(Set<Long> segments, long leaseNanos) {
    long id = ++nextId;
    pins.put(id, new Pin(Set.copyOf(segments), System.nanoTime() + leaseNanos));
    return id;
  }

  /** Pins made so far, released or not. */
  synchronized long made() {
    return nextId;
  }

  /** True if the pin was held (not released or expired before). */
  synchronized boolean release(long id) {
    return pins.remove(id) != null;
  }

  /** Segments some unexpired pin holds; expired pins are dropped. */
  synchronized Set<Long> pinned() {
    long now = System.nanoTime();
    Set<Long> out = new HashSet<>();
    for (Iterator<Pin> it = pins.values().iterator(); it.hasNext(); ) {
      Pin p = it.next();
      if (now - p.deadlineNanos() > 0) {
        it.remove();
      } else {
        out.addAll(p.segments());
      }
    }
    return out;
  }

  synchronized int count() {
    return pins.size();
  }
}
