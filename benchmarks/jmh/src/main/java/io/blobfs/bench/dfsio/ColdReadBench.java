package io.blobfs.bench.dfsio;

import io.blobfs.bench.Reports;
import io.blobfs.store.StoreOptions;
import io.blobfs.tyr.server.TyrServerProcess;
import java.io.IOException;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Random;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FSDataInputStream;
import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.fs.FileSystem;
import org.knowm.xchart.CategoryChart;
import org.knowm.xchart.CategoryChartBuilder;

/**
 * What a TestDFSIO read job pays once per JVM, which a warm stream ({@link ReadPatternBench})
 * never shows: each probe is a fresh JVM that makes a file system, touches it once (as
 * TestDFSIO's job writes its control files before any map runs), then opens and reads
 * FILES files with 1,000,000-byte reads, timing per file the open, the first read, and
 * the rest with the close. TestDFSIO's own figure times exactly the first read, the rest
 * and the close ({@code IOMapperBase.map}: the stream is opened before its clock starts),
 * so that sum is printed as "I/O" with the rate it gives, and its ratio to file://.
 * Targets run interleaved, one JVM each, the order turned every round.
 *
 * <p>Usage: {@code ColdReadBench [--rounds N] [--files N] [--size S] [--targets
 * tyr-server,tyr-server-tcp,file] [--name REPORT]}. It starts its own Týr server process
 * (as {@code scripts/bench-dfsio.sh} does), writes the files once per target, and writes
 * {@code benchmarks/reports/NAME.md} and {@code .png}. {@code BLOBFS_COLD_JVM_OPTS}: extra
 * options of every probe JVM ({@code %t} and {@code %r} become target and round, e.g. a
 * JFR recording per probe).
 */
public final class ColdReadBench {
  private static final int APP_READ = 1_000_000; // TestDFSIO's default buffer
  private static final String[] PHASES = {"fs", "open 1st", "read 1st", "rest 1st",
      "open later", "read later", "rest later", "I/O"};

  private ColdReadBench() {}

  public static void main(String[] args) throws Exception {
    if (args.length > 0 && args[0].equals("--probe")) {
      probe(args);
      return;
    }
    Map<String, String> a = new LinkedHashMap<>();
    for (int i = 0; i + 1 < args.length; i += 2) {
      a.put(args[i], args[i + 1]);
    }
    int rounds = Integer.parseInt(a.getOrDefault("--rounds", "5"));
    int files = Integer.parseInt(a.getOrDefault("--files", "4"));
    long size = StoreOptions.parseBytes("size", a.getOrDefault("--size", "256m"));
    List<String> targets = List.of(a.getOrDefault("--targets", "tyr-server,tyr-server-tcp,file")
        .split(","));
    String name = a.getOrDefault("--name", "cold-read");
    Path work = Path.of("benchmarks/jmh/target/cold-read").toAbsolutePath();
    Files.createDirectories(work.resolve("tyr"));
    Files.createDirectories(work.resolve("file"));
    Map<String, List<double[]>> runs = new LinkedHashMap<>();
    try (TyrServerProcess tyr = new TyrServerProcess(work.resolve("tyr"), "--sync", "interval",
        "--threads", "4").start()) {
      for (String t : targets) {
        write(conf(t, tyr, work), base(t, work), files, size);
        runs.put(t, new ArrayList<>());
      }
      for (int r = 0; r < rounds; r++) {
        for (int i = 0; i < targets.size(); i++) {
          String t = targets.get((i + r) % targets.size());
          double[] phases = runProbe(t, r, tyr, work, files);
          runs.get(t).add(phases);
          System.out.printf(Locale.ROOT, "round %d %-16s %s%n", r, t, line(phases, files, size));
        }
      }
    }
    Reports.write(Path.of("benchmarks/reports"), name, report(runs, targets, files, size, rounds),
        chart(runs, targets));
  }

