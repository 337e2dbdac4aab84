package io.blobfs.namespace;

import io.blobfs.store.BlobStore;
import io.blobfs.store.ScanPage;
import java.io.IOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicLong;

/**
 * What the soak test knows of the namespace, and the checks of a checkpoint.
 *
 * <p>Operations race on the same names, so the model does not pick one serial order.
 * Between two checkpoints (where nothing runs and every name is read) it logs each
 * mutation with the logical times it started and ended, and accepts what SOME order of
 * the logged operations could give: a write may be at any name that renames which could
 * have acted after it arrived would bring it to (a search over the renames of the
 * window), and a write that must exist may be missing only if a delete or
 * an overwrite that could have acted after it arrived touched one of those names. A
 * failed operation counts as one that may have acted, except a {@code close()} that
 * failed for sure: that write must never be read anywhere.
 */
final class SoakModel {
  /**
   * The writers' lease and the sweepers' hold on a lock: short, so that what a failed
   * close or release leaves behind is swept by the next checkpoint; longer than a slow
   * writer's pause, so that the concurrent sweeper leaves it alone.
   */
  static final Duration LEASE = Duration.ofMillis(600);

  enum Outcome { PENDING, OK, FAILED, IN_DOUBT }

  /** What a search of the renames found; UNKNOWN when it went deeper or longer than allowed. */
  enum Reach { YES, NO, UNKNOWN }

  /** Names a search of the renames expands at most. */
  private static final int MAX_SEARCH = 20_000;

  /** Files nested deeper than this are deleted at a checkpoint. */
  private static final int MAX_DEPTH = 4;

  enum Kind { CREATE, RENAME, DELETE }

  /** One file write: its id is in its bytes, its file id names its data blobs. */
  static final class Write {
    final long id;
    final FsPath path;
    final int length;
    final boolean slow;
    volatile String fileId;
    volatile Outcome outcome = Outcome.PENDING;
    volatile Op op;

    Write(long id, FsPath path, int length, boolean slow) {
      this.id = id;
      this.path = path;
      this.length = length;
      this.slow = slow;
    }

    @Override
    public String toString() {
      return "write #" + id + " of " + path + " (" + length + " B" + (slow ? ", slow writer" : "")
          + ", file id " + fileId + ", close " + outcome + ")";
    }
  }

  /** A logged mutation; {@code flag}: overwrite (create) or recursive (delete). */
  static final class Op {
    final Kind kind;
    final FsPath a;
    final FsPath b;
    final boolean flag;
    final int thread;
    final long start;
    final Write write;
    volatile long end = Long.MAX_VALUE;
    volatile String result = "running";
    /**
     * Without transactions, a rename or delete that failed may have left its intent, which
     * whoever meets it finishes ({@link DirectoryMove}): it may act until the checkpoint.
     */
    volatile boolean finishedLater;

    /** The latest time it may have acted. */
    long actsUntil() {
      return finishedLater ? Long.MAX_VALUE : end;
    }

    Op(Kind kind, FsPath a, FsPath b, boolean flag, int thread, long start, Write write) {
      this.kind = kind;
      this.a = a;
      this.b = b;
      this.flag = flag;
      this.thread = thread;
      this.start = start;
      this.write = write;
    }

    boolean touches(Set<FsPath> names) {
      for (FsPath n : names) {
        if (n.isAtOrUnder(a) || a.isAtOrUnder(n)
            || b != null && (n.isAtOrUnder(b) || b.isAtOrUnder(n))) {
          return true;
        }
      }
      return false;
    }

    @Override
    public String toString() {
      String what = switch (kind) {
        case CREATE -> "create(" + a + ", overwrite=" + flag + ") " + write;
        case RENAME -> "rename(" + a + ", " + b + ")";
        case DELETE -> "delete(" + a + ", recursive=" + flag + ")";
      };
      return "[" + start + ".." + (end == Long.MAX_VALUE ? "" : end) + "] t" + thread + " "
          + what + " -> " + result;
    }
  }

  /** One sweep of the concurrent sweeper and what it removed. */
  record Sweep(long start, long end, List<String> orphanFileIds, int deletedBlobs,
      String error) {}

  /** What a checkpoint read at one name. */
  private record Seen(FsPath path, String fileId, long writeId, String problem) {}

  private final AtomicLong clock = new AtomicLong();
  /** Without transactions: a failed directory operation may be finished by another later. */
  private final boolean finishedLater;

