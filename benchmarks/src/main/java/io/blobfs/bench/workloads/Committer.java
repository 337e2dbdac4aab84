package io.blobfs.bench.workloads;

import java.util.Locale;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.Path;

/**
 * Which output committer a workload's job uses, chosen the way a user does: through
 * Hadoop's {@code PathOutputCommitterFactory} keys. Spark's RDD writes through the new
 * Hadoop API ({@code saveAsNewAPIHadoopFile}) ask {@code FileOutputFormat.getOutputCommitter},
 * which in Hadoop 3.4 consults the factory; {@code saveAsTextFile} (old API) would not.
 */
public enum Committer {
  /** Hadoop's classic {@code FileOutputCommitter} (rename of task and job attempt dirs). */
  CLASSIC("org.apache.hadoop.mapreduce.lib.output.FileOutputCommitterFactory"),
  /** Hadoop's manifest committer: task manifests, then parallel file renames at job commit. */
  MANIFEST("org.apache.hadoop.mapreduce.lib.output.committer.manifest.ManifestCommitterFactory");

  /** Overrides every scheme's factory when set; cleared so the scheme key applies. */
  public static final String FACTORY_KEY = "mapreduce.outputcommitter.factory.class";
  /** {@code mapreduce.outputcommitter.factory.scheme.SCHEME}. */
  public static final String FACTORY_SCHEME_KEY_PREFIX = "mapreduce.outputcommitter.factory.scheme.";

  private final String factoryClass;

  Committer(String factoryClass) {
    this.factoryClass = factoryClass;
  }

  public String factoryClass() {
    return factoryClass;
  }

  /** The lowercase name used on command lines: {@code classic} or {@code manifest}. */
  public String id() {
    return name().toLowerCase(Locale.ROOT);
  }

  /** Parses {@code classic} or {@code manifest} (any case); anything else is an error. */
  public static Committer parse(String s) {
    for (Committer c : values()) {
      if (c.id().equalsIgnoreCase(s.trim())) {
        return c;
      }
    }
    throw new IllegalArgumentException("unknown committer '" + s + "': expected classic or manifest");
  }

  /**
   * Selects this committer in {@code conf} for jobs writing to {@code output}, by setting
   * {@code mapreduce.outputcommitter.factory.scheme.<output's scheme>}.
   */
  public void configure(Configuration conf, Path output) {
    String scheme = output.toUri().getScheme();
    if (scheme == null) {
      throw new IllegalArgumentException("output path must be fully qualified: " + output);
    }
    conf.unset(FACTORY_KEY);
    conf.set(FACTORY_SCHEME_KEY_PREFIX + scheme, factoryClass);
  }
}