  /** A probe's phases in ms, in the order of {@link #PHASES} (later: medians of files 2..N). */
  private static double[] runProbe(String target, int round, TyrServerProcess tyr, Path work,
      int files) throws IOException, InterruptedException {
    List<String> cmd = new ArrayList<>(List.of(Path.of(System.getProperty("java.home"), "bin",
        "java").toString(), "-Xmx512m", "-cp", System.getProperty("java.class.path")));
    String extra = System.getenv("BLOBFS_COLD_JVM_OPTS");
    if (extra != null && !extra.isBlank()) {
      for (String o : extra.trim().split("\\s+")) {
        cmd.add(o.replace("%t", target).replace("%r", Integer.toString(round)));
      }
    }
    cmd.addAll(List.of(ColdReadBench.class.getName(), "--probe", base(target, work),
        Integer.toString(files)));
    conf(target, tyr, work).forEach(e -> {
      if (e.getKey().startsWith("fs.blob.")) {
        cmd.add(e.getKey() + "=" + e.getValue());
      }
    });
    Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
    String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    if (p.waitFor() != 0) {
      throw new IllegalStateException("probe of " + target + " failed:\n" + out);
    }
    String result = out.lines().filter(l -> l.startsWith("PROBE ")).findFirst()
        .orElseThrow(() -> new IllegalStateException("no result from the probe:\n" + out));
    String[] f = result.substring(6).trim().split(" ");
    double[] per = new double[f.length];
    for (int i = 0; i < f.length; i++) {
      per[i] = Double.parseDouble(f[i]);
    }
    return phasesOf(per, files);
  }

  /**
   * A probe's line ({@code fs}, then {@code open, first read, rest} of each file) as the
   * phases of {@link #PHASES}: the first file's own, the later files' medians, and the
   * summed reads of every file (what TestDFSIO times).
   */
  static double[] phasesOf(double[] per, int files) {
    if (files < 1 || per.length != 1 + 3 * files) {
      throw new IllegalArgumentException("a probe of " + files + " files gives "
          + (1 + 3 * files) + " figures, not " + per.length);
    }
    double[] phases = new double[PHASES.length];
    System.arraycopy(per, 0, phases, 0, 4);
    List<Double> opens = new ArrayList<>();
    List<Double> firsts = new ArrayList<>();
    List<Double> rests = new ArrayList<>();
    double io = 0;
    for (int i = 0; i < files; i++) {
      if (i > 0) {
        opens.add(per[1 + 3 * i]);
        firsts.add(per[2 + 3 * i]);
        rests.add(per[3 + 3 * i]);
      }
      io += per[2 + 3 * i] + per[3 + 3 * i];
    }
    phases[4] = median(opens);
    phases[5] = median(firsts);
    phases[6] = median(rests);
    phases[7] = io;
    return phases;
  }

  /** In the probe JVM: args {@code --probe BASE FILES key=value...}. */
  static void probe(String[] args) throws Exception {
    long t0 = System.nanoTime();
    Configuration c = new Configuration();
    for (int i = 3; i < args.length; i++) {
      int eq = args[i].indexOf('=');
      c.set(args[i].substring(0, eq), args[i].substring(eq + 1));
    }
    org.apache.hadoop.fs.Path base = new org.apache.hadoop.fs.Path(args[1]);
    int files = Integer.parseInt(args[2]);
    StringBuilder out = new StringBuilder("PROBE");
    try (FileSystem fs = FileSystem.newInstance(base.toUri(), c)) {
      fs.getFileStatus(base); // a job has used its file system before the first map's clock
      out.append(String.format(Locale.ROOT, " %.2f", (System.nanoTime() - t0) / 1e6));
      byte[] buf = new byte[APP_READ];
      for (int f = 0; f < files; f++) {
        long s = System.nanoTime();
        FSDataInputStream in = fs.open(new org.apache.hadoop.fs.Path(base, "f" + f));
        long opened = System.nanoTime();
        long total = in.read(buf, 0, buf.length);
        long first = System.nanoTime();
        for (int n; (n = in.read(buf, 0, buf.length)) > 0; ) {
          total += n;
        }
        in.close();
        long end = System.nanoTime();
        if (total != fs.getFileStatus(new org.apache.hadoop.fs.Path(base, "f" + f)).getLen()) {
          throw new IllegalStateException("read " + total + " bytes of f" + f);
        }
        out.append(String.format(Locale.ROOT, " %.2f %.2f %.2f", (opened - s) / 1e6,
            (first - opened) / 1e6, (end - first) / 1e6));
      }
    }
    System.out.println(out);
  }

  private static String base(String target, Path work) {
    return target.equals("file") ? "file://" + work.resolve("file/cold") : "blob://cold/cold";
  }

  private static Configuration conf(String target, TyrServerProcess tyr, Path work) {
    Configuration c = new Configuration();
    if (target.equals("file")) {
      return c;
    }
    if (!target.startsWith("tyr-server")) {
      throw new IllegalArgumentException("targets: tyr-server, tyr-server-tcp, file; not "
          + target);
    }
    c.set("fs.blob.impl", "io.blobfs.hadoop.BlobFileSystem");
    c.set("fs.blob.store.cold.type", "tyr");
    c.set("fs.blob.store.cold.address", tyr.address());
    c.set("fs.blob.store.cold.local-reads", Boolean.toString(!target.endsWith("-tcp")));
    return c;
  }

