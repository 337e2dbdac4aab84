package io.blobfs.namespace;

import io.blobfs.store.BlobStore;
import io.blobfs.store.ScanPage;
import io.blobfs.store.TransactionalBlobStore;
import io.blobfs.store.FaultInjectingBlobStore;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.TreeMap;

/**
 * The crash test's two halves, for any store (without its transactions): a worker that a
 * child process runs until it is killed, and the recovery and checks its parent runs
 * after each kill.
 *
 * <p>The worker keeps a few top-level directories, each a <em>group</em> of exactly
 * {@link #GROUP} files, and loops: renames a whole directory to a fresh name, renames a
 * file within its directory, overwrites a file, deletes a directory recursively, creates
 * a new group. Every file's bytes carry its group and the write that made them (then bytes
 * that follow from that write only): every name must read back bytes self-consistent with
 * their header (bytes it was given), no two names may share a file id, each group must lie
 * whole in one directory (a directory rename or delete cut off would leave it split or
 * short), and after the sweep no data blob may lack a name, and no lock or intent may be
 * left. A group lost whole leaves no trace in the store, so the worker also logs each
 * group it made and each it is about to delete ({@link Log}): every group made and not
 * deleted must still be there.
 */
public final class CrashLoop {
  /** Files per group. */
  static final int GROUP = 3;
  private static final int STRIPE = 4096;
  private static final int HEADER = 20;
  /** Where a group is made before it is renamed into place. */
  private static final String NEW = "/new-";

  private CrashLoop() {}

  /** Namespace options of both halves: the given lease bounds the dead worker's locks. */
  public static NamespaceOptions options(Duration lease) {
    return new NamespaceOptions(STRIPE, 1024, 4 * STRIPE, 256, false, 50)
        .withWriterLease(lease);
  }

  private static BlobNamespace namespace(BlobStore store, Duration lease) {
    // The store's transactions, if any, are hidden: RADOS' path.
    return new BlobNamespace(
        FaultInjectingBlobStore.over(store, TransactionalBlobStore.class).store(),
        options(lease), StoreCallCounters.NONE);
  }

  /**
   * The worker: runs operations until killed, printing "BEGIN n" before each one and
   * "OP n kind" after each one that returned (whatever it answered), "GROUP+ id" once a
   * group is in place and "GROUP- id" before a group's delete starts.
   */
  public static void work(BlobStore store, Duration lease, long seed, PrintStream out)
      throws IOException {
    BlobNamespace ns = namespace(store, lease);
    Random rnd = new Random(seed);
    long writes = seed * 1_000_000;
    List<FsPath> dirs = groups(ns);
    out.println("READY " + dirs.size());
    out.flush();
    for (long n = 1; ; n++) {
      String kind;
      out.println("BEGIN " + n);
      out.flush();
      try {
        kind = one(ns, rnd, seed, n, dirs, writes, out);
        writes += GROUP;
      } catch (IOException e) {
        // Not expected from a lone worker; go on from what is there now.
        kind = "failed " + e;
        dirs.clear();
        dirs.addAll(groups(ns));
      }
      out.println("OP " + n + " " + kind);
      out.flush();
    }
  }

