package io.blobfs.namespace;

import io.blobfs.namespace.SoakModel.Kind;
import io.blobfs.namespace.SoakModel.Op;
import io.blobfs.namespace.SoakModel.Outcome;
import io.blobfs.namespace.SoakModel.Write;
import io.blobfs.store.BlobStore;
import io.blobfs.store.FaultInjectingBlobStore;
import io.blobfs.store.FaultInjectingBlobStore.Fault;
import io.blobfs.store.Futures;
import io.blobfs.store.TransactionalBlobStore;
import java.io.EOFException;
import java.io.FileNotFoundException;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.DirectoryNotEmptyException;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.NotDirectoryException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.LongAdder;
import java.util.concurrent.locks.ReentrantReadWriteLock;

/**
 * Issue "never lose a file": a randomized concurrency test of the namespace on any store.
 * N threads create (overwriting or not, inline up to several stripes, some of them slow),
 * rename files and directories, delete files and directories, read and list, over a few
 * directories of a few names each so that they collide; the orphan sweeper runs beside
 * them, and store calls fail at a low rate (before applying, or after, with the answer
 * lost) or are delayed. Every read is checked byte for byte against the write its bytes
 * name; every few hundred operations everything stops and {@link SoakModel#checkpoint}
 * checks the whole namespace.
 *
 * <p>A store binding calls {@link #run} with an empty store; see {@link Config} for the
 * system properties that make it a soak ({@code -Dblobfs.soak=true}) or replay a seed.
 */
public final class NamespaceSoak {
  /** Small stripes and inline threshold: files of several stripes cost little. */
  private static final int STRIPE = 4096;
  private static final int INLINE = 256;
  /** A scan page of 7 keys: listings, sweeps and recursive deletes span several pages. */
  private static final NamespaceOptions OPTIONS =
      new NamespaceOptions(STRIPE, 1024, 4096, INLINE, false, 7).withWriterLease(SoakModel.LEASE);
  /** 3 directories of 8 names (and a fourth directory name for renames): ops collide. */
  private static final int DIRS = 3;
  private static final int NAMES = 8;

  /**
   * @param seed the schedule's seed: each thread's operations and faults follow from it
   * @param faultRate the chance per operation that it arms a one-shot fault on one of the
   *     next store calls
   * @param sweepMinAge the concurrent sweeper's minimum age; slow writers pause longer
   * @param concurrentSweeper sweep all the time beside the workers (else only at
   *     checkpoints, while nothing runs)
   * @param keepGoing after a failed checkpoint, remove the broken names and go on (to
   *     count failures over a long run) instead of stopping
   */
  public record Config(long seed, int threads, Duration duration, int checkpointEveryOps,
      double faultRate, Duration sweepMinAge, double slowWriterRate, boolean concurrentSweeper,
      boolean keepGoing) {

    /**
     * The short default run of {@code seconds}, or with {@code -Dblobfs.soak=true} a soak:
     * 20 times as long, 8 threads, twice the faults. Any field can be set on its own:
     * {@code blobfs.soak.seed} (replays a schedule), {@code .seconds}, {@code .threads},
     * {@code .faults}, {@code .checkpoint-ops}, {@code .sweeper} ({@code concurrent} or
     * {@code checkpoints}), {@code .keep-going}.
     */
    public static Config fromSystemProperties(int seconds) {
      boolean soak = Boolean.getBoolean("blobfs.soak");
      long seed = Long.getLong("blobfs.soak.seed", System.nanoTime());
      return new Config(seed,
          Integer.getInteger("blobfs.soak.threads", soak ? 8 : 4),
          Duration.ofSeconds(Long.getLong("blobfs.soak.seconds", soak ? 20L * seconds : seconds)),
          Integer.getInteger("blobfs.soak.checkpoint-ops", 300),
          Double.parseDouble(System.getProperty("blobfs.soak.faults", soak ? "0.04" : "0.02")),
          Duration.ofMillis(100), 0.03,
          !"checkpoints".equals(System.getProperty("blobfs.soak.sweeper", "concurrent")),
          Boolean.getBoolean("blobfs.soak.keep-going"));
    }
  }

  /** What a run did: its counts and the failures of its checkpoints. */
  public record Result(String binding, Config config, String summary, List<String> failures,
      Map<String, Long> counts) {

    /** Fails with the failures, the seed and how to replay it. */
    public void assertNoFailures() {
      if (!failures.isEmpty()) {
        throw new AssertionError(failures.size() + " failure(s) in the soak of " + binding
            + " (seed " + config.seed() + "; replay with -Dblobfs.soak.seed=" + config.seed()
            + "), the first ones:\n"
            + String.join("\n", failures.subList(0, Math.min(5, failures.size())))
            + "\n" + summary);
      }
    }
  }

