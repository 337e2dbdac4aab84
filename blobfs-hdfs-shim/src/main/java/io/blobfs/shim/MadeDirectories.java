package io.blobfs.shim;

import java.util.ArrayList;
import java.util.List;
import java.util.NavigableSet;
import java.util.concurrent.ConcurrentSkipListSet;

/**
 * The directories this file system instance was asked to make, by flat name. {@code mkdirs}
 * writes nothing to the underlying file system (Table 3: dropped), so an empty directory
 * exists for nobody else; this instance remembers its own until they are deleted or
 * renamed, so that an output committer that makes a task directory, writes nothing and
 * lists it at commit works (Spark's tasks and driver each use one cached FileSystem). The
 * same rule as {@code blob://} in the paper's mode ({@code PendingDirectories} in
 * blobfs-namespace, which works on that layer's paths and is not shared).
 *
 * <p>Bounded: past {@link #MAX} entries new ones are not remembered, and those
 * directories fall back to the paper's rule (visible only while a name lies under them).
 */
final class MadeDirectories {
  static final int MAX = 100_000;

  private final ConcurrentSkipListSet<String> flats = new ConcurrentSkipListSet<>();

  void add(String flat) {
    if (flats.size() < MAX) {
      flats.add(flat);
    }
  }

  /** True if {@code flat} was made here or lies above a directory made here. */
  boolean covers(String flat) {
    return flats.contains(flat) || !under(FlatNames.childPrefix(flat)).isEmpty();
  }

  /** The remembered directories under the one with that child prefix ("" for the root). */
  NavigableSet<String> under(String prefix) {
    if (prefix.isEmpty()) {
      return flats;
    }
    // The prefix ends with the separator ' '; every name that starts with it sorts below
    // the prefix with '!' (' ' + 1) in its place.
    String end = prefix.substring(0, prefix.length() - 1) + (char) (FlatNames.SEPARATOR + 1);
    return flats.subSet(prefix, true, end, false);
  }

  /** Forgets {@code flat} and everything under it. */
  void removeAtOrUnder(String flat) {
    flats.remove(flat);
    under(FlatNames.childPrefix(flat)).clear();
  }

  /** Moves what was remembered at or under {@code src} to {@code dst}. */
  void rename(String src, String dst) {
    String prefix = FlatNames.childPrefix(src);
    List<String> moved = new ArrayList<>(under(prefix));
    boolean self = flats.remove(src);
    moved.forEach(flats::remove);
    if (self) {
      add(dst);
    }
    for (String d : moved) {
      add(FlatNames.childPrefix(dst) + d.substring(prefix.length()));
    }
  }

  /** Forgets everything (a delete of the root's contents). */
  void clear() {
    flats.clear();
  }
}
