import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FSDataInputStream;
import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.fs.FileSystem;

/**
 * A TestDFSIO read map's own work without the job around it, in a fresh JVM as each job
 * is: FileSystem.get, then for each file open, read to the end with 1,000,000-byte reads,
 * close. Per file it prints the wall ms of open, read and close, the process's CPU ms
 * and minor page faults over the read (the faults count copies into fresh memory, which
 * wall time on a loaded machine hides). Run on the bench's classpath:
 *   java -cp "$(cat benchmarks/jmh/target/bench-classpath.txt)" scripts/perf/SeqReadProbe.java \
 *     read blob://tyrsrv/probe 4 [-Dkey=value ...]      (write: the same, 256 MiB files)
 */
public class SeqReadProbe {
  public static void main(String[] args) throws Exception {
    long jvmStart = ManagementFactory.getRuntimeMXBean().getStartTime();
    String mode = args[0];
    org.apache.hadoop.fs.Path dir = new org.apache.hadoop.fs.Path(args[1]);
    int files = Integer.parseInt(args[2]);
    Configuration conf = new Configuration();
    for (int i = 3; i < args.length; i++) {
      String[] kv = args[i].substring(2).split("=", 2);
      conf.set(kv[0], kv[1]);
    }
    long t0 = System.nanoTime();
    FileSystem fs = FileSystem.get(URI.create(args[1]), conf);
    fs.exists(dir); // the first call: connects
    System.out.printf("init+first call %d ms (JVM start to here %d ms)%n",
        (System.nanoTime() - t0) / 1_000_000, System.currentTimeMillis() - jvmStart);
    byte[] buf = new byte[1_000_000];
    if (mode.equals("write")) {
      new java.util.Random(1).nextBytes(buf);
      for (int f = 0; f < files; f++) {
        try (FSDataOutputStream out = fs.create(new org.apache.hadoop.fs.Path(dir, "f" + f))) {
          for (long n = 0; n < 256L << 20; n += buf.length) {
            out.write(buf, 0, (int) Math.min(buf.length, (256L << 20) - n));
          }
        }
      }
      return;
    }
    long total = 0;
    for (int f = 0; f < files; f++) {
      long a = System.nanoTime();
      FSDataInputStream in = fs.open(new org.apache.hadoop.fs.Path(dir, "f" + f));
      long b = System.nanoTime();
      long cpu0 = cpu();
      long flt0 = minorFaults();
      long n = 0;
      for (int k; (k = in.read(buf, 0, buf.length)) > 0; ) {
        n += k;
      }
      long c = System.nanoTime();
      long cpu1 = cpu();
      long flt1 = minorFaults();
      in.close();
      long d = System.nanoTime();
      total += n;
      System.out.printf("file %d: open %.1f ms, read %.1f ms (cpu %d ms, minor faults %d), "
          + "close %.1f ms, %d bytes%n", f, (b - a) / 1e6, (c - b) / 1e6,
          (cpu1 - cpu0) / 1_000_000, flt1 - flt0, (d - c) / 1e6, n);
    }
    System.out.printf("total %d bytes%n", total);
    threadCpu();
  }

  /** CPU ms of each of this process's threads by name (numbers dropped), from /proc. */
  private static void threadCpu() throws IOException {
    java.util.Map<String, Long> byName = new java.util.TreeMap<>();
    try (var tasks = Files.list(Path.of("/proc/self/task"))) {
      for (Path t : (Iterable<Path>) tasks::iterator) {
        String s = Files.readString(t.resolve("stat"));
        String name = s.substring(s.indexOf('(') + 1, s.lastIndexOf(')')).replaceAll("[0-9]+", "#");
        String[] f = s.substring(s.lastIndexOf(')') + 2).split(" ");
        long ticks = Long.parseLong(f[11]) + Long.parseLong(f[12]); // utime + stime
        byName.merge(name, ticks * 10, Long::sum); // 100 ticks a second
      }
    }
    System.out.println("thread CPU ms: " + byName);
  }

  private static long cpu() {
    return ((com.sun.management.OperatingSystemMXBean)
        ManagementFactory.getOperatingSystemMXBean()).getProcessCpuTime();
  }

  private static long minorFaults() throws IOException {
    String s = Files.readString(Path.of("/proc/self/stat"));
    String[] f = s.substring(s.lastIndexOf(')') + 2).split(" ");
    return Long.parseLong(f[7]); // minflt, the 10th field of stat
  }
}
