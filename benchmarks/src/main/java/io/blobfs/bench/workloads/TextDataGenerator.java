package io.blobfs.bench.workloads;

import java.io.BufferedWriter;
import java.io.IOException;
import java.io.OutputStreamWriter;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Locale;
import java.util.NoSuchElementException;
import java.util.Objects;
import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;

/**
 * Deterministic text for the Grep and Sort workloads: lines of space-separated lowercase
 * words, split over a fixed number of files. The same {@link Spec} yields the same bytes
 * on every JVM and every run (the generator is SplitMix64, fully specified here, not
 * {@code java.util.Random}'s or {@code SplittableRandom}'s unspecified evolution), so a
 * test can recompute the input, and thus the expected output, without reading it back.
 *
 * <p>Word frequencies are skewed (a few words are common, most are rare), like SparkBench's
 * text generator; {@link #VOCABULARY} starts with a handful of fixed words so that a grep
 * pattern such as {@code "ceph"} matches a predictable share of lines (a few percent).
 */
public final class TextDataGenerator {

  /** Input file names: {@code part-00000.txt}, {@code part-00001.txt}, ... */
  public static final String FILE_PREFIX = "part-";
  public static final String FILE_SUFFIX = ".txt";

  private static final String[] FIXED_WORDS = {
      "the", "of", "and", "data", "block", "store", "spark", "hadoop", "blob", "key",
      "object", "stripe", "read", "write", "rados", "tyr", "ceph", "grep", "sort", "namenode"
  };
  private static final int VOCABULARY_SIZE = 4096;
  /** The vocabulary: {@link #FIXED_WORDS} then pseudo-random words of 2 to 10 letters. */
  public static final List<String> VOCABULARY = buildVocabulary();

  private static final int MIN_WORDS_PER_LINE = 3;
  private static final int MAX_WORDS_PER_LINE = 16;

  /**
   * What to generate: about {@code totalBytes} of text (each file stops at the first line
   * that reaches its share), in {@code files} files, from {@code seed}.
   */
  public record Spec(long totalBytes, int files, long seed) {
    public Spec {
      if (totalBytes < 1) {
        throw new IllegalArgumentException("totalBytes must be positive: " + totalBytes);
      }
      if (files < 1 || files > 100_000) {
        throw new IllegalArgumentException("files must be in [1, 100000]: " + files);
      }
    }

    /** Target size of file {@code index}: the total split evenly, remainder to the first. */
    public long bytesOfFile(int index) {
      Objects.checkIndex(index, files);
      long share = totalBytes / files;
      return index == 0 ? share + totalBytes % files : share;
    }

    public String fileName(int index) {
      Objects.checkIndex(index, files);
      return String.format(Locale.ROOT, "%s%05d%s", FILE_PREFIX, index, FILE_SUFFIX);
    }
  }

  /** What was written. */
  public record Summary(int files, long lines, long bytes) {}

  private TextDataGenerator() {}

  /** The lines of file {@code index}, lazily, without line terminators. */
  public static Iterator<String> lines(Spec spec, int index) {
    long target = spec.bytesOfFile(index);
    SplitMix64 rnd = new SplitMix64(spec.seed() * 0x9E3779B97F4A7C15L + index + 1);
    return new Iterator<>() {
      private long written;

      @Override
      public boolean hasNext() {
        return written < target;
      }

      @Override
      public String next() {
        if (!hasNext()) {
          throw new NoSuchElementException();
        }
        String line = line(rnd);
        written += line.length() + 1L; // ASCII only, plus '\n'
        return line;
      }
    };
  }

  /** All lines of all files, in file order: the whole input held in memory (for tests). */
  public static List<String> allLines(Spec spec) {
    List<String> out = new ArrayList<>();
    for (int i = 0; i < spec.files(); i++) {
      lines(spec, i).forEachRemaining(out::add);
    }
    return out;
  }

  /**
   * Writes the spec's files into {@code dir} (created as needed) through the Hadoop
   * FileSystem API, one {@code create} per file, each line ending in {@code '\n'}.
   * Fails if a file already exists.
   */
  public static Summary generate(FileSystem fs, Path dir, Spec spec) throws IOException {
    return writeFiles(fs, dir, spec, i -> lines(spec, i));
  }

  /**
   * Writes file {@code i} of {@code spec} into {@code dir} with the lines {@code source}
   * gives for it: what every data generator here shares. Fails if a file already exists.
   */
  public static Summary writeFiles(FileSystem fs, Path dir, Spec spec,
      java.util.function.IntFunction<Iterator<String>> source) throws IOException {
    long lines = 0;
    long bytes = 0;
    for (int i = 0; i < spec.files(); i++) {
      Path file = new Path(dir, spec.fileName(i));
      try (FSDataOutputStream out = fs.create(file, false);
          Writer w = new BufferedWriter(
              new OutputStreamWriter(out, StandardCharsets.UTF_8), 1 << 16)) {
        for (Iterator<String> it = source.apply(i); it.hasNext(); ) {
          String line = it.next();
          w.write(line);
          w.write('\n');
          lines++;
          bytes += line.length() + 1L;
        }
      }
    }
    return new Summary(spec.files(), lines, bytes);
  }

  private static String line(SplitMix64 rnd) {
    int words = MIN_WORDS_PER_LINE + rnd.nextInt(MAX_WORDS_PER_LINE - MIN_WORDS_PER_LINE + 1);
    StringBuilder sb = new StringBuilder(words * 7);
    for (int w = 0; w < words; w++) {
      if (w > 0) {
        sb.append(' ');
      }
      // u^3 skews towards the start of the vocabulary: a few frequent words, a long tail.
      double u = rnd.nextDouble();
      int idx = (int) (u * u * u * VOCABULARY_SIZE);
      sb.append(VOCABULARY.get(Math.min(idx, VOCABULARY_SIZE - 1)));
    }
    return sb.toString();
  }

  private static List<String> buildVocabulary() {
    List<String> words = new ArrayList<>(VOCABULARY_SIZE);
    java.util.Set<String> seen = new java.util.HashSet<>();
    for (String w : FIXED_WORDS) {
      words.add(w);
      seen.add(w);
    }
    SplitMix64 rnd = new SplitMix64(0x5EEDL);
    while (words.size() < VOCABULARY_SIZE) {
      int len = 2 + rnd.nextInt(9);
      StringBuilder sb = new StringBuilder(len);
      for (int i = 0; i < len; i++) {
        sb.append((char) ('a' + rnd.nextInt(26)));
      }
      String w = sb.toString();
      if (seen.add(w)) {
        words.add(w);
      }
    }
    return List.copyOf(words);
  }

  /** SplitMix64 (Steele, Lea, Flood 2014): tiny, fast, and the same everywhere. */
  public static final class SplitMix64 {
    private long state;

    public SplitMix64(long seed) {
      this.state = seed;
    }

    public long nextLong() {
      long z = (state += 0x9E3779B97F4A7C15L);
      z = (z ^ (z >>> 30)) * 0xBF58476D1CE4E5B9L;
      z = (z ^ (z >>> 27)) * 0x94D049BB133111EBL;
      return z ^ (z >>> 31);
    }

    /** Uniform in [0, bound), bound &gt; 0 (bias negligible for the small bounds used). */
    public int nextInt(int bound) {
      return (int) Long.remainderUnsigned(nextLong(), bound);
    }

    /** Uniform in [0, 1). */
    public double nextDouble() {
      return (nextLong() >>> 11) * 0x1.0p-53;
    }
  }
}
