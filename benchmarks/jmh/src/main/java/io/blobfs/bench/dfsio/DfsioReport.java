package io.blobfs.bench.dfsio;

import io.blobfs.bench.Reports;
import io.blobfs.bench.rados.ClusterEnv;
import io.blobfs.tyr.server.TyrServerProcess;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.LocalDate;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.knowm.xchart.CategoryChart;
import org.knowm.xchart.CategoryChartBuilder;

/**
 * Hadoop's own TestDFSIO, unchanged, side by side on HDFS (the daemons of
 * scripts/hdfs/hdfs.sh), blob:// on a Týr server process (reading its files itself, or over
 * TCP only: tyr-server-tcp), blob:// on a Týr node embedded in the job's JVM, blob:// on
 * RADOS (the project's single-OSD cluster) and file://.
 *
 * <p>Every job is a JVM of its own, as {@code hadoop jar ... TestDFSIO} would be, running
 * the LocalJobRunner; the file system is chosen with {@code fs.defaultFS} and
 * {@code test.build.data} only. A round runs every target's {@code -write}, then its
 * {@code -read}, then {@code -clean}; the order of the targets turns each round so that
 * none always follows another's dirty pages, and dirty pages are written back before each
 * timed job.
 *
 * <p>Usage: {@code DfsioReport [--rounds N] [--files N] [--size S] [--buffer B] [--cold]
 * [--targets a,b] [--name REPORT] --report-dir DIR --work-dir DIR}; run by scripts/bench-dfsio.sh, which
 * starts HDFS and Ceph and exports their environment.
 */
public final class DfsioReport {
  private static final String POLL = "mapreduce.client.progressmonitor.pollinterval";

  /** One file system TestDFSIO runs on: the -D options that choose it. */
  private record Target(String name, String label, List<String> options, List<String> cp) {}

  /** One TestDFSIO job: its own throughput figure and total bytes over its run time. */
  record Job(double throughput, double wall, double mb, double seconds) {}

  private record Run(String target, int round, Job write, Job read) {}

  private DfsioReport() {}

  public static void main(String[] args) throws Exception {
    Map<String, String> a = parse(args);
    int rounds = Integer.parseInt(a.getOrDefault("rounds", "3"));
    int files = Integer.parseInt(a.getOrDefault("files", "4"));
    String size = a.getOrDefault("size", "256MB");
    String buffer = a.getOrDefault("buffer", "1000000");
    boolean cold = a.containsKey("cold");
    String reportName = a.getOrDefault("name", "dfsio");
    String loadBefore = Files.readString(Path.of("/proc/loadavg")).trim();
    Path reportDir = Path.of(a.getOrDefault("report-dir", "benchmarks/reports"));
    Path work = Path.of(a.getOrDefault("work-dir", "target/dfsio")).toAbsolutePath();
    List<String> wanted = List.of(a.getOrDefault("targets",
        "hdfs,tyr-server,tyr-embedded,rados,file").split(","));
    if (cold && !canDropCaches()) {
      throw new IllegalStateException("--cold drops the page cache between write and read, "
          + "which needs root (/proc/sys/vm/drop_caches is not writable)");
    }
    deleteTree(work);
    Files.createDirectories(work);

    Path tyrData = work.resolve("tyr-server");
    Files.createDirectories(tyrData);
    Files.createDirectories(work.resolve("tyr-server-nosync"));
    // Synced every 100 ms, like the embedded node's default: HDFS does not sync a block
    // before acknowledging it either.
    try (TyrServerProcess tyr = wanted.contains("tyr-server") || wanted.contains("tyr-server-tcp")
        || wanted.contains("tyr-server-8m")
        ? new TyrServerProcess(tyrData, "--sync", "interval", "--threads", "4").start() : null;
        // Like for like with HDFS, whose DataNode never syncs a block it writes (unless the
        // client calls hsync): a second server whose log is synced only when a segment
        // fills. Not a default of Týr's: its default loses at most 100 ms on a crash.
        TyrServerProcess unsynced = wanted.stream().anyMatch(w -> w.startsWith("tyr-server-nosync"))
            ? new TyrServerProcess(work.resolve("tyr-server-nosync"), "--sync", "none",
                "--threads", "4").start() : null;
        // The baseline build's own server for tyr-server-baseline, same settings as
        // tyr-server's: client and server of the commit a change starts from.
        TyrServerProcess base = wanted.contains("tyr-server" + BASELINE) ? new TyrServerProcess(
            Files.createDirectories(work.resolve("tyr-server" + BASELINE)), "--sync", "interval",
            "--threads", "4").classpathFirst(ClusterEnv.required(BASELINE_CP)).start() : null) {
      List<Target> targets = new ArrayList<>();
      for (String name : wanted) {
        targets.add(target(name, work, name.equals("tyr-server" + BASELINE) ? base
            : name.startsWith("tyr-server-nosync") ? unsynced : tyr));
      }
      List<Run> runs = new ArrayList<>();
      for (int round = 0; round < rounds; round++) {
        List<Target> order = new ArrayList<>(targets);
        Collections.rotate(order, -round);
        for (Target t : order) {
          Job w = job(t, "-write", files, size, buffer, work, round);
          if (cold) {
            dropCaches();
          }
          Job r = job(t, "-read", files, size, buffer, work, round);
          job(t, "-clean", files, size, buffer, work, round);
          runs.add(new Run(t.name(), round + 1, w, r));
          System.out.printf(Locale.ROOT,
              "round %d %-14s write %7.1f MB/s (TestDFSIO %7.1f)  read %7.1f MB/s (TestDFSIO %7.1f)%n",
              round + 1, t.name(), w.wall(), w.throughput(), r.wall(), r.throughput());
        }
      }
      String load = "load average (1, 5, 15 min) before: " + loadBefore + "; after: "
          + Files.readString(Path.of("/proc/loadavg")).trim();
      report(targets, runs, rounds, files, size, buffer, cold, load, reportDir, reportName);
    } finally {
      deleteTree(work.resolve("local"));
    }
  }

