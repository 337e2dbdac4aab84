package io.blobfs.bench.trace;

import java.util.Collection;
import java.util.Map;
import org.apache.hadoop.fs.Path;

/** A file system that counts its callers' storage calls ({@link Tracer}). */
public interface Traced {
  /** Marks these directories as the job's input: listing them is Table 2's first opendir. */
  void setInputDirectories(Collection<Path> dirs);

  /** The counts so far, by {@link Call#counter()} name. */
  Map<String, Long> counts();
}