  SoakModel() {
    this(false);
  }

  SoakModel(boolean finishedLater) {
    this.finishedLater = finishedLater;
  }
  private final AtomicLong writeIds = new AtomicLong();
  /** Writes that may be read now: live at the last checkpoint or made since. */
  private final Map<Long, Write> writes = new ConcurrentHashMap<>();
  private final ConcurrentLinkedQueue<Op> window = new ConcurrentLinkedQueue<>();
  private final ConcurrentLinkedQueue<Sweep> sweeps = new ConcurrentLinkedQueue<>();
  /** Where each live write was at the last checkpoint (touched only while quiescent). */
  private Map<Long, FsPath> liveAt = new HashMap<>();
  private long windowStart;
  /** Names whose way there the search could not settle (counted, not failed). */
  private long inconclusive;
  /** What followed from a rename that said both names may refer to one file. */
  private final List<String> reported = new ArrayList<>();
  private volatile List<FsPath> files = List.of();
  private volatile List<FsPath> dirs = List.of();

  long inconclusive() {
    return inconclusive;
  }

  List<String> reported() {
    return reported;
  }

  long tick() {
    return clock.incrementAndGet();
  }

  Write newWrite(FsPath path, int length, boolean slow) {
    Write w = new Write(writeIds.incrementAndGet(), path, length, slow);
    writes.put(w.id, w);
    return w;
  }

  Op begin(Kind kind, FsPath a, FsPath b, boolean flag, int thread, Write write) {
    Op op = new Op(kind, a, b, flag, thread, tick(), write);
    if (write != null) {
      write.op = op;
    }
    window.add(op);
    return op;
  }

  void end(Op op, String result) {
    op.result = result;
    op.end = tick();
    boolean answered = result.equals("true") || result.equals("false") || result.equals("ok");
    op.finishedLater = finishedLater && op.kind != Kind.CREATE && !answered;
  }

  void swept(long start, OrphanSweeper.Report r, String error) {
    sweeps.add(new Sweep(start, tick(), r == null ? List.of() : r.orphanFileIds(),
        r == null ? 0 : r.deletedBlobs(), error));
  }

  /** File paths seen at the last checkpoint (nested ones included), for the workers. */
  List<FsPath> seenFiles() {
    return files;
  }

  List<FsPath> seenDirs() {
    return dirs;
  }

  /**
   * Checks bytes read mid-run: they must be exactly those of a write that may be live
   * and whose close did not fail for sure. Null if so, else the failure.
   */
  String checkRead(FsPath path, byte[] bytes) {
    long id = SoakContent.writeIdOf(bytes);
    Write w = writes.get(id);
    if (w == null) {
      return "read " + path + ": " + bytes.length + " bytes naming write #" + id
          + ", which is not live (gone before the last checkpoint, or never made)";
    }
    String bad = SoakContent.mismatch(w.id, w.length, bytes);
    if (bad != null) {
      return "read " + path + ": " + bad;
    }
    if (w.outcome == Outcome.FAILED) {
      return "read " + path + ": " + w + ", whose close failed for sure";
    }
    return null;
  }