  private final String binding;
  private final Config config;
  private final FaultInjectingBlobStore faults;
  private final BlobStore raw;
  private final boolean transactional;
  private final SoakModel model;
  /** Workers hold it shared for one operation each; a checkpoint holds it alone. */
  private final ReentrantReadWriteLock quiesce = new ReentrantReadWriteLock(true);
  private final Map<String, LongAdder> counts = new ConcurrentHashMap<>();
  private final List<String> failures = Collections.synchronizedList(new ArrayList<>());
  private final List<Fault> armed = Collections.synchronizedList(new ArrayList<>());
  private final AtomicLong ops = new AtomicLong();
  private final AtomicBoolean stop = new AtomicBoolean();
  private long faultsFired;

  private NamespaceSoak(String binding, BlobStore store, boolean transactional, Config config) {
    this.binding = binding;
    this.config = config;
    this.raw = store;
    if (transactional && !(store instanceof TransactionalBlobStore)) {
      throw new IllegalArgumentException(binding + ": the store has no transactions");
    }
    this.faults = transactional ? FaultInjectingBlobStore.over(store)
        : FaultInjectingBlobStore.over(store, TransactionalBlobStore.class);
    this.transactional = transactional;
    this.model = new SoakModel(!transactional);
  }

  /**
   * Runs the test on {@code store}, which must be empty; {@code transactional} false hides
   * the store's transactions (the namespace's path for RADOS). Prints the counts.
   */
  public static Result run(String binding, BlobStore store, boolean transactional, Config config)
      throws Exception {
    return new NamespaceSoak(binding, store, transactional, config).run();
  }

  private BlobNamespace namespace() {
    return new BlobNamespace(faults.store(), OPTIONS, StoreCallCounters.NONE);
  }

  private Result run() throws Exception {
    long t0 = System.nanoTime();
    List<Thread> threads = new ArrayList<>();
    for (int t = 0; t < config.threads(); t++) {
      int id = t;
      threads.add(new Thread(() -> work(id), "soak-" + id));
    }
    if (config.concurrentSweeper()) {
      threads.add(new Thread(this::sweep, "soak-sweeper"));
    }
    threads.forEach(Thread::start);
    BlobNamespace checker = namespace();
    long deadline = t0 + config.duration().toNanos();
    long next = config.checkpointEveryOps();
    int checkpoints = 0;
    try {
      while (System.nanoTime() < deadline && (failures.isEmpty() || config.keepGoing())) {
        Thread.sleep(2);
        if (ops.get() >= next) {
          checkpoint(checker);
          checkpoints++;
          next = ops.get() + config.checkpointEveryOps();
        }
      }
    } finally {
      stop.set(true);
      for (Thread t : threads) {
        t.join(60_000);
        if (t.isAlive()) {
          failures.add(t.getName() + " did not stop within 60 s");
        }
      }
    }
    checkpoint(checker);
    checkpoints++;
    String summary = summary(checkpoints, (System.nanoTime() - t0) / 1_000_000);
    System.out.println(summary);
    for (String f : failures) {
      System.out.println("  FAILED " + f.lines().findFirst().orElse(""));
    }
    for (String r : model.reported()) {
      System.out.println("  REPORTED (a rename said both names may refer to one file) "
          + r.lines().findFirst().orElse(""));
    }
    Map<String, Long> snapshot = new TreeMap<>();
    counts.forEach((k, v) -> snapshot.put(k, v.sum()));
    return new Result(binding, config, summary, List.copyOf(failures), snapshot);
  }

  private void checkpoint(BlobNamespace checker) throws IOException {
    quiesce.writeLock().lock();
    try {
      synchronized (armed) {
        for (Fault f : armed) {
          faultsFired += f.fired();
        }
        armed.clear();
      }
      faults.clear();
      if (!transactional) {
        // A directory rename or delete that failed part-way left its intent: recovery
        // finishes it, as after a crash, before the names are read.
        try {
          checker.recover(true);
        } catch (IOException e) {
          // e.g. "moved every name but N": a documented answer; the names are checked below
          count("recovery", kindOf(e));
        }
      }
      List<String> found = model.checkpoint(checker, raw);
      count("checkpoint", found.isEmpty() ? "ok" : "failed");
      for (String f : found) {
        failures.add("checkpoint after " + ops.get() + " ops: " + f);
      }
    } finally {
      quiesce.writeLock().unlock();
    }
  }