  /** One operation; {@code writes}: the worker's write ids so far (it uses up to GROUP more). */
  private static String one(BlobNamespace ns, Random rnd, long seed, long n, List<FsPath> dirs,
      long writes, PrintStream out) throws IOException {
    int dice = rnd.nextInt(100);
    if (dirs.size() < 3 || dice < 10 && dirs.size() < 8) {
      // Made aside, then renamed into place: a group appears whole or not at all.
      FsPath made = FsPath.parse(NEW + seed + "-" + n);
      long group = rnd.nextLong() & Long.MAX_VALUE;
      for (int f = 0; f < GROUP; f++) {
        write(ns, made.child("f" + f), group, ++writes, rnd);
      }
      FsPath dir = FsPath.parse("/g" + seed + "-" + n);
      ns.rename(made, dir);
      dirs.add(dir);
      out.println("GROUP+ " + group);
      return "create-group";
    }
    FsPath dir = dirs.get(rnd.nextInt(dirs.size()));
    if (dice < 35) {
      FsPath to = FsPath.parse("/g" + seed + "-" + n);
      ns.rename(dir, to);
      dirs.set(dirs.indexOf(dir), to);
      return "rename-dir";
    }
    if (dice < 85) {
      List<FileInfo> files = ns.list(dir);
      FileInfo victim = files.get(rnd.nextInt(files.size()));
      if (dice < 60) {
        ns.rename(victim.path(), dir.child("r" + n));
        return "rename-file";
      }
      if (dice < 72) {
        // A new version made aside, then renamed over the file: the group keeps its count
        // whether the rename over happened or not, and one cut off must leave neither two
        // names on a file nor a name without data.
        FsPath made = FsPath.parse(NEW + seed + "-" + n).child("o");
        write(ns, made, groupOf(ns, victim), ++writes, rnd);
        ns.renameOver(made, victim);
        return "rename-over";
      }
      write(ns, victim.path(), groupOf(ns, victim), ++writes, rnd);
      return "overwrite";
    }
    List<FileInfo> files = ns.list(dir);
    if (!files.isEmpty()) {
      out.println("GROUP- " + groupOf(ns, files.get(0)));
      out.flush();
    }
    ns.delete(dir, true);
    dirs.remove(dir);
    return "delete-dir";
  }

  /**
   * The groups in place; a group a killed worker left half made (under {@link #NEW}, never
   * renamed into place) is deleted.
   */
  private static List<FsPath> groups(BlobNamespace ns) throws IOException {
    List<FsPath> dirs = new ArrayList<>();
    for (FileInfo i : ns.list(FsPath.ROOT)) {
      if (i.path().toString().startsWith(NEW)) {
        ns.delete(i.path(), true);
      } else {
        dirs.add(i.path());
      }
    }
    return dirs;
  }

  private static void write(BlobNamespace ns, FsPath path, long group, long writeId,
      Random rnd) throws IOException {
    int length = rnd.nextInt(3) == 0 ? HEADER + rnd.nextInt(200) : STRIPE + rnd.nextInt(3 * STRIPE);
    byte[] bytes = bytes(group, writeId, length);
    try (FileWriter w = ns.create(path, true)) {
      w.write(bytes, 0, bytes.length);
    }
  }

  private static long groupOf(BlobNamespace ns, FileInfo info) throws IOException {
    return ByteBuffer.wrap(NamespaceSoak.readWhole(ns, info)).getLong();
  }

  static byte[] bytes(long group, long writeId, int length) {
    byte[] b = new byte[length];
    ByteBuffer.wrap(b).putLong(group).putLong(writeId).putInt(length);
    Random r = new Random(writeId);
    for (int i = HEADER; i < length; i++) {
      b[i] = (byte) r.nextInt();
    }
    return b;
  }

  /**
   * The parent's record of the workers' output over all runs: the groups that must exist
   * (made, and no delete of them begun), operations completed, and how many runs were
   * killed in the middle of an operation (begun, not returned).
   */
  public static final class Log {
    private final Set<Long> groups = new HashSet<>();
    private long operations;
    private int killedMidOperation;

    /** Takes in the whole output of one worker run, after it was killed. */
    public synchronized void run(List<String> lines) {
      boolean open = false;
      for (String line : lines) {
        String[] w = line.split(" ", 3);
        switch (w[0]) {
          case "BEGIN" -> open = true;
          case "OP" -> {
            open = false;
            operations++;
          }
          case "GROUP+" -> groups.add(Long.parseLong(w[1]));
          case "GROUP-" -> groups.remove(Long.parseLong(w[1]));
          default -> { }
        }
      }
      if (open) {
        killedMidOperation++;
      }
    }

    public synchronized Set<Long> groups() {
      return Set.copyOf(groups);
    }

