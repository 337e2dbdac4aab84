import java.net.URI;
import java.util.Arrays;
import java.util.Random;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FSDataInputStream;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;

/**
 * The store's side of a random 8 KiB read without the mount: positioned reads of one file
 * through blob:// (one FileReader ranged read each, as PublishedReader makes per random
 * kernel request), one at a time like fio psync. Run with the mount's classpath:
 *   java -cp "$(cat blobfs-fuse/target/classpath.txt):blobfs-fuse/target/classes" \
 *     scripts/perf/RandomReadProbe.java core-site.xml blob://tyr/rand 8192 2000
 * Prints the latency median and p90 (µs) and the rate (MB/s).
 */
public class RandomReadProbe {
  public static void main(String[] args) throws Exception {
    Configuration conf = new Configuration();
    conf.addResource(new Path(args[0]));
    Path file = new Path(args[1]);
    int bs = Integer.parseInt(args[2]);
    int n = Integer.parseInt(args[3]);
    FileSystem fs = FileSystem.get(URI.create(args[1]), conf);
    long len = fs.getFileStatus(file).getLen();
    long blocks = len / bs;
    byte[] buf = new byte[bs];
    long[] took = new long[n];
    Random rnd = new Random(1);
    long t0 = System.nanoTime();
    try (FSDataInputStream in = fs.open(file)) {
      for (int i = 0; i < n; i++) {
        long pos = (long) (rnd.nextDouble() * blocks) * bs;
        long s = System.nanoTime();
        in.readFully(pos, buf);
        took[i] = System.nanoTime() - s;
      }
    }
    double secs = (System.nanoTime() - t0) / 1e9;
    Arrays.sort(took);
    System.out.printf("probe %s bs=%d n=%d median=%dus p90=%dus rate=%.1fMB/s%n", file, bs, n,
        took[n / 2] / 1000, took[n * 9 / 10] / 1000, (double) n * bs / secs / 1e6);
    fs.close();
  }
}
