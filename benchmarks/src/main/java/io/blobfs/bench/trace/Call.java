package io.blobfs.bench.trace;

import java.util.Locale;

/**
 * The storage calls the paper counts (section 6, Figure 3), and Table 2's breakdown of
 * directory operations. {@link #counter()} is the name a call has in {@link
 * TracingFileSystem}'s counts, and thus in a {@code StorageCounters} snapshot.
 */
public enum Call {
  CREATE, OPEN, READ, WRITE, GET_FILE_STATUS, MKDIRS, LIST, RENAME, DELETE,
  /** Table 2: {@code mkdirs} calls (as MKDIRS; repeated here so the breakdown is whole). */
  DIR_MKDIR,
  /** Table 2: deletes of a path known as a directory (see {@link TracingFileSystem}). */
  DIR_RMDIR,
  /** Table 2: listings of an input directory of the job. */
  DIR_OPEN_INPUT,
  /** Table 2: listings of any other directory. */
  DIR_OPEN_OTHER;

  public static final String PREFIX = "trace.";
  /**
   * Counter of the nanoseconds callers spent inside read calls, summed over threads: bytes
   * read over it is the paper's read bandwidth ("data transferred per unit of time for read
   * requests", section 8.1).
   */
  public static final String READ_NANOS = PREFIX + "read_nanos";
  /** Likewise inside write calls and the output streams' close (which publishes the data). */
  public static final String WRITE_NANOS = PREFIX + "write_nanos";

  public String counter() {
    return PREFIX + name().toLowerCase(Locale.ROOT);
  }
}