  /**
   * The checks of a checkpoint, on a quiescent namespace: read every name, check it
   * against the window's operations, sweep with no minimum age, and check that no data
   * is left that no name refers to. Then the window starts again from what was read.
   * Names whose data is gone are removed (their records only) so that a run that goes on
   * after a failure checks the rest.
   */
  List<String> checkpoint(BlobNamespace ns, BlobStore raw) throws IOException {
    List<String> failures = new ArrayList<>();
    List<Op> ops = new ArrayList<>(window);
    // A rename or delete that answered false changed nothing: it decides that before acting.
    List<Op> acted = ops.stream().filter(o -> !o.result.equals("false")).toList();
    List<Op> renames = acted.stream().filter(o -> o.kind == Kind.RENAME
        && !o.b.isAtOrUnder(o.a)).toList();
    int maxDepth = depthBound(ops);
    Map<String, Write> byFileId = new HashMap<>();
    for (Write w : writes.values()) {
      if (w.fileId != null) {
        byFileId.put(w.fileId, w);
      }
    }

    Map<FsPath, Seen> seen = readAll(ns);
    Map<String, List<FsPath>> namesOfFile = new HashMap<>();
    for (Seen s : seen.values()) {
      namesOfFile.computeIfAbsent(s.fileId(), k -> new ArrayList<>()).add(s.path());
    }
    for (Map.Entry<String, List<FsPath>> e : namesOfFile.entrySet()) {
      List<FsPath> names = e.getValue();
      if (names.size() < 2) {
        continue;
      }
      Write w = byFileId.get(e.getKey());
      String what = "names " + names + " share file id " + e.getKey()
          + explain(e.getKey(), w, Set.copyOf(names), ops);
      if (!reportedBothNamed(w, Set.copyOf(names), ops)) {
        failures.add(what);
        continue;
      }
      // The rename said so, as documented: keep one name, drop the other records (not the
      // data, which the kept name needs), so that the run goes on from a sound namespace.
      reported.add(what);
      for (FsPath extra : names.subList(1, names.size())) {
        raw.delete(ns.layout().recordKey(extra));
        seen.remove(extra);
      }
    }
    Map<Long, List<FsPath>> namesOf = new HashMap<>();
    for (Seen s : seen.values()) {
      if (s.problem() != null) {
        Write w = byFileId.get(s.fileId());
        String what = "DATA LOSS at " + s.path() + ": " + s.problem() + "; it names "
            + (w == null ? "file id " + s.fileId() + " (no write of this window)" : w)
            + explain(s.fileId(), w, Set.of(s.path()), ops);
        (reportedBothNamed(w, Set.of(s.path()), ops) ? reported : failures).add(what);
        continue;
      }
      namesOf.computeIfAbsent(s.writeId(), k -> new ArrayList<>()).add(s.path());
      Write w = writes.get(s.writeId());
      if (w == null) {
        failures.add(s.path() + " holds write #" + s.writeId()
            + ", which was not live at the last checkpoint nor made since (resurrected)");
      } else if (w.outcome == Outcome.FAILED) {
        failures.add(s.path() + " holds " + w + ", whose close failed for sure");
      }
    }

    for (Write w : writes.values()) {
      FsPath origin = liveAt.get(w.id);
      long from = windowStart;
      if (origin == null) {
        if (w.op == null || w.outcome == Outcome.FAILED || w.outcome == Outcome.PENDING) {
          continue;
        }
        origin = w.path;
        from = w.op.start;
      }
      List<FsPath> at = namesOf.getOrDefault(w.id, List.of());
      for (FsPath p : at) {
        Reach r = canReach(origin, from, p, false, Long.MAX_VALUE, renames, maxDepth);
        if (r == Reach.UNKNOWN) {
          inconclusive++;
        } else if (r == Reach.NO) {
          failures.add(p + " holds " + w + ", but no rename of the window could bring it"
              + " there from " + origin + explain(w.fileId, w, Set.of(p, origin), ops));
        }
      }
      boolean mustExist = liveAt.containsKey(w.id) || w.outcome == Outcome.OK;
      if (at.isEmpty() && mustExist && !seenLost(seen, w)
          && !destroyable(origin, from, w, acted, renames, maxDepth)) {
        failures.add("MISSING: " + w + " was at " + origin + " and no delete or overwrite"
            + " of a name that renames could take it to could have removed it"
            + explain(w.fileId, w, Set.of(origin), ops));
      }
    }

    checkNoOrphansAfterSweep(ns, raw, seen, failures);

    for (Seen s : seen.values()) {
      if (s.problem() != null) {
        raw.delete(ns.layout().recordKey(s.path())); // the record only: its data is gone
      }
    }
    Map<Long, FsPath> live = new HashMap<>();
    for (Seen s : List.copyOf(seen.values())) {
      if (s.problem() != null) {
        continue;
      }
      if (s.path().depth() > MAX_DEPTH) {
        // Directory renames into directories nest deeper and deeper: cut them back, or
        // the names the model must follow grow without bound.
        ns.delete(s.path(), false);
        seen.remove(s.path());
      } else {
        live.put(s.writeId(), s.path());
      }
    }
    writes.keySet().retainAll(live.keySet());
    liveAt = live;
    files = List.copyOf(new TreeMap<>(seen).keySet());
    Set<FsPath> parents = new HashSet<>();
    for (FsPath p : files) {
      for (FsPath d = p.parent(); d != null && !d.isRoot(); d = d.parent()) {
        parents.add(d);
      }
    }
    dirs = List.copyOf(parents);
    window.clear();
    sweeps.clear();
    windowStart = tick();
    return failures;
  }