  /**
   * {@code BLOBFS_DFSIO_BASELINE_CP}: the jars of another build of BlobFS (the commit a
   * change starts from), colon-separated. A target named {@code X-baseline} is target X
   * with those jars first on its job's classpath (and tyr-server-baseline on a server of
   * its own run from them too), so a change and what it changes are measured side by
   * side, interleaved, in one run.
   */
  static final String BASELINE_CP = "BLOBFS_DFSIO_BASELINE_CP";
  private static final String BASELINE = "-baseline";

  private static Target target(String name, Path work, TyrServerProcess tyr) {
    if (name.endsWith(BASELINE)) {
      Target t = target(name.substring(0, name.length() - BASELINE.length()), work, tyr);
      String cp = System.getenv(BASELINE_CP);
      if (cp == null || cp.isBlank()) {
        throw new IllegalArgumentException(name + " needs " + BASELINE_CP
            + " (the jars of the build it compares with)");
      }
      List<String> first = new ArrayList<>(List.of(cp.split(":")));
      first.addAll(t.cp());
      return new Target(name, t.label() + " (baseline build)", t.options(), first);
    }
    List<String> blob = List.of("-Dfs.blob.impl=io.blobfs.hadoop.BlobFileSystem");
    switch (name) {
      case "hdfs": {
        String uri = ClusterEnv.required("HDFS_URI");
        // HDFS_CONF_DIR first on the classpath, as HADOOP_CONF_DIR is for a user's job:
        // replication and block size are the client's choice in HDFS.
        return new Target(name, "HDFS (NameNode + DataNode processes)",
            fsOptions(uri), List.of(ClusterEnv.required("HDFS_CONF_DIR")));
      }
      case "tyr-server-nosync": {
        List<String> o = new ArrayList<>(blob);
        o.add("-Dfs.blob.store.tyrnosync.type=tyr");
        o.add("-Dfs.blob.store.tyrnosync.address=" + tyr.address());
        o.addAll(fsOptions("blob://tyrnosync"));
        return new Target(name, "blob:// on a Týr server process, log not synced (as HDFS)",
            o, List.of());
      }
      case "tyr-server-8m": {
        // The Týr store's write buffer before session 8 (the built-in 8 MiB), side by side
        // with tyr-server's 1 MiB default on the same server process.
        List<String> o = new ArrayList<>(blob);
        o.add("-Dfs.blob.store.tyrsrv.type=tyr");
        o.add("-Dfs.blob.store.tyrsrv.address=" + tyr.address());
        o.add("-Dfs.blob.store.tyrsrv.write.buffer.size=8m");
        o.addAll(fsOptions("blob://tyrsrv"));
        return new Target(name, "blob:// on a Týr server process, 8 MiB writes (before)", o,
            List.of());
      }
      case "tyr-server":
      case "tyr-server-tcp": {
        // The job runs on the server's host: by default it reads the server's files itself
        // (local reads); tyr-server-tcp turns that off, so every byte comes over TCP.
        boolean tcp = name.equals("tyr-server-tcp");
        List<String> o = new ArrayList<>(blob);
        o.add("-Dfs.blob.store.tyrsrv.type=tyr");
        o.add("-Dfs.blob.store.tyrsrv.address=" + tyr.address());
        o.add("-Dfs.blob.store.tyrsrv.local-reads=" + !tcp);
        o.addAll(fsOptions("blob://tyrsrv"));
        return new Target(name, tcp ? "blob:// on a Týr server process, reads over TCP"
            : "blob:// on a Týr server process, local reads", o, List.of());
      }
      case "tyr-embedded": {
        List<String> o = new ArrayList<>(blob);
        o.add("-Dfs.blob.store.tyremb.type=tyr");
        o.add("-Dfs.blob.store.tyremb.embedded-dir=" + work.resolve("tyr-embedded"));
        o.addAll(fsOptions("blob://tyremb"));
        return new Target(name, "blob:// on a Týr node embedded in the job's JVM", o,
            List.of());
      }
      case "rados": {
        List<String> o = new ArrayList<>(blob);
        ClusterEnv.storeOptions("dfsio").forEach((k, v) ->
            o.add("-Dfs.blob.store.rados." + k + "=" + v));
        o.addAll(fsOptions("blob://rados"));
        return new Target(name, "blob:// on RADOS (single bluestore OSD)", o, List.of());
      }
      case "file":
        return new Target(name, "file:// (same disk)",
            fsOptions(work.resolve("local").toUri().toString().replaceAll("/$", "")),
            List.of());
      default:
        throw new IllegalArgumentException("unknown target " + name
            + " (hdfs, tyr-server, tyr-server-8m, tyr-server-nosync, tyr-server-tcp, tyr-embedded,"
            + " rados, file; X-baseline: X on the build named by " + BASELINE_CP + ")");
    }
  }

