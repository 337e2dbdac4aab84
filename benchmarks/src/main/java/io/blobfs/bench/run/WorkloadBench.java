package io.blobfs.bench.run;

import io.blobfs.bench.StorageCounters;
import io.blobfs.bench.trace.Traced;
import io.blobfs.bench.workloads.Grep;
import io.blobfs.bench.workloads.TextDataGenerator.Spec;
import java.io.IOException;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.function.Consumer;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;

/**
 * Runs workloads on stores through {@link SparkSubmitRunner}: generates the inputs the
 * workloads need on every store, then submits each workload on each store, times it, takes the storage calls
 * it made (counters before and after, on the driver's file system instance: in local mode
 * the tasks share it) and checks its output. The first store is the reference whose outputs
 * every store's are checked against; callers put file:// first.
 *
 * <p>With a cluster master the executors' calls happen in other JVMs and are not counted;
 * times and checks still hold.
 */
public final class WorkloadBench {

  /** One workload on one store. */
  public record Result(String store, Workload workload, double seconds,
      StorageCounters calls, String check) {
    public boolean ok() {
      return Workload.OK.equals(check);
    }

    public long bytesRead() {
      return calls.first("fs.bytesRead");
    }

    public long bytesWritten() {
      return calls.first("fs.bytesWritten");
    }
  }

  /**
   * @param size text bytes per run (the other inputs are fractions of it, see {@link Dataset})
   * @param sparkConf extra spark-submit {@code --conf}s (UI off, driver address...)
   * @param warmUp whether to submit the first workload once, untimed, before the runs
   */
  public record Options(long size, long seed, String master, List<Workload> workloads,
      Map<String, String> sparkConf, java.nio.file.Path appJar, boolean warmUp) {}

  private final Options options;
  private final Consumer<String> progress;
  private final Map<Workload, Workload.Outcome> reference = new EnumMap<>(Workload.class);
  private final Map<Dataset, Dataset.Expected> expected = new EnumMap<>(Dataset.class);
  /** Runs done so far, for the progress lines. */
  private int done;
  /** With --profile: a JFR recording and Spark's event log per timed run; else null. */
  private RunProfiler profiler;
  private int round;

  public WorkloadBench(Options options, Consumer<String> progress) {
    this.options = options;
    this.progress = progress;
    for (Workload w : options.workloads()) {
      expected.computeIfAbsent(w.input(),
          d -> d.expected(d.spec(options.size(), options.seed()), Grep.DEFAULT_PATTERN));
    }
  }

  /** Where each store's runs go: its traced file system, its base, its generated inputs. */
  public record Prepared(Map<StoreTarget, FileSystem> fileSystems,
      Map<StoreTarget, Path> bases, Map<StoreTarget, Map<Dataset, Path>> inputs) {}

  /**
   * Runs every workload on every store, the first store being the reference: inputs first
   * on every store, then one untimed warm-up submission (the JVM's first Spark context and
   * class loading would otherwise land on the first timed run), then workload by workload,
   * the stores interleaved so that noise on this machine hits them alike.
   */
  public List<Result> run(List<StoreTarget> stores) throws IOException {
    Prepared p = prepare(stores);
    warmUp(p, stores);
    List<Result> results = round(p, stores, 0, stores.size() * options.workloads().size(),
        false);
    cleanUp(p);
    return results;
  }

  /** Profiles every timed run from now on (see {@link RunProfiler}). */
  public void profile(RunProfiler profiler) {
    this.profiler = profiler;
  }

  /** Opens every store's traced file system and generates the inputs on each. */
  public Prepared prepare(List<StoreTarget> stores) throws IOException {
    Map<StoreTarget, FileSystem> fileSystems = new LinkedHashMap<>();
    Map<StoreTarget, Path> bases = new LinkedHashMap<>();
    Map<StoreTarget, Map<Dataset, Path>> inputs = new LinkedHashMap<>();
    for (StoreTarget store : stores) {
      FileSystem fs = tracedFileSystem(store);
      Path base = fs.makeQualified(store.base());
      fileSystems.put(store, fs);
      bases.put(store, base);
      inputs.put(store, generate(store, fs, base));
    }
    // Stores of one scheme share Hadoop's cached instance (file:// and a CephFS mount):
    // each instance is told the inputs of all its stores.
    Map<FileSystem, List<Path>> inputsByInstance = new java.util.IdentityHashMap<>();
    inputs.forEach((store, byDataset) -> inputsByInstance
        .computeIfAbsent(fileSystems.get(store), k -> new ArrayList<>())
        .addAll(byDataset.values()));
    inputsByInstance.forEach((fs, dirs) -> {
      if (fs instanceof Traced traced) {
        traced.setInputDirectories(dirs);
      }
    });
    return new Prepared(fileSystems, bases, inputs);
  }

  /** The untimed warm-up submission on the first store, if the options ask for one. */
  public void warmUp(Prepared p, List<StoreTarget> stores) {
    if (options.warmUp() && !stores.isEmpty()) {
      warmUp(p, stores.get(0), options.workloads().subList(0, 1));
    }
  }

