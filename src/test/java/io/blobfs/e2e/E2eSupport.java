package io.blobfs.e2e;

import static org.assertj.core.api.Assertions.assertThat;

import io.blobfs.bench.workloads.TextDataGenerator;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.List;
import java.util.stream.Collectors;
import org.apache.hadoop.fs.FSDataInputStream;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.FileSystem;

/** Shared helpers: build-provided paths, reading committed output, expected results. */
final class E2eSupport {
  /** The configuration value users set; the tests name BlobFS the same way. */
  static final String BLOBFS_IMPL = "io.blobfs.hadoop.BlobFileSystem";

  private E2eSupport() {}

  /** A system property the pom sets; fails with a clear message when it is missing. */
  static String requiredProperty(String name) {
    String v = System.getProperty(name);
    assertThat(v)
        .as("system property %s (set by blobfs-e2e/pom.xml through surefire; run the tests "
            + "with Maven: mvn -pl blobfs-e2e -am verify)", name)
        .isNotBlank();
    return v;
  }

  /** A jar the pom points to; it must be a built jar file, not a classes directory. */
  static Path requiredJar(String property) {
    Path p = Paths.get(requiredProperty(property));
    assertThat(p)
        .as("%s must be a packaged jar (run at least the package phase, e.g. mvn verify)",
            property)
        .isRegularFile();
    assertThat(p.getFileName().toString()).as(property).endsWith(".jar");
    return p;
  }

  /** The lines Grep must output for {@code spec}: computed here, without Spark. */
  static List<String> expectedGrep(TextDataGenerator.Spec spec, String pattern) {
    return TextDataGenerator.allLines(spec).stream()
        .filter(l -> l.contains(pattern))
        .sorted()
        .collect(Collectors.toList());
  }

  /** The lines Sort must output for {@code spec}, in order. */
  static List<String> expectedSort(TextDataGenerator.Spec spec) {
    List<String> all = new ArrayList<>(TextDataGenerator.allLines(spec));
    all.sort(Comparator.naturalOrder());
    return all;
  }

  /** Lines of the {@code part-*} files of a committed output dir, in part-file name order. */
  static List<String> readParts(FileSystem fs, org.apache.hadoop.fs.Path dir) throws IOException {
    FileStatus[] st = fs.listStatus(dir, p -> p.getName().startsWith("part-"));
    Arrays.sort(st, Comparator.comparing(s -> s.getPath().getName()));
    assertThat(st).as("part files under %s", dir).isNotEmpty();
    List<String> lines = new ArrayList<>();
    for (FileStatus s : st) {
      assertThat(s.isFile()).as("%s is a file", s.getPath()).isTrue();
      try (FSDataInputStream in = fs.open(s.getPath());
          BufferedReader r = new BufferedReader(new InputStreamReader(in, StandardCharsets.UTF_8))) {
        r.lines().forEach(lines::add);
      }
    }
    return lines;
  }

  /** Lines of the {@code part-*} files of a local copy of an output dir, in name order. */
  static List<String> readLocalParts(Path dir) throws IOException {
    List<Path> parts;
    try (var s = Files.list(dir)) {
      parts = s.filter(p -> p.getFileName().toString().startsWith("part-")).sorted().toList();
    }
    assertThat(parts).as("part files under %s", dir).isNotEmpty();
    List<String> lines = new ArrayList<>();
    for (Path p : parts) {
      lines.addAll(Files.readAllLines(p, StandardCharsets.UTF_8));
    }
    return lines;
  }

  static List<String> sorted(List<String> lines) {
    List<String> copy = new ArrayList<>(lines);
    copy.sort(Comparator.naturalOrder());
    return copy;
  }

  /**
   * Exact equality of two line lists (order included), reported by the first difference
   * rather than by dumping megabytes of lines.
   */
  static void assertSameLines(String what, List<String> expected, List<String> actual) {
    int n = Math.min(expected.size(), actual.size());
    for (int i = 0; i < n; i++) {
      if (!expected.get(i).equals(actual.get(i))) {
        throw new AssertionError(what + ": first difference at line " + i + " of "
            + expected.size() + " expected / " + actual.size() + " actual:\n  expected: "
            + expected.get(i) + "\n  actual:   " + actual.get(i));
      }
    }
    if (expected.size() != actual.size()) {
      throw new AssertionError(what + ": " + expected.size() + " lines expected, "
          + actual.size() + " found; first extra/missing line: "
          + (expected.size() > n ? expected.get(n) : actual.get(n)));
    }
  }
}