  // ---------------------------------------------------------------- workers

  private void work(int thread) {
    Random rnd = new Random(config.seed() * 31 + thread);
    BlobNamespace ns = namespace();
    while (!stop.get()) {
      quiesce.readLock().lock();
      try {
        if (rnd.nextDouble() < config.faultRate()) {
          armFault(rnd);
        }
        one(ns, rnd, thread);
      } catch (RuntimeException | Error e) {
        failures.add("t" + thread + ": not a clean answer: " + stackOf(e));
      } finally {
        quiesce.readLock().unlock();
      }
      ops.incrementAndGet();
    }
  }

  private void one(BlobNamespace ns, Random rnd, int thread) {
    int dice = rnd.nextInt(100);
    if (dice < 30) {
      create(ns, rnd, thread);
    } else if (dice < 42) {
      FsPath src = pickFile(rnd);
      rename(ns, "rename.file", src, rnd.nextInt(10) < 7 ? pickFile(rnd) : pickDir(rnd), thread);
    } else if (dice < 47) {
      rename(ns, "rename.dir", pickDir(rnd), pickDir(rnd), thread);
    } else if (dice < 55) {
      delete(ns, "delete.file", pickFile(rnd), false, thread);
    } else if (dice < 57) {
      delete(ns, "delete.dir", pickDir(rnd), true, thread);
    } else if (dice < 88) {
      read(ns, pickFile(rnd));
    } else {
      list(ns, pickDir(rnd));
    }
  }

  private FsPath pickFile(Random rnd) {
    List<FsPath> seen = model.seenFiles();
    if (!seen.isEmpty() && rnd.nextInt(5) == 0) {
      return seen.get(rnd.nextInt(seen.size()));
    }
    return FsPath.parse("/d" + rnd.nextInt(DIRS) + "/f" + rnd.nextInt(NAMES));
  }

  private FsPath pickDir(Random rnd) {
    List<FsPath> seen = model.seenDirs();
    if (!seen.isEmpty() && rnd.nextInt(7) == 0) {
      return seen.get(rnd.nextInt(seen.size()));
    }
    return FsPath.parse("/d" + rnd.nextInt(DIRS + 1));
  }

  /** Sizes from a few inline bytes to four stripes and a bit; slow writers pause mid-file. */
  private void create(BlobNamespace ns, Random rnd, int thread) {
    FsPath path = pickFile(rnd);
    boolean overwrite = rnd.nextInt(10) < 7;
    boolean slow = rnd.nextDouble() < config.slowWriterRate();
    int length = !slow && rnd.nextInt(10) < 4
        ? SoakContent.HEADER + rnd.nextInt(INLINE - SoakContent.HEADER + 1)
        : STRIPE + rnd.nextInt(4 * STRIPE);
    slow &= length > STRIPE;
    String what = slow ? "create.slow" : "create";
    Write w = model.newWrite(path, length, slow);
    Op op = model.begin(Kind.CREATE, path, null, overwrite, thread, w);
    FileWriter writer;
    try {
      writer = ns.create(path, overwrite);
    } catch (IOException e) {
      w.outcome = Outcome.FAILED;
      finish(what, op, e);
      return;
    }
    w.fileId = writer.fileId();
    byte[] bytes = SoakContent.of(w.id, length);
    try {
      if (slow) {
        writer.write(bytes, 0, STRIPE);
        Thread.sleep(config.sweepMinAge().toMillis() * 5 / 2);
        writer.write(bytes, STRIPE, length - STRIPE);
      } else {
        writer.write(bytes, 0, length);
      }
    } catch (IOException | InterruptedException e) {
      writer.abort();
      w.outcome = Outcome.FAILED;
      finish(what, op, e);
      return;
    }
    try {
      writer.close();
      w.outcome = Outcome.OK;
      finish(what, op, "ok");
    } catch (IOException e) {
      w.outcome = inDoubt(e) ? Outcome.IN_DOUBT : Outcome.FAILED;
      finish(what, op, e);
    }
  }

  private void rename(BlobNamespace ns, String what, FsPath src, FsPath dst, int thread) {
    Op op = model.begin(Kind.RENAME, src, dst, false, thread, null);
    try {
      finish(what, op, String.valueOf(ns.rename(src, dst)));
    } catch (IOException e) {
      finish(what, op, e);
    }
  }