    public synchronized long operations() {
      return operations;
    }

    public synchronized int killedMidOperation() {
      return killedMidOperation;
    }
  }

  /** What one recovery found; {@code problems} empty if every invariant holds. */
  public record Check(int files, int groups, List<String> finished, int sweptBlobs,
      List<String> problems) {}

  /**
   * The parent's half, after a kill: waits out the dead worker's lease, runs the recovery
   * command ({@link BlobNamespace#finishInterruptedRenames}) and a sweep, then checks,
   * {@code mustExist} among it: the groups the worker made and began no delete of.
   */
  public static Check recoverAndCheck(BlobStore store, Duration lease, Set<Long> mustExist)
      throws Exception {
    Thread.sleep(lease.toMillis() + 50);
    BlobNamespace ns = namespace(store, lease);
    List<String> finished = ns.finishInterruptedRenames();
    OrphanSweeper.Report swept = new OrphanSweeper(ns, lease).sweep(Duration.ZERO, false);
    List<String> problems = new ArrayList<>();
    Map<String, FsPath> byFileId = new HashMap<>();
    Map<Long, Set<FsPath>> dirsOfGroup = new HashMap<>();
    Map<Long, Integer> filesOfGroup = new TreeMap<>();
    int files = 0;
    EntryIterator<FileInfo> all = ns.listFilesRecursively(FsPath.ROOT);
    while (all.hasNext()) {
      FileInfo info = all.next();
      files++;
      FsPath other = byFileId.put(info.record().fileId(), info.path());
      if (other != null) {
        problems.add(info.path() + " and " + other + " share file id " + info.record().fileId());
      }
      byte[] bytes;
      try {
        bytes = NamespaceSoak.readWhole(ns, info);
      } catch (IOException e) {
        problems.add(info.path() + " lacks its data: " + e);
        continue;
      }
      ByteBuffer h = ByteBuffer.wrap(bytes);
      if (bytes.length < HEADER) {
        problems.add(info.path() + " holds " + bytes.length + " bytes, less than a header");
        continue;
      }
      long group = h.getLong();
      long writeId = h.getLong();
      if (!java.util.Arrays.equals(bytes, bytes(group, writeId, h.getInt()))) {
        problems.add(info.path() + " does not read back the bytes of write " + writeId);
      }
      if (!info.path().toString().startsWith(NEW)) { // one being made may be short
        dirsOfGroup.computeIfAbsent(group, g -> new HashSet<>()).add(info.path().parent());
        filesOfGroup.merge(group, 1, Integer::sum);
      }
    }
    for (Map.Entry<Long, Integer> g : filesOfGroup.entrySet()) {
      Set<FsPath> dirs = dirsOfGroup.get(g.getKey());
      if (dirs.size() != 1 || g.getValue() != GROUP) {
        problems.add("group " + g.getKey() + " is split or short: " + g.getValue()
            + " file(s) in " + dirs);
      }
    }
    for (long g : mustExist) {
      if (!filesOfGroup.containsKey(g)) {
        problems.add("group " + g + " was made and never deleted, but is gone");
      }
    }
    for (String key : keys(store, KeyLayout.DATA)) {
      if (KeyLayout.isLock(key)) {
        problems.add("lock left after recovery: " + key);
      } else if (!byFileId.containsKey(KeyLayout.fileIdOf(key))) {
        problems.add("orphan left after a sweep: " + key);
      }
    }
    for (String key : keys(store, KeyLayout.RENAMES + "/")) {
      problems.add("intent left after recovery: " + key);
    }
    return new Check(files, filesOfGroup.size(), finished, swept.deletedBlobs(), problems);
  }

  private static List<String> keys(BlobStore store, String prefix) throws IOException {
    List<String> out = new ArrayList<>();
    String cursor = null;
    do {
      ScanPage page = store.scan(prefix, cursor, 1000);
      out.addAll(page.keys());
      cursor = page.nextCursor();
    } while (cursor != null);
    return out;
  }
}
