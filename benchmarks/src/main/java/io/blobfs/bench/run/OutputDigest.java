package io.blobfs.bench.run;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.Comparator;
import java.util.HashSet;
import java.util.Set;
import java.util.zip.CRC32;
import org.apache.hadoop.fs.FSDataInputStream;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;

/**
 * What a committed text output holds, in a few numbers that compare across file systems:
 * line and byte counts, an order-independent checksum (the sum of a 64-bit hash of each
 * line: equal for the same multiset of lines however Spark partitioned them), an ordered
 * checksum (the part files in name order, then the lines in order), whether the lines are
 * in ascending order, and the number of distinct second fields (Connected Components' labels).
 *
 * @param committed whether {@code _SUCCESS} is there (without it nothing else is read)
 */
public record OutputDigest(boolean committed, long lines, long bytes, long unorderedSum,
    long orderedHash, boolean ascending, long distinctSecondFields) {

  /** Reads every {@code part-*} file under {@code dir}. */
  public static OutputDigest of(FileSystem fs, Path dir) throws IOException {
    Path success = new Path(dir, "_SUCCESS");
    if (!fs.exists(success) || !fs.getFileStatus(success).isFile()) {
      return new OutputDigest(false, 0, 0, 0, 0, false, 0);
    }
    FileStatus[] parts = fs.listStatus(dir, p -> p.getName().startsWith("part-"));
    Arrays.sort(parts, Comparator.comparing(s -> s.getPath().getName()));
    long lines = 0;
    long bytes = 0;
    long unordered = 0;
    long ordered = 17;
    boolean ascending = true;
    String previous = null;
    Set<String> seconds = new HashSet<>();
    for (FileStatus part : parts) {
      try (FSDataInputStream in = fs.open(part.getPath());
          BufferedReader r = new BufferedReader(new InputStreamReader(in, StandardCharsets.UTF_8))) {
        for (String line = r.readLine(); line != null; line = r.readLine()) {
          long h = hash(line);
          lines++;
          bytes += line.getBytes(StandardCharsets.UTF_8).length + 1L;
          unordered += h;
          ordered = ordered * 1_000_003L + h;
          ascending &= previous == null || previous.compareTo(line) <= 0;
          previous = line;
          int space = line.indexOf(' ');
          if (space >= 0) {
            seconds.add(line.substring(space + 1));
          }
        }
      }
    }
    return new OutputDigest(true, lines, bytes, unordered, ordered, ascending, seconds.size());
  }

  /** CRC32 in the high half, String.hashCode in the low: 64 bits from two unrelated hashes. */
  static long hash(String line) {
    CRC32 crc = new CRC32();
    crc.update(line.getBytes(StandardCharsets.UTF_8));
    return (crc.getValue() << 32) ^ (line.hashCode() & 0xFFFFFFFFL);
  }
}
