package io.blobfs.bench.trace;

import java.io.IOException;
import java.util.Collection;
import java.util.EnumMap;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.LongAdder;
import java.util.function.Function;
import org.apache.hadoop.fs.FSDataInputStream;
import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.fs.Path;

/**
 * The counting behind {@link TracingFileSystem} and {@link TracingLocalFileSystem}: one count
 * per call a caller makes, with the call's path classified for Table 2.
 *
 * <p>Only outermost calls count: a call the file system makes on itself while serving one
 * (LocalFileSystem's create makes the parent directories, exists() is a getFileStatus)
 * runs with the thread's depth above zero and is not counted again.
 *
 * <p>Directory operations: every {@code mkdirs} is a mkdir; a {@code delete} is an rmdir when
 * its path is known as a directory, that is an argument of {@code mkdirs}, an ancestor of
 * one or of a created file, a listed path or a registered input directory (the tracer does not ask the
 * file system, which would add a call of its own); a listing is an opendir of the input when
 * its path is a registered input directory, else of another directory.
 */
final class Tracer {
  interface IOCall<T> {
    T run() throws IOException;
  }

  private final Map<Call, LongAdder> counts = new EnumMap<>(Call.class);
  private final LongAdder readNanos = new LongAdder();
  private final LongAdder writeNanos = new LongAdder();
  private final Set<String> knownDirectories = ConcurrentHashMap.newKeySet();
  private final ThreadLocal<int[]> depth = ThreadLocal.withInitial(() -> new int[1]);
  private final Function<Path, Path> qualify;
  private volatile Set<String> inputDirectories = Set.of();

  Tracer(Function<Path, Path> qualify) {
    this.qualify = qualify;
    for (Call c : Call.values()) {
      counts.put(c, new LongAdder());
    }
  }

  void setInputDirectories(Collection<Path> dirs) {
    Set<String> s = ConcurrentHashMap.newKeySet();
    for (Path p : dirs) {
      s.add(key(p));
    }
    inputDirectories = s;
    knownDirectories.addAll(s);
  }

  Map<String, Long> counts() {
    Map<String, Long> m = new TreeMap<>();
    counts.forEach((c, n) -> m.put(c.counter(), n.sum()));
    m.put(Call.READ_NANOS, readNanos.sum());
    m.put(Call.WRITE_NANOS, writeNanos.sum());
    return m;
  }

  /**
   * {@value #LOG_PROPERTY}{@code =true}: every outermost call is also written to stderr as
   * it ends, with its start (epoch ms), thread, duration and path, so that a job's
   * metadata calls can be put on its timeline (where a TestDFSIO job spends the time
   * outside its reads and writes, for instance).
   */
  static final String LOG_PROPERTY = "blobfs.trace.log";

  static final boolean LOG = Boolean.getBoolean(LOG_PROPERTY);

  /** Runs {@code body}, counting {@code call} (and its Table 2 kind) if it is outermost. */
  <T> T call(Call call, Path path, IOCall<T> body) throws IOException {
    int[] d = depth.get();
    boolean outermost = d[0] == 0;
    if (outermost) {
      classify(call, path);
    }
    long startMillis = LOG && outermost ? System.currentTimeMillis() : 0;
    long start = LOG && outermost ? System.nanoTime() : 0;
    d[0]++;
    try {
      return body.run();
    } finally {
      d[0]--;
      if (LOG && outermost) {
        System.err.printf(java.util.Locale.ROOT, "FSTRACE %d %s %s %d us %s%n", startMillis,
            Thread.currentThread().getName(), call, (System.nanoTime() - start) / 1000, path);
      }
    }
  }

  private void classify(Call call, Path path) {
    counts.get(call).increment();
    switch (call) {
      case CREATE -> knowWithAncestors(qualify.apply(path).getParent());
      case MKDIRS -> {
        counts.get(Call.DIR_MKDIR).increment();
        knowWithAncestors(path);
      }
      case DELETE -> {
        if (knownDirectories.contains(key(path))) {
          counts.get(Call.DIR_RMDIR).increment();
        }
      }
      case LIST -> {
        String k = key(path);
        knownDirectories.add(k);
        counts.get(inputDirectories.contains(k) ? Call.DIR_OPEN_INPUT : Call.DIR_OPEN_OTHER)
            .increment();
      }
      default -> { }
    }
  }

  /** {@code dir} and its ancestors are directories: create and mkdirs make them all. */
  private void knowWithAncestors(Path dir) {
    for (Path p = dir == null ? null : qualify.apply(dir); p != null; p = p.getParent()) {
      if (!knownDirectories.add(key(p))) {
        return; // its ancestors are known already
      }
    }
  }

  /** A rename carries a known directory's status to its new name. */
  void renamed(Path src, Path dst) {
    if (knownDirectories.contains(key(src))) {
      knownDirectories.add(key(dst));
    }
  }

  FSDataInputStream wrap(FSDataInputStream in) {
    return new FSDataInputStream(new CountingInputStream(in, counts.get(Call.READ), readNanos));
  }

  FSDataOutputStream wrap(FSDataOutputStream out) throws IOException {
    // no statistics here: the wrapped stream already counts its bytes in its own
    return new FSDataOutputStream(new CountingOutputStream(out, counts.get(Call.WRITE),
        writeNanos), null,
        out.getPos());
  }

  private String key(Path p) {
    String s = qualify.apply(p).toString();
    return s.endsWith("/") && s.length() > 1 ? s.substring(0, s.length() - 1) : s;
  }
}
