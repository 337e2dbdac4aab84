package io.blobfs.hadoop;

import java.util.List;
import java.util.Locale;
import java.util.Optional;
import org.apache.hadoop.fs.Options.OpenFileOptions;

/**
 * How an input stream fetches bytes, from the standard {@code fs.option.openfile.read.policy}
 * values. Sequential reads fetch a large buffer per store call; random reads fetch only
 * what is asked (at least a small minimum); adaptive starts sequential and turns random at
 * the first backward or far forward seek, as S3A's "normal" policy does.
 */
enum ReadPolicy {
  SEQUENTIAL, RANDOM, ADAPTIVE;

  static final List<String> NAMES = List.of("adaptive", "sequential", "random",
      "whole-file", "vector", "default", "columnar", "parquet", "orc", "hbase", "avro", "csv",
      "json");

  /**
   * Parses a policy list: the first name this stream knows wins, unknown names are
   * skipped (the option is a hint), and an empty result means none was known.
   */
  static Optional<ReadPolicy> parse(String list) {
    for (String raw : list.split(",")) {
      String name = raw.trim().toLowerCase(Locale.ROOT);
      switch (name) {
        case OpenFileOptions.FS_OPTION_OPENFILE_READ_POLICY_SEQUENTIAL,
            OpenFileOptions.FS_OPTION_OPENFILE_READ_POLICY_WHOLE_FILE,
            OpenFileOptions.FS_OPTION_OPENFILE_READ_POLICY_AVRO,
            OpenFileOptions.FS_OPTION_OPENFILE_READ_POLICY_CSV,
            OpenFileOptions.FS_OPTION_OPENFILE_READ_POLICY_JSON:
          return Optional.of(SEQUENTIAL);
        case OpenFileOptions.FS_OPTION_OPENFILE_READ_POLICY_RANDOM,
            OpenFileOptions.FS_OPTION_OPENFILE_READ_POLICY_VECTOR,
            OpenFileOptions.FS_OPTION_OPENFILE_READ_POLICY_COLUMNAR,
            OpenFileOptions.FS_OPTION_OPENFILE_READ_POLICY_PARQUET,
            OpenFileOptions.FS_OPTION_OPENFILE_READ_POLICY_ORC,
            OpenFileOptions.FS_OPTION_OPENFILE_READ_POLICY_HBASE:
          return Optional.of(RANDOM);
        case OpenFileOptions.FS_OPTION_OPENFILE_READ_POLICY_ADAPTIVE,
            OpenFileOptions.FS_OPTION_OPENFILE_READ_POLICY_DEFAULT:
          return Optional.of(ADAPTIVE);
        default:
          break;
      }
    }
    return Optional.empty();
  }
}
