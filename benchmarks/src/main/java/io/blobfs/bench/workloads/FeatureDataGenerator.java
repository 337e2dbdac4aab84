package io.blobfs.bench.workloads;

import io.blobfs.bench.workloads.TextDataGenerator.SplitMix64;
import io.blobfs.bench.workloads.TextDataGenerator.Spec;
import io.blobfs.bench.workloads.TextDataGenerator.Summary;
import java.io.IOException;
import java.util.Iterator;
import java.util.NoSuchElementException;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;

/**
 * Deterministic labelled feature rows for {@link DecisionTree}: {@code ID,LABEL,F0,...,F9}
 * per line, features integers in [0, 16), label 0 or 1. The label follows a hidden rule a
 * depth-5 tree can learn ({@code (f0 + f1 > 15) xor (f2 > 11 and f3 < 4)}), then flips
 * with probability {@value #NOISE}, so a good model scores about 1 - NOISE and a broken
 * one about 0.5. Integer features keep the tree's candidate splits the same however Spark
 * samples them. Ids are unique over all files: row {@code r} of file {@code i} has id
 * {@code r * files + i}.
 *
 * <p>Same {@link Spec}, same bytes, on every JVM (SplitMix64, as {@link TextDataGenerator}).
 */
public final class FeatureDataGenerator {
  public static final int FEATURES = 10;
  public static final int FEATURE_VALUES = 16;
  public static final double NOISE = 0.05;

  private FeatureDataGenerator() {}

  /** Writes the spec's files into {@code dir}; fails if one exists. */
  public static Summary generate(FileSystem fs, Path dir, Spec spec) throws IOException {
    return TextDataGenerator.writeFiles(fs, dir, spec, i -> lines(spec, i));
  }

  /** The rows of file {@code index}, lazily; each file stops at the row reaching its share. */
  public static Iterator<String> lines(Spec spec, int index) {
    long target = spec.bytesOfFile(index);
    SplitMix64 rnd = new SplitMix64(spec.seed() * 0xD1B54A32D192ED03L + index + 1);
    return new Iterator<>() {
      private long written;
      private long row;

      @Override
      public boolean hasNext() {
        return written < target;
      }

      @Override
      public String next() {
        if (!hasNext()) {
          throw new NoSuchElementException();
        }
        int[] f = new int[FEATURES];
        for (int k = 0; k < FEATURES; k++) {
          f[k] = rnd.nextInt(FEATURE_VALUES);
        }
        int label = label(f) ^ (rnd.nextDouble() < NOISE ? 1 : 0);
        StringBuilder sb = new StringBuilder(48);
        sb.append(row * spec.files() + index).append(',').append(label);
        for (int v : f) {
          sb.append(',').append(v);
        }
        row++;
        written += sb.length() + 1L;
        return sb.toString();
      }
    };
  }

  /** The hidden rule, before noise. */
  static int label(int[] f) {
    boolean a = f[0] + f[1] > 15;
    boolean b = f[2] > 11 && f[3] < 4;
    return a ^ b ? 1 : 0;
  }
}