  /** One untimed submission of each of {@code workloads} on {@code store}. */
  public void warmUp(Prepared p, StoreTarget store, List<Workload> workloads) {
    for (Workload w : workloads) {
      long t0 = System.nanoTime();
      submit(store, w, p.inputs().get(store).get(w.input()),
          new Path(p.bases().get(store), "warm-up-" + w.id()));
      progress.accept(String.format(Locale.ROOT, "      warm-up: %s on %s, untimed (%.1f s)",
          w.id(), store.name(), (System.nanoTime() - t0) / 1e9));
    }
  }

  /**
   * One round: workload by workload, each on every store in {@code order}. Outputs go to
   * {@code out-WORKLOAD} (round 0) or {@code out-WORKLOAD-rN}; with {@code deleteOutputs}
   * each is deleted once checked, so repeated rounds do not fill the disk.
   *
   * @param total the number of runs the progress lines count to
   */
  public List<Result> round(Prepared p, List<StoreTarget> order, int round, int total,
      boolean deleteOutputs) throws IOException {
    List<Result> results = new ArrayList<>();
    this.round = round;
    for (Workload w : options.workloads()) {
      for (StoreTarget store : order) {
        FileSystem fs = p.fileSystems().get(store);
        Path out = new Path(p.bases().get(store),
            "out-" + w.id() + (round == 0 ? "" : "-r" + round));
        Result r = runOne(store, fs, w, p.inputs().get(store).get(w.input()), out);
        results.add(r);
        done++;
        progress.accept(String.format(Locale.ROOT, "[%2d/%d] %-8s %-21s %7.2f s  %s",
            done, total, store.name(), w.id(), r.seconds(), r.check()));
        if (deleteOutputs) {
          fs.delete(out, true);
        }
      }
    }
    return results;
  }

  /** Deletes every store's run directory. */
  public void cleanUp(Prepared p) throws IOException {
    for (Map.Entry<StoreTarget, FileSystem> e : p.fileSystems().entrySet()) {
      e.getValue().delete(p.bases().get(e.getKey()), true);
    }
  }

  /**
   * The store's file system as Hadoop's cache holds it, which is the instance Spark's jobs
   * in this JVM will use too. The cache ignores configuration: an untraced instance cached
   * earlier in this JVM (by another job or test) would be returned and nothing counted, so
   * it is closed, which takes it out of the cache, and the traced one made in its place.
   */
  private static FileSystem tracedFileSystem(StoreTarget store) throws IOException {
    FileSystem fs = store.base().getFileSystem(store.configuration());
    if (!(fs instanceof Traced)) {
      fs.close();
      fs = store.base().getFileSystem(store.configuration());
    }
    return fs;
  }

  private Map<Dataset, Path> generate(StoreTarget store, FileSystem fs, Path base)
      throws IOException {
    Map<Dataset, Path> inputs = new LinkedHashMap<>();
    for (Workload w : options.workloads()) {
      Dataset d = w.input();
      if (!inputs.containsKey(d)) {
        Path dir = new Path(base, d.dirName());
        Spec spec = d.spec(options.size(), options.seed());
        long t0 = System.nanoTime();
        var summary = d.generate(fs, dir, spec);
        progress.accept(String.format(Locale.ROOT,
            "      %-8s generated %-8s %,d bytes in %d files (%.1f s)", store.name(),
            d.name().toLowerCase(Locale.ROOT), summary.bytes(), summary.files(),
            (System.nanoTime() - t0) / 1e9));
        inputs.put(d, dir);
      }
    }
    return inputs;
  }

  /** Submits one workload and checks its output (the check reads after the counters). */
  public Result runOne(StoreTarget store, FileSystem fs, Workload w, Path input, Path output)
      throws IOException {
    StorageCounters before = StorageCounters.of(fs);
    jdk.jfr.Recording recording = profiler == null ? null : profiler.start();
    long t0 = System.nanoTime();
    String failure = null;
    try {
      submit(store, w, input, output);
    } catch (Exception e) { // SparkSubmit rethrows what the application threw, checked or not
      failure = "failed: " + e;
      e.printStackTrace();
    }
    double seconds = (System.nanoTime() - t0) / 1e9;
    if (recording != null) {
      profiler.stop(recording, "r" + round + "-" + w.id() + "-" + store.name(), seconds);
    }
    StorageCounters calls = StorageCounters.of(fs).minus(before);
    String check = failure != null ? failure : check(w, fs, output);
    return new Result(store.name(), w, seconds, calls, check);
  }

  private void submit(StoreTarget store, Workload w, Path input, Path output) {
    Map<String, String> conf = new LinkedHashMap<>(options.sparkConf());
    conf.putAll(store.sparkConf());
    conf.put("spark.app.name", w.id() + "@" + store.name());
    if (profiler != null) {
      profiler.addSparkConf(conf);
    }
    SparkSubmitRunner.submit(SparkSubmitRunner.arguments(options.master(), conf, w.mainClass(),
        options.appJar(), w.appArgs(input, output)));
  }

  /**
   * Checks {@code output} against the reference (the first store's output of {@code w},
   * which becomes the reference when there is none yet) and the generator's expectations.
   */
  public String check(Workload w, FileSystem fs, Path output) throws IOException {
    Workload.Outcome actual = w.read(fs, output);
    Workload.Outcome ref = reference.computeIfAbsent(w, k -> actual);
    return w.check(actual, ref, expected.get(w.input()));
  }
}
