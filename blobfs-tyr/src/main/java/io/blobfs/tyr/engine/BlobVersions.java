package io.blobfs.tyr.engine;

import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentSkipListMap;
import java.util.concurrent.locks.ReadWriteLock;
import java.util.concurrent.locks.ReentrantReadWriteLock;

/**
 * The engine's shared state: each blob's visible state (the latest durable one, what
 * readers are given) and, for a commit logged but not yet durable, its staged state (seen
 * by the validation and planning of later commits, by no reader).
 *
 * <p><b>Locks.</b> {@link #publishLock} makes publishing a commit atomic for scans: a scan
 * page sees all of a commit's names or none (a directory rename is never half-listed). It
 * is held exclusively to change {@link #visible} and to see visible and staged states as
 * one, and shared by a scan page; it guards nothing else and is taken after the engine's
 * commit and segment locks, before the syncer's queue (order in {@link TyrEngine}). Point
 * reads take no lock: each blob's state is one reference. {@link #staged} is written only
 * under the engine's commit lock (a staged entry is dropped by publishing).
 */
final class BlobVersions {
  /** What readers see: the latest durable state of each existing blob. */
  private final ConcurrentSkipListMap<String, BlobState> visible = new ConcurrentSkipListMap<>();
  /** Logged but not yet durable changes; a deleted blob is a {@link BlobState#deleted} mark. */
  private final ConcurrentHashMap<String, BlobState> staged = new ConcurrentHashMap<>();
  private final ReadWriteLock publishLock = new ReentrantReadWriteLock();

  /** One page of a scan, and the key to continue after (null: the last page). */
  record Page(List<BlobState> states, String next) {}

  /** The visible state of a blob; null if it does not exist for readers. */
  BlobState visible(String key) {
    return visible.get(key);
  }

  int visibleCount() {
    return visible.size();
  }

  /** At open only, before any other thread runs: recovery's view of a blob. */
  void recover(String key, BlobState state) {
    if (state == null) {
      visible.remove(key);
    } else {
      visible.put(key, state);
    }
  }

  /** The newest state a commit must see: staged (not yet durable) over visible. */
  BlobState latest(String key) {
    BlobState s = staged.get(key);
    if (s == null) {
      return visible.get(key);
    }
    return s.isDeleted() ? null : s;
  }

  /**
   * Stages a logged commit's changes (null: deleted) until it is durable; returns them as
   * staged, deletions as marks. Under the commit lock.
   */
  Map<String, BlobState> stage(Map<String, BlobState> changes, long version) {
    Map<String, BlobState> marks = new HashMap<>();
    for (Map.Entry<String, BlobState> e : changes.entrySet()) {
      BlobState mark = e.getValue() == null
          ? BlobState.deleted(e.getKey(), version) : e.getValue();
      staged.put(e.getKey(), mark);
      marks.put(e.getKey(), mark);
    }
    return marks;
  }

  /** Makes changes visible; a staged entry is dropped only if no later commit replaced it. */
  void publish(Map<String, BlobState> changes) {
    publishLock.writeLock().lock();
    try {
      for (Map.Entry<String, BlobState> e : changes.entrySet()) {
        BlobState s = e.getValue();
        if (s == null || s.isDeleted()) {
          visible.remove(e.getKey());
        } else {
          visible.put(e.getKey(), s);
        }
        if (s != null) {
          staged.remove(e.getKey(), s);
        }
      }
    } finally {
      publishLock.writeLock().unlock();
    }
  }

  /** Every blob's newest state, logged or visible, taken while no commit is published. */
  Collection<BlobState> latestStates() {
    publishLock.writeLock().lock();
    try {
      Map<String, BlobState> all = new HashMap<>(visible);
      for (BlobState s : staged.values()) {
        if (s.isDeleted()) {
          all.remove(s.key);
        } else {
          all.put(s.key, s);
        }
      }
      return all.values();
    } finally {
      publishLock.writeLock().unlock();
    }
  }

  /**
   * Adds the bytes per segment of every state a reader may still be given (visible) or a
   * commit will publish (staged), taken while no commit is published.
   */
  void addReadableBytes(Map<Long, Long> live) {
    publishLock.writeLock().lock();
    try {
      for (BlobState s : visible.values()) {
        s.addLiveBytes(live);
      }
      for (BlobState s : staged.values()) {
        if (!s.isDeleted()) {
          s.addLiveBytes(live);
        }
      }
    } finally {
      publishLock.writeLock().unlock();
    }
  }

  /**
   * Up to {@code limit} visible states whose keys start with {@code prefix}, in order,
   * after {@code cursor} (null: from the first), all from between two publishings.
   */
  Page page(String prefix, String cursor, int limit) {
    return page(prefix, cursor, limit, k -> true);
  }

  /** As {@link #page(String, String, int)}, of the keys {@code include} accepts only. */
  Page page(String prefix, String cursor, int limit,
      java.util.function.Predicate<String> include) {
    var tail = cursor == null || cursor.compareTo(prefix) < 0
        ? visible.tailMap(prefix, true) : visible.tailMap(cursor, false);
    List<BlobState> states = new ArrayList<>(Math.min(limit, 1024));
    String next = null;
    publishLock.readLock().lock();
    try {
      for (BlobState s : tail.values()) {
        if (!s.key.startsWith(prefix)) {
          break;
        }
        if (states.size() == limit) {
          next = states.get(states.size() - 1).key;
          break;
        }
        if (include.test(s.key)) {
          states.add(s);
        }
      }
    } finally {
      publishLock.readLock().unlock();
    }
    return new Page(states, next);
  }
}