  private void delete(BlobNamespace ns, String what, FsPath path, boolean recursive,
      int thread) {
    Op op = model.begin(Kind.DELETE, path, null, recursive, thread, null);
    try {
      finish(what, op, String.valueOf(ns.delete(path, recursive)));
    } catch (IOException e) {
      finish(what, op, e);
    }
  }

  private void read(BlobNamespace ns, FsPath path) {
    FileInfo info;
    try {
      info = ns.getFileInfo(path);
    } catch (IOException e) {
      count("read", kindOf(e));
      return;
    }
    if (info.isDirectory()) {
      count("read", "directory");
      return;
    }
    count("read", readAndCheck(ns, info));
  }

  /** Lists a directory and reads every file it lists, as a job reading its input does. */
  private void list(BlobNamespace ns, FsPath dir) {
    List<FileInfo> entries;
    try {
      entries = ns.list(dir);
    } catch (IOException e) {
      count("list", kindOf(e));
      return;
    }
    count("list", "ok");
    for (FileInfo info : entries) {
      if (info.isFile()) {
        count("list.read", readAndCheck(ns, info));
      }
    }
  }

  private String readAndCheck(BlobNamespace ns, FileInfo info) {
    byte[] bytes;
    try {
      bytes = readWhole(ns, info);
    } catch (EOFException e) {
      failures.add("read " + info.path() + ": short data: " + e.getMessage());
      return "short";
    } catch (IOException e) {
      // A delete or overwrite may have removed the data since the record was read; only a
      // checkpoint, where nothing runs, can call a missing blob a loss.
      return kindOf(e);
    }
    String bad = model.checkRead(info.path(), bytes);
    if (bad != null) {
      failures.add(bad);
      return "bad";
    }
    return "ok";
  }

  /** The whole file, from its data blobs or its record. */
  static byte[] readWhole(BlobNamespace ns, FileInfo info) throws IOException {
    FileReader r = ns.open(info);
    ByteBuffer back = ByteBuffer.allocate((int) r.length());
    while (back.hasRemaining()) {
      if (Futures.await(r.read(back.position(), back)) < 0) {
        throw new EOFException(info.path() + " ended at " + back.position() + " of "
            + r.length());
      }
    }
    return back.array();
  }

  // ---------------------------------------------------------------- sweeper and faults

  private void sweep() {
    BlobNamespace ns = namespace();
    OrphanSweeper sweeper = new OrphanSweeper(ns, SoakModel.LEASE);
    Random rnd = new Random(config.seed() * 31 - 1);
    while (!stop.get()) {
      quiesce.readLock().lock();
      try {
        long start = model.tick();
        try {
          OrphanSweeper.Report r = sweeper.sweep(config.sweepMinAge(), false);
          model.swept(start, r, null);
          count("sweep", "ok");
          counts.computeIfAbsent("sweep/blobs deleted", k -> new LongAdder())
              .add(r.deletedBlobs());
        } catch (IOException e) {
          model.swept(start, null, e.toString());
          count("sweep", kindOf(e));
        }
      } catch (RuntimeException e) {
        failures.add("sweeper: not a clean answer: " + stackOf(e));
      } finally {
        quiesce.readLock().unlock();
      }
      sleep(rnd.nextInt(10));
    }
  }

  /**
   * One fault on one of the next store calls of a kind, on names or data: it fails before
   * applying, applies and loses its answer (a timeout after the store acted), or is slow.
   */
  private void armFault(Random rnd) {
    FaultInjectingBlobStore.Op[] kinds = {FaultInjectingBlobStore.Op.READ,
        FaultInjectingBlobStore.Op.WRITE, FaultInjectingBlobStore.Op.PUT,
        FaultInjectingBlobStore.Op.DELETE, FaultInjectingBlobStore.Op.SCAN,
        FaultInjectingBlobStore.Op.COMMIT, FaultInjectingBlobStore.Op.STAT};
    FaultInjectingBlobStore.Op kind = kinds[rnd.nextInt(kinds.length)];
    Fault f = faults.on(kind).keys(rnd.nextBoolean() ? "n/.*" : ".*").nth(1 + rnd.nextInt(20));
    int action = rnd.nextInt(100);
    Fault armedFault = action < 45 ? f.failBefore() : action < 85 ? f.applyThenFail()
        : f.delay(Duration.ofMillis(1 + rnd.nextInt(30)));
    armed.add(armedFault);
    count("fault", action < 45 ? "fail-before" : action < 85 ? "apply-then-fail" : "delay");
  }