  /** TestDFSIO opens {@code FileSystem.get(conf)}, so the default file system is the target. */
  private static List<String> fsOptions(String root) {
    String fsRoot = root.startsWith("file:") ? "file:///" : root + "/";
    return List.of("-Dfs.defaultFS=" + fsRoot,
        "-Dtest.build.data=" + root + "/benchmarks/TestDFSIO");
  }

  private static Job job(Target t, String op, int files, String size, String buffer,
      Path work, int round) throws IOException, InterruptedException {
    Path res = work.resolve("results-" + t.name() + "-" + round + op + ".log");
    Files.deleteIfExists(res);
    List<String> cmd = new ArrayList<>(List.of(
        Path.of(System.getProperty("java.home"), "bin", "java").toString(), "-Xmx2g"));
    cmd.addAll(jvmOptions(System.getenv().getOrDefault("BLOBFS_DFSIO_JVM_OPTS", ""),
        t.name(), op, round + 1));
    cmd.addAll(List.of("-cp", String.join(":", Stream.concat(t.cp().stream(),
            Stream.of(System.getProperty("java.class.path"))).toList()),
        "org.apache.hadoop.fs.TestDFSIO"));
    cmd.addAll(t.options());
    // The job's staging and local dirs are this run's own. The LocalJobRunner reads the
    // staging root without mapred-default.xml's ${hadoop.tmp.dir} default, so on
    // hadoop.tmp.dir alone it staged under /tmp/hadoop/mapred/staging, shared by every run
    // on the machine.
    Path tmp = work.resolve("hadoop-tmp");
    cmd.add("-Dhadoop.tmp.dir=" + tmp);
    cmd.add("-Dmapreduce.jobtracker.staging.root.dir=" + tmp.resolve("mapred/staging"));
    cmd.add("-Dmapreduce.cluster.local.dir=" + tmp.resolve("mapred/local"));
    // JobClient looks at a running job once a second by default, so TestDFSIO's exec time
    // (the wall figure) would come in whole seconds: a job of a few seconds would be off by
    // up to a third.
    cmd.add("-D" + POLL + "=100");
    cmd.add(op);
    if (!op.equals("-clean")) {
      cmd.addAll(List.of("-nrFiles", Integer.toString(files), "-size", size,
          "-bufferSize", buffer, "-resFile", res.toString()));
    }
    if (!op.equals("-clean")) {
      sync();
    }
    Path log = work.resolve("job-" + t.name() + "-" + round + op + ".out");
    Process p = new ProcessBuilder(cmd).redirectErrorStream(true)
        .redirectOutput(log.toFile()).start();
    if (!p.waitFor(20, TimeUnit.MINUTES)) {
      p.destroyForcibly();
      throw new IOException("TestDFSIO " + op + " on " + t.name() + " ran over 20 minutes; "
          + "output in " + log);
    }
    if (p.exitValue() != 0) {
      throw new IOException("TestDFSIO " + op + " on " + t.name() + " exited "
          + p.exitValue() + "; output in " + log + ":\n" + tail(log));
    }
    return op.equals("-clean") ? null : parse(res, t.name() + " " + op);
  }