  /**
   * Whether a rename of the window answered that both names may refer to one file (its
   * read-back failed too): two names on one file, and the loss of both files' data when
   * one is deleted, are then what the namespace said could happen.
   */
  private boolean reportedBothNamed(Write w, Set<FsPath> names, List<Op> ops) {
    Set<FsPath> all = new HashSet<>(names);
    if (w != null) {
      all.add(w.path);
      if (liveAt.containsKey(w.id)) {
        all.add(liveAt.get(w.id));
      }
    }
    return ops.stream().anyMatch(o -> o.kind == Kind.RENAME
        && o.result.contains("both names may refer") && o.touches(all));
  }

  /** A name that still holds this write's record but lost its data was reported already. */
  private static boolean seenLost(Map<FsPath, Seen> seen, Write w) {
    return seen.values().stream().anyMatch(s -> s.problem() != null && s.fileId().equals(w.fileId));
  }

  /** Every file under the root, read whole; a name whose data cannot be read has a problem. */
  private Map<FsPath, Seen> readAll(BlobNamespace ns) throws IOException {
    Map<FsPath, Seen> seen = new TreeMap<>();
    for (FileInfo info : ns.listFilesRecursively(FsPath.ROOT).drain()) {
      seen.put(info.path(), read(ns, info));
    }
    return seen;
  }

  private Seen read(BlobNamespace ns, FileInfo info) throws IOException {
    String fileId = info.record().fileId();
    byte[] bytes;
    try {
      bytes = NamespaceSoak.readWhole(ns, info);
    } catch (java.io.FileNotFoundException | java.io.EOFException e) {
      return new Seen(info.path(), fileId, -1, e.getMessage());
    }
    long id = SoakContent.writeIdOf(bytes);
    Write w = writes.get(id);
    String bad = w == null ? null : SoakContent.mismatch(w.id, w.length, bytes);
    return new Seen(info.path(), fileId, id, bad == null ? null : "garbled: " + bad);
  }

  /**
   * A sweep with no minimum age while nothing runs: afterwards every data blob belongs to
   * a live name, and every live name still reads whole.
   */
  private void checkNoOrphansAfterSweep(BlobNamespace ns, BlobStore raw, Map<FsPath, Seen> seen,
      List<String> failures) throws IOException {
    try {
      // The sweep keeps blobs written in its own millisecond, and the data of a writer
      // (a lock) while its lease runs: a close whose outcome was unknown keeps it.
      Thread.sleep(LEASE.toMillis() + 20);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new java.io.InterruptedIOException();
    }
    new OrphanSweeper(ns, LEASE).sweep(Duration.ZERO, false);
    Set<String> liveIds = new HashSet<>();
    seen.values().forEach(s -> liveIds.add(s.fileId()));
    Set<String> left = new HashSet<>();
    String cursor = null;
    do {
      ScanPage page = raw.scan(KeyLayout.DATA, cursor, 1000);
      for (String key : page.keys()) {
        int start = KeyLayout.DATA.length();
        String id = key.substring(start, key.indexOf('/', start));
        if (!liveIds.contains(id)) {
          left.add(key);
        }
      }
      cursor = page.nextCursor();
    } while (cursor != null);
    if (!left.isEmpty()) {
      failures.add("ORPHANS after a sweep with no minimum age: " + new java.util.TreeSet<>(left));
    }
    for (Seen s : seen.values()) {
      if (s.problem() == null) {
        Seen again = read(ns, ns.getFileInfo(s.path()));
        if (again.problem() != null) {
          failures.add("the quiescent sweep removed live data of " + s.path() + ": "
              + again.problem());
        }
      }
    }
  }

