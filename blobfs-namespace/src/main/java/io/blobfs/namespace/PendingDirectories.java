package io.blobfs.namespace;

import java.util.ArrayList;
import java.util.List;
import java.util.NavigableSet;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentSkipListSet;

/**
 * Directories this namespace instance was asked to make, in the paper's mode where
 * {@code mkdirs} writes nothing to the store. They are visible to this instance (one
 * Hadoop FileSystem, so one Spark executor or driver) until deleted, and to nobody else.
 * That is what an output committer needs: a task makes its attempt directory, writes
 * nothing (an empty partition) and lists it at commit, all through one FileSystem.
 *
 * <p>Bounded: past {@link #MAX} entries new ones are not remembered and those
 * directories fall back to the paper's rule (invisible while empty).
 */
final class PendingDirectories {
  static final int MAX = 100_000;

  private final ConcurrentSkipListSet<String> dirs = new ConcurrentSkipListSet<>();

  void add(FsPath dir) {
    if (!dir.isRoot() && dirs.size() < MAX) {
      dirs.add(dir.toString());
    }
  }

  /** True if {@code path} was made here or lies above a directory made here. */
  boolean covers(FsPath path) {
    if (path.isRoot() || dirs.isEmpty()) {
      return path.isRoot();
    }
    String p = path.toString();
    if (dirs.contains(p)) {
      return true;
    }
    String next = dirs.ceiling(p + "/");
    return next != null && next.startsWith(p + "/");
  }

  /** Names of the remembered directories directly under {@code dir}. */
  Set<String> childNames(FsPath dir) {
    Set<String> names = new TreeSet<>();
    for (String d : under(dir)) {
      String rest = d.substring(prefix(dir).length());
      int slash = rest.indexOf('/');
      names.add(slash < 0 ? rest : rest.substring(0, slash));
    }
    return names;
  }

  /** Forgets {@code path} and everything under it. */
  void removeAtOrUnder(FsPath path) {
    dirs.remove(path.toString());
    dirs.removeAll(under(path));
  }

  /** Moves what was remembered at or under {@code src} to {@code dst}. */
  void rename(FsPath src, FsPath dst) {
    List<String> moved = new ArrayList<>(under(src));
    if (dirs.remove(src.toString())) {
      moved.add(src.toString());
    }
    for (String d : moved) {
      dirs.remove(d);
      add(FsPath.parse(d).rebase(src, dst));
    }
  }

  private NavigableSet<String> under(FsPath dir) {
    String prefix = prefix(dir);
    // '/' + 1 is '0': every string that starts with the prefix sorts below prefix-with-'0'.
    return dirs.subSet(prefix, true, prefix.substring(0, prefix.length() - 1) + "0", false);
  }

  private static String prefix(FsPath dir) {
    return dir.isRoot() ? "/" : dir + "/";
  }
}