  /**
   * The extra options of a job's JVM ({@code BLOBFS_DFSIO_JVM_OPTS}, split at white space),
   * with {@code %t}, {@code %o} and {@code %r} replaced by the target, the operation
   * without its dash and the round, so that a JFR recording per job gets a file of its own.
   */
  static List<String> jvmOptions(String spec, String target, String op, int round) {
    List<String> out = new ArrayList<>();
    for (String opt : spec.trim().split("\\s+")) {
      if (!opt.isEmpty()) {
        out.add(opt.replace("%t", target).replace("%o", op.replaceFirst("^-", ""))
            .replace("%r", Integer.toString(round)));
      }
    }
    return out;
  }

  private static final Pattern LINE = Pattern.compile("^\\s*([^:]+?)\\s*:\\s*([0-9.]+)\\s*$");

  /** TestDFSIO's result file: "Throughput mb/sec", "Total MBytes processed", "Test exec time sec". */
  private static Job parse(Path res, String what) throws IOException {
    Map<String, Double> v = new LinkedHashMap<>();
    for (String line : Files.readAllLines(res, StandardCharsets.UTF_8)) {
      Matcher m = LINE.matcher(line);
      if (m.matches()) {
        v.put(m.group(1), Double.parseDouble(m.group(2)));
      }
    }
    Double tp = v.get("Throughput mb/sec");
    Double mb = v.get("Total MBytes processed");
    Double sec = v.get("Test exec time sec");
    if (tp == null || mb == null || sec == null) {
      throw new IOException("no TestDFSIO result for " + what + " in " + res);
    }
    return new Job(tp, mb / sec, mb, sec);
  }

  private static void sync() throws IOException, InterruptedException {
    new ProcessBuilder("sync").inheritIO().start().waitFor();
    Thread.sleep(500);
  }

  private static boolean canDropCaches() {
    return Files.isWritable(Path.of("/proc/sys/vm/drop_caches"));
  }

  private static void dropCaches() throws IOException, InterruptedException {
    sync();
    Files.writeString(Path.of("/proc/sys/vm/drop_caches"), "3");
    // Bluestore keeps its own cache (the bench gives it gigabytes, as HDFS has the page
    // cache): a cold read on RADOS must not find its bytes there either.
    String conf = System.getenv("CEPH_CONF");
    if (conf != null) {
      Process p = new ProcessBuilder("ceph", "-c", conf, "--name", "client.admin",
          "--keyring", System.getenv().getOrDefault("CEPH_KEYRING", ""), "tell", "osd.*",
          "cache", "drop").redirectErrorStream(true).redirectOutput(
              ProcessBuilder.Redirect.DISCARD).start();
      if (!p.waitFor(60, TimeUnit.SECONDS) || p.exitValue() != 0) {
        throw new IOException("could not drop the OSDs' caches (ceph tell osd.* cache drop)");
      }
    }
  }

  // ------------------------------------------------------------------ report

  private static double median(List<Double> v) {
    List<Double> s = v.stream().sorted().toList();
    return s.size() % 2 == 1 ? s.get(s.size() / 2)
        : (s.get(s.size() / 2 - 1) + s.get(s.size() / 2)) / 2;
  }

  private static String spread(List<Double> v) {
    return String.format(Locale.ROOT, "%.0f-%.0f", Collections.min(v), Collections.max(v));
  }

  private static List<Double> of(List<Run> runs, String target,
      java.util.function.Function<Run, Double> f) {
    return runs.stream().filter(r -> r.target().equals(target)).map(f).toList();
  }

