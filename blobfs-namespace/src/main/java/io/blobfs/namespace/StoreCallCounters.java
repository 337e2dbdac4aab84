package io.blobfs.namespace;

import java.util.List;

/**
 * Receives one count per raw store call, by type, and the bytes moved: the figures
 * behind the paper's storage-call distribution. The Hadoop adapter feeds them into its
 * IOStatistics.
 */
public interface StoreCallCounters {
  String STAT = "store_stat";
  String READ = "store_read";
  String WRITE = "store_write";
  String PUT = "store_put";
  String DELETE = "store_delete";
  String SCAN = "store_scan";
  String COMMIT = "store_commit";
  String LOCATE = "store_locate";
  String BYTES_READ = "store_bytes_read";
  String BYTES_WRITTEN = "store_bytes_written";
  List<String> NAMES =
      List.of(STAT, READ, WRITE, PUT, DELETE, SCAN, COMMIT, LOCATE, BYTES_READ, BYTES_WRITTEN);

  StoreCallCounters NONE = (counter, delta) -> { };

  void increment(String counter, long delta);
}
