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

  public WorkloadBench(Options options, Consumer<String> progress) {
    this.options = options;
    this.progress = progress;
    for (Workload w : options.workloads()) {
      expected.computeIfAbsent(w.input(),
          d -> d.expected(d.spec(options.size(), options.seed()), Grep.DEFAULT_PATTERN));
    }
  }

  /**
   * Runs every workload on every store, the first store being the reference: inputs first
   * on every store, then one untimed warm-up submission (the JVM's first Spark context and
   * class loading would otherwise land on the first timed run), then workload by workload,
   * the stores interleaved so that noise on this machine hits them alike.
   */
  public List<Result> run(List<StoreTarget> stores) throws IOException {
    Map<StoreTarget, FileSystem> fileSystems = new LinkedHashMap<>();
    Map<StoreTarget, Path> bases = new LinkedHashMap<>();
    Map<StoreTarget, Map<Dataset, Path>> inputs = new LinkedHashMap<>();
    for (StoreTarget store : stores) {
      FileSystem fs = store.base().getFileSystem(store.configuration());
      Path base = fs.makeQualified(store.base());
      fileSystems.put(store, fs);
      bases.put(store, base);
      inputs.put(store, generate(store, fs, base));
    }
    if (options.warmUp() && !stores.isEmpty()) {
      StoreTarget first = stores.get(0);
      Workload w = options.workloads().get(0);
      long t0 = System.nanoTime();
      submit(first, w, inputs.get(first).get(w.input()), new Path(bases.get(first), "warm-up"));
      progress.accept(String.format(Locale.ROOT, "      warm-up: %s on %s, untimed (%.1f s)",
          w.id(), first.name(), (System.nanoTime() - t0) / 1e9));
    }
    List<Result> results = new ArrayList<>();
    int total = stores.size() * options.workloads().size();
    for (Workload w : options.workloads()) {
      for (StoreTarget store : stores) {
        Path out = new Path(bases.get(store), "out-" + w.id());
        Result r = runOne(store, fileSystems.get(store), w, inputs.get(store).get(w.input()),
            out);
        results.add(r);
        progress.accept(String.format(Locale.ROOT, "[%2d/%d] %-8s %-21s %7.2f s  %s",
            results.size(), total, store.name(), w.id(), r.seconds(), r.check()));
      }
    }
    for (StoreTarget store : stores) {
      fileSystems.get(store).delete(bases.get(store), true);
    }
    return results;
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
    if (fs instanceof Traced traced) {
      traced.setInputDirectories(inputs.values());
    }
    return inputs;
  }

  /** Submits one workload and checks its output (the check reads after the counters). */
  public Result runOne(StoreTarget store, FileSystem fs, Workload w, Path input, Path output)
      throws IOException {
    StorageCounters before = StorageCounters.of(fs);
    long t0 = System.nanoTime();
    String failure = null;
    try {
      submit(store, w, input, output);
    } catch (Exception e) { // SparkSubmit rethrows what the application threw, checked or not
      failure = "failed: " + e;
      e.printStackTrace();
    }
    double seconds = (System.nanoTime() - t0) / 1e9;
    StorageCounters calls = StorageCounters.of(fs).minus(before);
    String check = failure != null ? failure : check(w, fs, output);
    return new Result(store.name(), w, seconds, calls, check);
  }

  private void submit(StoreTarget store, Workload w, Path input, Path output) {
    Map<String, String> conf = new LinkedHashMap<>(options.sparkConf());
    conf.putAll(store.sparkConf());
    conf.put("spark.app.name", w.id() + "@" + store.name());
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