  private static void report(List<Target> targets, List<Run> runs, int rounds, int files,
      String size, String buffer, boolean cold, String load, Path dir, String name)
      throws IOException {
    boolean hasHdfs = targets.stream().anyMatch(t -> t.name().equals("hdfs"));
    StringBuilder md = new StringBuilder();
    md.append("# TestDFSIO: HDFS, blob:// (Týr, RADOS) and file:// side by side\n\n");
    md.append("Run ").append(LocalDate.now()).append(" by `scripts/bench-dfsio.sh`: Hadoop's own "
        + "`org.apache.hadoop.fs.TestDFSIO` (hadoop-mapreduce-client-jobclient 3.4.1, tests "
        + "jar), unchanged, with the LocalJobRunner on Java 17: `-write` then `-read`, ")
        .append(files).append(" files of ").append(size).append(", `-bufferSize ")
        .append(buffer).append("`, ").append(rounds).append(" rounds. ")
        .append("Each job is a JVM of its own; the LocalJobRunner runs one map at a time, so "
            + "every figure is one stream at a time. The order of the targets turns each "
            + "round, and dirty pages are written back (`sync`) before each write and read job. "
            + "MB = 2^20 bytes, as TestDFSIO counts.\n\n");
    md.append("- **Cache:** ").append(cold
        ? "cold reads: the page cache was dropped (`sync; echo 3 > /proc/sys/vm/drop_caches`) "
            + "between each write and its read, and so was the OSD's bluestore cache "
            + "(`ceph tell osd.* cache drop`). The DataNode and the Týr server keep no data "
            + "cache of their own."
        : "warm reads, as TestDFSIO runs them: each read job right after its write, with "
            + "whatever the page cache kept (the machine has other work and a kernel that "
            + "reclaims eagerly, so part of the data may come from disk).").append('\n');
    md.append("- **wall** = total bytes / TestDFSIO's \"Test exec time sec\" (the job from "
        + "submission to result, tasks and job set-up included; the client polls the job every "
        + "100 ms, `" + POLL + "=100`, instead of every second); **TestDFSIO** = its "
        + "\"Throughput mb/sec\" (bytes over the sum of the map tasks' I/O times).\n");
    md.append("- **Targets:** HDFS = a NameNode and a DataNode, each its own JVM "
        + "(`scripts/hdfs/hdfs.sh`; replication 1, 64 MiB blocks, loopback, no short-circuit "
        + "reads: they need the native libhadoop, which is not available here); Týr server = "
        + "`TyrServerProcess`, log synced every 100 ms (`--sync interval`, the embedded node's default; a server's is `always`); Týr server, log not synced "
        + "= the same with `--sync none` (synced only when a 1 GiB log segment fills), like "
        + "for like with HDFS, whose DataNode does not sync a block it writes, on close "
        + "either, unless the client asks (hsync); Týr embedded = "
        + "`fs.blob.store.X.embedded-dir`, a node in the job's JVM (each job reopens it); "
        + "RADOS = the project's single-OSD cephx cluster, bluestore on a sparse file, "
        + "OSD memory: ").append(System.getenv().getOrDefault(
            "BLOBFS_BENCH_OSD_CACHE", "(unknown)"))
        .append(" (`scripts/ceph/bench-env.sh`: HDFS has the page cache, so the OSD gets a "
            + "cache of comparable size); file:// = the local disk. Every blob:// store "
            + "runs BlobFS's default stream settings. All on one disk and 2 shared cores "
            + "with other builds running: ").append(load).append(".\n\n");

    for (String phase : List.of("write", "read")) {
      java.util.function.Function<Run, Double> wall =
          phase.equals("write") ? r -> r.write().wall() : r -> r.read().wall();
      java.util.function.Function<Run, Double> tp =
          phase.equals("write") ? r -> r.write().throughput() : r -> r.read().throughput();
      double hdfsWall = hasHdfs ? median(of(runs, "hdfs", wall)) : Double.NaN;
      double hdfsTp = hasHdfs ? median(of(runs, "hdfs", tp)) : Double.NaN;
      md.append("## ").append(phase.equals("write") ? "Write" : "Read").append("\n\n");
      md.append("| target | wall MB/s, median (min-max) | / HDFS | TestDFSIO MB/s, median "
          + "(min-max) | / HDFS | per round (wall) |\n|---|---:|---:|---:|---:|---|\n");
      for (Target t : targets) {
        List<Double> w = of(runs, t.name(), wall);
        List<Double> x = of(runs, t.name(), tp);
        md.append(String.format(Locale.ROOT, "| %s | %.0f (%s) | %s | %.0f (%s) | %s | %s |%n",
            t.label(), median(w), spread(w), ratio(median(w), hdfsWall), median(x), spread(x),
            ratio(median(x), hdfsTp), String.join(", ",
                w.stream().map(d -> String.format(Locale.ROOT, "%.0f", d)).toList())));
      }
      md.append('\n');
    }
    md.append("## Time outside the I/O\n\nSeconds per job: the job's time (TestDFSIO's "
        + "\"Test exec time\") less the sum of its maps' I/O times (total MB over TestDFSIO's "
        + "throughput: each map's reads or writes and its stream's close). What is left is "
        + "the job's set-up, its metadata calls, the maps' opens and commits, the reduce and "
        + "the job's commit. Median (min-max) of the rounds.\n\n"
        + "| target | write: job s | write: I/O s | write: outside s | read: job s | "
        + "read: I/O s | read: outside s |\n|---|---:|---:|---:|---:|---:|---:|\n");
    for (Target t : targets) {
      md.append("| ").append(t.label());
      for (boolean write : List.of(true, false)) {
        java.util.function.Function<Run, Job> j = write ? Run::write : Run::read;
        List<Double> total = of(runs, t.name(), r -> j.apply(r).seconds());
        List<Double> io = of(runs, t.name(), r -> ioSeconds(j.apply(r)));
        List<Double> outside = of(runs, t.name(), r -> j.apply(r).seconds() - ioSeconds(j.apply(r)));
        for (List<Double> v : List.of(total, io, outside)) {
          md.append(String.format(Locale.ROOT, " | %.2f (%.2f-%.2f)", median(v),
              Collections.min(v), Collections.max(v)));
        }
      }
      md.append(" |\n");
    }
    md.append('\n');
    md.append("## Every job\n\n| round | target | write MB | write s | write TestDFSIO MB/s "
        + "| read s | read TestDFSIO MB/s |\n|---:|---|---:|---:|---:|---:|---:|\n");
    runs.stream().sorted(Comparator.comparingInt(Run::round)).forEach(r ->
        md.append(String.format(Locale.ROOT, "| %d | %s | %.0f | %.2f | %.1f | %.2f | %.1f |%n",
            r.round(), r.target(), r.write().mb(), r.write().seconds(), r.write().throughput(),
            r.read().seconds(), r.read().throughput())));

    List<String> cats = targets.stream().map(Target::name).toList();
    CategoryChart chart = new CategoryChartBuilder().width(860).height(460)
        .title("TestDFSIO " + files + " x " + size + ", " + (cold ? "cold" : "warm")
            + " reads: total MB / job time, median of " + rounds + " rounds")
        .xAxisTitle("target").yAxisTitle("MB/s").build();
    // six or more targets' names overlap when set level
    chart.getStyler().setXAxisLabelRotation(20);
    chart.addSeries("write", cats,
        targets.stream().map(t -> median(of(runs, t.name(), r -> r.write().wall()))).toList());
    chart.addSeries("read", cats,
        targets.stream().map(t -> median(of(runs, t.name(), r -> r.read().wall()))).toList());
    Reports.write(dir, name, md, chart);
  }