  // ---------------------------------------------------------------- outcomes and counts

  private void finish(String what, Op op, String result) {
    model.end(op, result);
    count(what, result);
  }

  private void finish(String what, Op op, Exception e) {
    model.end(op, e.toString());
    count(what, kindOf(e));
  }

  private void count(String what, String outcome) {
    counts.computeIfAbsent(what + "/" + outcome, k -> new LongAdder()).increment();
  }

  /** A close that failed after its record may have been put: the file may exist. */
  private static boolean inDoubt(IOException e) {
    String m = String.valueOf(e.getMessage());
    return m.contains("may not have been published") || m.contains("may or may not be published");
  }

  private static String kindOf(Throwable e) {
    String m = String.valueOf(e.getMessage());
    if (e instanceof FileAlreadyExistsException) {
      return "exists";
    }
    if (e instanceof FileNotFoundException) {
      return "not-found";
    }
    if (e instanceof DirectoryNotEmptyException) {
      return "not-empty";
    }
    if (e instanceof NotDirectoryException) {
      return "not-dir";
    }
    if (e instanceof InterruptedException) {
      return "interrupted";
    }
    if (m.contains("both names may refer")) {
      return "both-named";
    }
    if (m.contains("may not have been published") || m.contains("may or may not be published")) {
      return "in-doubt";
    }
    if (m.contains("conflicted")) {
      return "conflict";
    }
    for (Throwable c = e; c != null; c = c.getCause()) {
      if (String.valueOf(c.getMessage()).contains("injected fault")) {
        return "fault";
      }
    }
    return e.getClass().getSimpleName();
  }

  private String summary(int checkpoints, long millis) {
    Map<String, Map<String, Long>> byOp = new TreeMap<>();
    long total = 0;
    for (Map.Entry<String, LongAdder> e : counts.entrySet()) {
      String[] k = e.getKey().split("/", 2);
      byOp.computeIfAbsent(k[0], x -> new TreeMap<>()).put(k[1], e.getValue().sum());
    }
    StringBuilder b = new StringBuilder();
    for (Map.Entry<String, Map<String, Long>> e : byOp.entrySet()) {
      long n = e.getValue().values().stream().mapToLong(Long::longValue).sum();
      if (!e.getKey().equals("sweep") && !e.getKey().equals("fault")
          && !e.getKey().equals("checkpoint") && !e.getKey().equals("list.read")) {
        total += n;
      }
      b.append(String.format("%n  %-12s %s", e.getKey(), e.getValue()));
    }
    return String.format("[soak %s] seed %d, %d threads, %.1f s, %d operations, %d checkpoints,"
        + " sweeper %s, %d faults fired, %d name(s) whose way there the model could not"
        + " settle, %d outcome(s) a rename reported, %d failure(s)%s%s", binding,
        config.seed(),
        config.threads(), millis / 1000.0, total, checkpoints,
        config.concurrentSweeper() ? "concurrent (min age " + config.sweepMinAge().toMillis()
            + " ms)" : "at checkpoints only", faultsFired, model.inconclusive(),
        model.reported().size(), failures.size(),
        failureKinds(), b);
  }

  /** How many failures of each kind, for a long run that goes on after them. */
  private String failureKinds() {
    Map<String, Integer> kinds = new TreeMap<>();
    synchronized (failures) {
      for (String f : failures) {
        String kind = f.contains("paused longer than the minimum age")
            ? "data loss: sweeper and idle writer"
            : f.contains("its writer was still open")
            ? "data loss: sweeper and writer in close"
            : f.contains("a rename of its name ran during the sweep")
            ? "data loss: sweeper and rename"
            : f.contains("DATA LOSS") ? "data loss: other"
            : f.contains("share file id") ? "two names share a file"
            : f.contains("MISSING") ? "missing"
            : f.contains("ORPHANS") ? "orphans"
            : f.contains("could bring it") ? "at a name no rename could bring it to"
            : "other";
        kinds.merge(kind, 1, Integer::sum);
      }
    }
    return kinds.isEmpty() ? "" : " " + kinds;
  }

  private static String stackOf(Throwable e) {
    java.io.StringWriter w = new java.io.StringWriter();
    e.printStackTrace(new java.io.PrintWriter(w));
    return w.toString();
  }

  private static void sleep(int millis) {
    try {
      Thread.sleep(millis);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }
}
