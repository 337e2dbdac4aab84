package io.blobfs.bench.workloads;

import io.blobfs.bench.workloads.TextDataGenerator.SplitMix64;
import io.blobfs.bench.workloads.TextDataGenerator.Spec;
import io.blobfs.bench.workloads.TextDataGenerator.Summary;
import java.io.IOException;
import java.util.ArrayDeque;
import java.util.Arrays;
import java.util.Iterator;
import java.util.NoSuchElementException;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;

/**
 * A deterministic graph for {@link ConnectedComponents}: an edge list ({@code SRC DST} per
 * line) with a planted partition. Vertices {@code 0..V-1} are cut into consecutive
 * components of 2 to {@code 2 * MEAN_COMPONENT - 2} vertices; each vertex but the first of
 * its component links to a random earlier vertex of it (a random spanning tree), and half
 * of the vertices add one more edge inside their component. So the components of the graph
 * are exactly the planted ones, and a test knows their number without running Spark.
 * Vertex {@code v} is written as id {@code (v * A) mod (2^31 - 1)}, a bijection, so the
 * smallest id of a component (GraphX's label) is not simply its first vertex.
 *
 * <p>File {@code i} holds the edges of the vertices {@code v = i (mod files)}. The number
 * of vertices is derived from the spec's size (about {@value #BYTES_PER_VERTEX} bytes of
 * edges per vertex).
 */
public final class GraphDataGenerator {
  public static final int MEAN_COMPONENT = 16;
  static final int BYTES_PER_VERTEX = 32;
  private static final long PRIME = (1L << 31) - 1;
  private static final long MULTIPLIER = 48271L;

  private final Spec spec;
  private final int vertices;
  /** Component k holds vertices [starts[k], starts[k + 1]). */
  private final int[] starts;

  public GraphDataGenerator(Spec spec) {
    this.spec = spec;
    long v = Math.max(2, spec.totalBytes() / BYTES_PER_VERTEX);
    if (v > Integer.MAX_VALUE / 2) {
      throw new IllegalArgumentException("graph too large: " + spec.totalBytes() + " bytes");
    }
    this.vertices = (int) v;
    SplitMix64 rnd = new SplitMix64(spec.seed() * 0x9E3779B97F4A7C15L ^ 0x6A09E667L);
    int[] s = new int[vertices / 2 + 2];
    int k = 0;
    int next = 0;
    while (next < vertices) {
      s[k++] = next;
      int size = 2 + rnd.nextInt(2 * MEAN_COMPONENT - 3);
      next = vertices - next - size < 2 ? vertices : next + size; // no component of 1
    }
    s[k] = vertices;
    this.starts = Arrays.copyOf(s, k + 1);
  }

  public int vertices() {
    return vertices;
  }

  /** The number of planted components: the number of lines of distinct labels expected. */
  public int components() {
    return starts.length - 1;
  }

  /** The id vertex {@code v} is written as. */
  public static long id(int v) {
    return (v * MULTIPLIER) % PRIME;
  }

  /** Writes the spec's files into {@code dir}; fails if one exists. */
  public Summary generate(FileSystem fs, Path dir) throws IOException {
    return TextDataGenerator.writeFiles(fs, dir, spec, this::lines);
  }

  /** The edges of file {@code index}, lazily. */
  public Iterator<String> lines(int index) {
    return new Iterator<>() {
      private final ArrayDeque<String> ready = new ArrayDeque<>(2);
      private int v = index;

      @Override
      public boolean hasNext() {
        while (ready.isEmpty() && v < vertices) {
          edgesOf(v, ready);
          v += spec.files();
        }
        return !ready.isEmpty();
      }

      @Override
      public String next() {
        if (!hasNext()) {
          throw new NoSuchElementException();
        }
        return ready.poll();
      }
    };
  }

  /** The tree edge of {@code vertex} (none for the first of a component) and its extra one. */
  private void edgesOf(int vertex, ArrayDeque<String> out) {
    int c = component(vertex);
    int first = starts[c];
    int size = starts[c + 1] - first;
    SplitMix64 rnd = new SplitMix64(spec.seed() * 0xD6E8FEB86659FD93L + vertex);
    if (vertex > first) {
      out.add(id(vertex) + " " + id(first + rnd.nextInt(vertex - first)));
    }
    if (rnd.nextInt(2) == 0) {
      out.add(id(vertex) + " " + id(first + rnd.nextInt(size)));
    }
  }

  private int component(int vertex) {
    int k = Arrays.binarySearch(starts, vertex);
    return k >= 0 ? k : -k - 2;
  }
}