  /** The sum of a job's map I/O times: its MB over TestDFSIO's own throughput. */
  static double ioSeconds(Job j) {
    return j.mb() / j.throughput();
  }

  private static String ratio(double v, double hdfs) {
    return Double.isNaN(hdfs) ? "-" : String.format(Locale.ROOT, "%.2f", v / hdfs);
  }

  // ------------------------------------------------------------------ plumbing

  private static Map<String, String> parse(String[] args) {
    Map<String, String> m = new LinkedHashMap<>();
    for (int i = 0; i < args.length; i++) {
      if (!args[i].startsWith("--")) {
        throw new IllegalArgumentException("unexpected argument " + args[i]);
      }
      String k = args[i].substring(2);
      if (k.equals("cold")) {
        m.put(k, "true");
      } else if (i + 1 < args.length) {
        m.put(k, args[++i]);
      } else {
        throw new IllegalArgumentException("--" + k + " needs a value");
      }
    }
    return m;
  }

  private static String tail(Path log) throws IOException {
    List<String> lines = Files.readAllLines(log, StandardCharsets.UTF_8);
    return String.join("\n", lines.subList(Math.max(0, lines.size() - 30), lines.size()));
  }

  private static void deleteTree(Path p) throws IOException {
    if (!Files.exists(p)) {
      return;
    }
    try (Stream<Path> s = Files.walk(p)) {
      for (Path x : s.sorted(Comparator.reverseOrder()).toList()) {
        Files.deleteIfExists(x);
      }
    }
  }
}