  private static void write(Configuration c, String base, int files, long size)
      throws IOException {
    byte[] buf = new byte[1 << 20];
    new Random(1).nextBytes(buf);
    try (FileSystem fs = FileSystem.newInstance(URI.create(base), c)) {
      for (int f = 0; f < files; f++) {
        org.apache.hadoop.fs.Path p = new org.apache.hadoop.fs.Path(base, "f" + f);
        if (fs.exists(p) && fs.getFileStatus(p).getLen() == size) {
          continue; // written by an earlier run on the same server
        }
        try (FSDataOutputStream out = fs.create(p, true)) {
          for (long done = 0; done < size; done += buf.length) {
            out.write(buf, 0, (int) Math.min(buf.length, size - done));
          }
        }
      }
    }
  }

  private static String line(double[] p, int files, long size) {
    StringBuilder b = new StringBuilder();
    for (int i = 0; i < PHASES.length; i++) {
      b.append(String.format(Locale.ROOT, "%s=%.1f ", PHASES[i], p[i]));
    }
    return b.append(String.format(Locale.ROOT, "-> %.0f MB/s", rate(p[7], files, size)))
        .toString();
  }

  /** TestDFSIO's figure: MB (its MB is 2^20 bytes) over the summed I/O time. */
  private static double rate(double ioMs, int files, long size) {
    return files * size / (double) (1 << 20) / (ioMs / 1e3);
  }

  private static double median(List<Double> xs) {
    if (xs.isEmpty()) {
      return Double.NaN;
    }
    List<Double> s = xs.stream().sorted().toList();
    int n = s.size();
    return n % 2 == 1 ? s.get(n / 2) : (s.get(n / 2 - 1) + s.get(n / 2)) / 2;
  }

  private static double medianOf(List<double[]> runs, int phase) {
    return median(runs.stream().map(p -> p[phase]).toList());
  }

  private static String report(Map<String, List<double[]>> runs, List<String> targets,
      int files, long size, int rounds) {
    StringBuilder md = new StringBuilder("# A cold JVM's reads (TestDFSIO's read pattern)\n\n");
    md.append(String.format(Locale.ROOT, "%d files of %d MiB, 1,000,000-byte reads, a fresh JVM "
        + "per probe, %d interleaved rounds; load average at the end %.1f. Medians in ms "
        + "(\"later\": median over files 2-%d of each probe, then over probes). \"I/O\" is what "
        + "TestDFSIO times (first read + rest + close, every file).%n%n", files, size >> 20,
        rounds, java.lang.management.ManagementFactory.getOperatingSystemMXBean()
            .getSystemLoadAverage(), files));
    md.append("| target |");
    for (String ph : PHASES) {
      md.append(' ').append(ph).append(" |");
    }
    md.append(" MB/s (TestDFSIO figure) | I/O spread |\n|---|");
    md.append("---:|".repeat(PHASES.length + 2)).append('\n');
    for (String t : targets) {
      List<double[]> r = runs.get(t);
      md.append("| ").append(t).append(" |");
      for (int i = 0; i < PHASES.length; i++) {
        md.append(String.format(Locale.ROOT, " %.1f |", medianOf(r, i)));
      }
      double lo = r.stream().mapToDouble(p -> p[7]).min().orElse(0);
      double hi = r.stream().mapToDouble(p -> p[7]).max().orElse(0);
      md.append(String.format(Locale.ROOT, " %.0f | %.0f-%.0f |%n",
          rate(medianOf(r, 7), files, size), lo, hi));
    }
    if (runs.containsKey("file")) {
      md.append("\nRatios of rates to file:// (TestDFSIO's figure, medians of I/O time): ");
      double file = medianOf(runs.get("file"), 7);
      for (String t : targets) {
        if (!t.equals("file")) {
          md.append(String.format(Locale.ROOT, "%s **%.2fx** ", t, file / medianOf(runs.get(t), 7)));
        }
      }
      md.append("(issue 11's target for Týr local reads: 0.8x).\n");
    }
    return md.toString();
  }

  private static CategoryChart chart(Map<String, List<double[]>> runs, List<String> targets) {
    CategoryChart chart = new CategoryChartBuilder().width(900).height(500)
        .title("A cold JVM's read phases (median ms)").xAxisTitle("phase").yAxisTitle("ms")
        .build();
    List<String> phases = List.of(PHASES);
    for (String t : targets) {
      List<Double> ys = new ArrayList<>();
      for (int i = 0; i < PHASES.length; i++) {
        ys.add(medianOf(runs.get(t), i));
      }
      chart.addSeries(t, phases, ys);
    }
    return chart;
  }
}
