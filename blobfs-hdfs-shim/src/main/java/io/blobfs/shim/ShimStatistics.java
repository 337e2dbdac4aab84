package io.blobfs.shim;

import static org.apache.hadoop.fs.statistics.StoreStatisticNames.*;

import java.util.ArrayList;
import java.util.List;
import org.apache.hadoop.fs.statistics.impl.IOStatisticsBinding;
import org.apache.hadoop.fs.statistics.impl.IOStatisticsStore;

/**
 * The counters of {@code flat://}, exposed through {@code getStorageStatistics()} and
 * {@code getIOStatistics()}: every Hadoop call (Hadoop's standard {@code op_*} names), the
 * paper's directory operations (Table 3: mkdir dropped, opendir and rmdir as scans) with
 * the nanoseconds they took, and what they cost below: scans of the flat root, the names
 * those scans read, and every call made on the underlying file system.
 */
public final class ShimStatistics {
  private ShimStatistics() {}

  public static final String OP_GET_FILE_BLOCK_LOCATIONS = "op_get_file_block_locations";

  /** {@code mkdirs} calls: none writes anything (Table 3: dropped). */
  public static final String MKDIR_DROPPED = "flat_mkdir_dropped";
  /** {@code listStatus} of a directory: a filtered scan of the root. */
  public static final String OPENDIR = "flat_opendir";
  /**
   * {@code delete} that found no file at the path (a directory, or nothing): a filtered
   * scan of the root, then a delete per name.
   */
  public static final String RMDIR = "flat_rmdir";
  /** {@code rename} of a directory: a filtered scan, then a rename per name. */
  public static final String DIR_RENAME = "flat_dir_rename";
  /**
   * A lookup that found no file and scanned for names under the path (getFileStatus of a
   * directory or of nothing, and the same probes inside rename and createNonRecursive).
   */
  public static final String DIR_PROBE = "flat_dir_probe";
  /** Scans of the flat root (listings of the underlying directory). */
  public static final String ROOT_SCANS = "flat_root_scans";
  /** Names those scans read. */
  public static final String SCANNED_NAMES = "flat_scanned_names";
  /** Calls made on the underlying file system, scans included (one per listing). */
  public static final String UNDERLYING_CALLS = "flat_underlying_calls";

  /** The directory operations whose time is kept, as {@code NAME + NANOS}. */
  public static final List<String> TIMED = List.of(MKDIR_DROPPED, OPENDIR, RMDIR, DIR_RENAME,
      DIR_PROBE);
  public static final String NANOS = "_nanos";

  static final List<String> HADOOP_OPS = List.of(OP_CREATE, OP_CREATE_NON_RECURSIVE, OP_OPEN,
      OP_APPEND, OP_GET_FILE_STATUS, OP_MKDIRS, OP_LIST_STATUS, OP_LIST_FILES, OP_RENAME,
      OP_DELETE, OP_GET_FILE_CHECKSUM, OP_GET_FILE_BLOCK_LOCATIONS);

  static IOStatisticsStore create() {
    List<String> all = new ArrayList<>(HADOOP_OPS);
    for (String t : TIMED) {
      all.add(t);
      all.add(t + NANOS);
    }
    all.add(ROOT_SCANS);
    all.add(SCANNED_NAMES);
    all.add(UNDERLYING_CALLS);
    return IOStatisticsBinding.iostatisticsStore()
        .withCounters(all.toArray(new String[0]))
        .build();
  }
}