  /**
   * Whether a write that was at {@code origin} from logical time {@code from} may be at
   * {@code target} (or, with {@code subtree}, at or under it) at some time before
   * {@code until}, moved by renames that could act after it arrived at their source: a
   * rename may bring it to its destination, or into it when that is a directory. Searched
   * backwards from the target, keeping per name the latest time the write may be there
   * and still arrive in time: going forwards, directory renames into directories nest
   * names without bound. UNKNOWN if it had to stop (too deep, or too many names).
   */
  static Reach canReach(FsPath origin, long from, FsPath target, boolean subtree, long until,
      List<Op> renames, int maxDepth) {
    record Node(FsPath path, boolean subtree) {}
    Map<Node, Long> latest = new HashMap<>();
    java.util.ArrayDeque<Node> work = new java.util.ArrayDeque<>();
    Node goal = new Node(target, subtree);
    latest.put(goal, until);
    work.add(goal);
    boolean truncated = false;
    for (int expanded = 0; !work.isEmpty(); expanded++) {
      if (expanded == MAX_SEARCH) {
        return Reach.UNKNOWN;
      }
      Node n = work.poll();
      long by = latest.get(n);
      if ((n.subtree() ? origin.isAtOrUnder(n.path()) : origin.equals(n.path())) && from < by) {
        return Reach.YES;
      }
      for (Op r : renames) {
        if (r.start >= by || r.a.isRoot()) {
          continue;
        }
        long before = Math.min(r.actsUntil(), by);
        for (FsPath dest : List.of(r.b, r.b.child(r.a.name()))) {
          Node pre = null;
          if (n.path().isAtOrUnder(dest)) {
            pre = new Node(n.path().rebase(dest, r.a), n.subtree());
          } else if (n.subtree() && dest.isAtOrUnder(n.path())) {
            pre = new Node(r.a, true); // all it moves lands under the target
          }
          if (pre == null) {
            continue;
          }
          if (pre.path().depth() > maxDepth) {
            truncated = true;
            continue;
          }
          Long old = latest.get(pre);
          if (old == null || before > old) {
            latest.put(pre, before);
            work.add(pre);
          }
        }
      }
    }
    return truncated ? Reach.UNKNOWN : Reach.NO;
  }

  /**
   * How deep the search follows names: one level below the deepest name the window's
   * operations or the last checkpoint named. A write can pass deeper only through
   * directory renames into directories in a row; the search then says it cannot tell.
   */
  private int depthBound(List<Op> ops) {
    int d = liveAt.values().stream().mapToInt(FsPath::depth).max().orElse(0);
    for (Op o : ops) {
      d = Math.max(d, o.a.depth());
      if (o.b != null) {
        d = Math.max(d, o.b.depth() + 1);
      }
    }
    return d + 1;
  }

  /**
   * A delete, or an overwrite whose close did not fail for sure, of a name the write may
   * have been at before that operation ended, may have removed it.
   */
  static boolean destroyable(FsPath origin, long from, Write w, List<Op> ops, List<Op> renames,
      int maxDepth) {
    for (Op d : ops) {
      boolean overwrite = d.kind == Kind.CREATE && d.flag && d.write != w
          && d.write.outcome != Outcome.FAILED;
      if ((d.kind == Kind.DELETE || overwrite)
          && canReach(origin, from, d.a, d.kind == Kind.DELETE && d.flag, d.actsUntil(), renames,
              maxDepth) != Reach.NO) {
        return true;
      }
    }
    return false;
  }

  /**
   * Which of the sweeper's known races fits: an idle writer, a writer still in close() (its
   * publish waited, for the replaced file's lock, past its lease), or a rename during the
   * sweep. Before, a writer not slow but still open was left out, and a rename of the name
   * that ran meanwhile (of the file it was replacing) was blamed (seed 5151810870002).
   */
  private static String whySwept(Sweep s, Write w, Set<FsPath> names, List<Op> ops) {
    if (w != null && w.slow && w.op != null && w.op.end > s.start()) {
      return ": its writer, paused longer than the minimum age, was still open";
    }
    if (w != null && w.op != null && w.op.start < s.end() && w.op.end > s.start()) {
      return ": its writer was still open (in close(), its publish may have waited past its"
          + " lease)";
    }
    for (Op o : ops) {
      if (o.kind == Kind.RENAME && o.start < s.end() && o.end > s.start() && o.touches(names)
          && !o.result.equals("false")) {
        return ": a rename of its name ran during the sweep, " + o;
      }
    }
    return "";
  }

  /** The window's operations on these names, and the sweeps that took this file id. */
  private String explain(String fileId, Write w, Set<FsPath> names, List<Op> ops) {
    StringBuilder b = new StringBuilder();
    if (w != null && w.op != null && !names.contains(w.path)) {
      names = new HashSet<>(names);
      names.add(w.path);
    }
    for (Sweep s : sweeps) {
      if (fileId != null && s.orphanFileIds().contains(fileId)) {
        b.append("\n    sweep [").append(s.start()).append("..").append(s.end())
            .append("] took it as an orphan and deleted ").append(s.deletedBlobs())
            .append(" blob(s)").append(whySwept(s, w, names, ops));
      }
    }
    b.append("\n    window from ").append(windowStart).append(":");
    for (Op o : ops) {
      if (o.touches(names)) {
        b.append("\n    ").append(o);
      }
    }
    return b.toString();
  }
}
