package io.blobfs.tyr.server;

import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The bytes of requests and answers the server holds (received, not yet written back),
 * across all connections. Over the budget, connections stop being read until answers free
 * memory, so many busy clients slow down instead of exhausting the server's memory. A
 * connection may still complete the one frame it was reading, so the bound is the budget
 * plus one frame per connection. Each connection's own share is bounded in
 * {@link ServerHandler}.
 */
final class RequestMemory {
  private final long budget;
  private final AtomicLong held = new AtomicLong();
  private final AtomicLong peak = new AtomicLong();
  private final Set<ServerHandler> paused = ConcurrentHashMap.newKeySet();

  RequestMemory(long budget) {
    this.budget = budget;
  }

  /** Counts a request in; false if the server is now over budget. */
  boolean acquire(long bytes) {
    long now = held.addAndGet(bytes);
    peak.accumulateAndGet(now, Math::max);
    return now <= budget;
  }

  /** Counts a request out, and wakes the connections that waited for memory. */
  void release(long bytes) {
    if (held.addAndGet(-bytes) <= budget && !paused.isEmpty()) {
      for (ServerHandler h : paused) {
        paused.remove(h);
        h.memoryFreed();
      }
    }
  }

  boolean overBudget() {
    return held.get() > budget;
  }

  void waitFor(ServerHandler h) {
    paused.add(h);
    if (!overBudget() && paused.remove(h)) {
      h.memoryFreed(); // freed between the check and the registration
    }
  }

  long held() {
    return held.get();
  }

  long peak() {
    return peak.get();
  }
}
