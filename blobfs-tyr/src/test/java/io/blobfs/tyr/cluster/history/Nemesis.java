package io.blobfs.tyr.cluster.history;

import io.blobfs.tyr.cluster.TyrProcessCluster;
import io.blobfs.tyr.ring.Ring;
import io.blobfs.tyr.server.Membership;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Queue;
import java.util.Random;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentLinkedQueue;

/**
 * Faults on a seeded schedule, one at a time, on a {@link TyrProcessCluster}: SIGKILL and
 * a restart on the same data, SIGSTOP then SIGCONT, or the node's link taken down then up
 * (namespace hosts only). Each fault is held for a random time (some shorter than the
 * monitor's down-after, so the node comes back without being marked DOWN), then healed;
 * the next one waits until the ring has every member UP again (bounded), so each fault
 * hits a healthy cluster.
 */
final class Nemesis {
  enum Fault { KILL, FREEZE, CUT }

  /** One fault as it happened, for the history file. */
  record Event(Fault fault, int node, long start, long healed) {
    String toJson() {
      return "{\"client\":\"nemesis\",\"f\":\"" + fault.name().toLowerCase()
          + "\",\"type\":\"info\",\"node\":" + node + ",\"time\":" + start + ",\"healed\":"
          + healed + "}";
    }
  }

  private final TyrProcessCluster cluster;
  private final Random random;
  private final List<Fault> kinds;
  private final Queue<Event> events = new ConcurrentLinkedQueue<>();
  private final int maxHoldMillis;

  /**
   * With the faults of {@code allowed} (all if empty) that the hosts support, each held
   * between 0.5 s and {@code maxHoldMillis}.
   */
  Nemesis(TyrProcessCluster cluster, long seed, java.util.Set<Fault> allowed,
      int maxHoldMillis) {
    this.cluster = cluster;
    this.maxHoldMillis = maxHoldMillis;
    this.random = new Random(seed);
    List<Fault> k = new ArrayList<>();
    for (Fault f : Fault.values()) {
      // links exist only between namespaces
      if ((allowed.isEmpty() || allowed.contains(f)) && (f != Fault.CUT || cluster.onOwnHosts())) {
        k.add(f);
      }
    }
    if (k.isEmpty()) {
      throw new IllegalArgumentException("no fault of " + allowed + " can run on these hosts");
    }
    this.kinds = List.copyOf(k);
  }

  /** Runs faults until {@code until} (System.nanoTime), at most {@code maxFaults}. */
  void run(long until, int maxFaults) throws Exception {
    for (int n = 0; n < maxFaults && System.nanoTime() < until; n++) {
      if (!awaitAllUp(Duration.ofSeconds(60))) {
        System.out.println("NEMESIS stops: the cluster did not heal from the last fault");
        return;
      }
      Thread.sleep(500 + random.nextInt(2500)); // the cluster healthy for a while
      if (System.nanoTime() >= until) {
        break;
      }
      Fault f = kinds.get(random.nextInt(kinds.size()));
      int node = random.nextInt(cluster.members().size());
      long hold = 500 + random.nextInt(Math.max(1, maxHoldMillis - 500));
      long start = System.nanoTime();
      System.out.println("NEMESIS " + f + " node " + node + " (" + cluster.members().get(node)
          + ") for " + hold + " ms");
      apply(f, node);
      try {
        Thread.sleep(hold);
      } finally {
        heal(f, node);
      }
      events.add(new Event(f, node, start, System.nanoTime()));
    }
  }

  private void apply(Fault f, int node) throws Exception {
    switch (f) {
      case KILL -> cluster.node(node).kill();
      case FREEZE -> cluster.freeze(node);
      case CUT -> cluster.setLink(node, false);
    }
  }

  private void heal(Fault f, int node) throws Exception {
    switch (f) {
      case KILL -> cluster.node(node).start();
      case FREEZE -> cluster.thaw(node);
      case CUT -> cluster.setLink(node, true);
    }
  }

  /** Waits until the ring file has every member UP; false if it did not within {@code max}. */
  boolean awaitAllUp(Duration max) throws Exception {
    long deadline = System.nanoTime() + max.toNanos();
    while (true) {
      Ring r = Membership.readRingFile(cluster.ringFile());
      if (r.states().isEmpty()) {
        return true;
      }
      if (System.nanoTime() > deadline) {
        System.out.println("NEMESIS the ring is not all UP after " + max + ": " + r);
        return false;
      }
      Thread.sleep(200);
    }
  }

  List<Event> events() {
    return new ArrayList<>(events);
  }

  /** Fault counts by kind. */
  Map<String, Integer> counts() {
    Map<String, Integer> c = new TreeMap<>();
    for (Fault f : Fault.values()) {
      c.put(f.name().toLowerCase(), 0);
    }
    for (Event e : events) {
      c.merge(e.fault().name().toLowerCase(), 1, Integer::sum);
    }
    return c;
  }
}
