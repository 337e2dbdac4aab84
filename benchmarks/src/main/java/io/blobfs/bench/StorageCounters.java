package io.blobfs.bench;

import io.blobfs.bench.trace.Traced;
import java.util.Collections;
import java.util.Iterator;
import java.util.Map;
import java.util.TreeMap;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.StorageStatistics;
import org.apache.hadoop.fs.StorageStatistics.LongStatistic;

/**
 * A snapshot of the storage calls a file system has counted: every long statistic of
 * {@link FileSystem#getStorageStatistics()} (read generically: BlobFS's {@code op_*} and
 * {@code store_*} counters, or whatever another file system reports), plus Hadoop's
 * per-scheme {@link FileSystem.Statistics} (bytes and read/write operations) under the
 * names {@code fs.bytesRead}, {@code fs.bytesWritten}, {@code fs.readOps},
 * {@code fs.largeReadOps} and {@code fs.writeOps} (summed over every file system class of the
 * scheme: for file:// the raw local file system counts the bytes, not LocalFileSystem), plus,
 * when {@code fs} is {@link Traced}, its call counts ({@code trace.*}).
 * Snapshots subtract, so a workload's calls are {@code after.minus(before)}.
 *
 * <p>In Spark local mode the driver and the tasks share one cached file system instance
 * per store, so a snapshot taken on the driver sees the tasks' calls too.
 */
public final class StorageCounters {
  /** Prefix of the per-scheme {@link FileSystem.Statistics} values in a snapshot. */
  public static final String SCHEME_PREFIX = "fs.";

  private final Map<String, Long> values;

  private StorageCounters(Map<String, Long> values) {
    this.values = Collections.unmodifiableMap(values);
  }

  /** The counters of {@code fs} now. */
  @SuppressWarnings("deprecation") // FileSystem.getAllStatistics(): the shared per-scheme totals
  public static StorageCounters of(FileSystem fs) {
    Map<String, Long> v = new TreeMap<>();
    StorageStatistics stats = fs.getStorageStatistics();
    if (stats != null) {
      for (Iterator<LongStatistic> it = stats.getLongStatistics(); it.hasNext(); ) {
        LongStatistic s = it.next();
        v.merge(s.getName(), s.getValue(), Long::sum);
      }
    }
    String scheme = fs.getUri().getScheme();
    if (scheme != null) {
      long[] sums = new long[5];
      for (FileSystem.Statistics st : FileSystem.getAllStatistics()) {
        if (scheme.equals(st.getScheme())) {
          sums[0] += st.getBytesRead();
          sums[1] += st.getBytesWritten();
          sums[2] += st.getReadOps();
          sums[3] += st.getLargeReadOps();
          sums[4] += st.getWriteOps();
        }
      }
      v.put(SCHEME_PREFIX + "bytesRead", sums[0]);
      v.put(SCHEME_PREFIX + "bytesWritten", sums[1]);
      v.put(SCHEME_PREFIX + "readOps", sums[2]);
      v.put(SCHEME_PREFIX + "largeReadOps", sums[3]);
      v.put(SCHEME_PREFIX + "writeOps", sums[4]);
    }
    if (fs instanceof Traced traced) {
      v.putAll(traced.counts());
    }
    return new StorageCounters(v);
  }

  /** Builds a snapshot from explicit values (tests, parsing saved counters). */
  public static StorageCounters of(Map<String, Long> values) {
    return new StorageCounters(new TreeMap<>(values));
  }

  /** This snapshot minus an earlier one: counters that appeared since count from 0. */
  public StorageCounters minus(StorageCounters earlier) {
    Map<String, Long> d = new TreeMap<>();
    for (Map.Entry<String, Long> e : values.entrySet()) {
      d.put(e.getKey(), e.getValue() - earlier.values.getOrDefault(e.getKey(), 0L));
    }
    return new StorageCounters(d);
  }

  /** The value of a counter, or -1 if this file system does not report it. */
  public long get(String name) {
    return values.getOrDefault(name, -1L);
  }

  public boolean has(String name) {
    return values.containsKey(name);
  }

  /** The first of {@code names} that is reported, or -1 if none is. */
  public long first(String... names) {
    for (String n : names) {
      if (values.containsKey(n)) {
        return values.get(n);
      }
    }
    return -1;
  }

  /** Sum of those of {@code names} that are reported, or -1 if none is. */
  public long sum(String... names) {
    long total = -1;
    for (String n : names) {
      if (values.containsKey(n)) {
        total = Math.max(total, 0) + values.get(n);
      }
    }
    return total;
  }

  /** All counters, by name. */
  public Map<String, Long> asMap() {
    return values;
  }

  /** Counters that are not zero, by name. */
  public Map<String, Long> nonZero() {
    Map<String, Long> m = new TreeMap<>();
    values.forEach((k, val) -> {
      if (val != 0) {
        m.put(k, val);
      }
    });
    return m;
  }

  @Override
  public String toString() {
    return values.toString();
  }
}
