package io.blobfs.hadoop;

import static org.apache.hadoop.fs.statistics.StoreStatisticNames.*;
import static org.apache.hadoop.fs.statistics.StreamStatisticNames.*;

import io.blobfs.namespace.StoreCallCounters;
import java.util.ArrayList;
import java.util.List;
import org.apache.hadoop.fs.statistics.impl.IOStatisticsBinding;
import org.apache.hadoop.fs.statistics.impl.IOStatisticsStore;

/**
 * The counters BlobFS keeps, named with Hadoop's standard statistic names where one
 * exists: Hadoop calls (op_*), raw store calls (store_*), and stream traffic
 * (stream_*). Streams keep their own and add them to the file system's at close.
 */
final class BlobStatistics {
  private BlobStatistics() {}

  static final String OP_GET_FILE_BLOCK_LOCATIONS = "op_get_file_block_locations";
  static final String OP_LIST_LOCATED_STATUS = "op_list_located_status";
  static final String OP_GET_CONTENT_SUMMARY = "op_get_content_summary";

  static final List<String> HADOOP_OPS = List.of(OP_CREATE, OP_CREATE_NON_RECURSIVE, OP_OPEN,
      OP_OPENFILE, OP_GET_FILE_STATUS, OP_MKDIRS, OP_LIST_STATUS, OP_LIST_FILES,
      OP_LIST_LOCATED_STATUS, OP_RENAME, OP_DELETE, OP_GET_FILE_BLOCK_LOCATIONS,
      OP_GET_CONTENT_SUMMARY);

  static final List<String> INPUT_STREAM = List.of(STREAM_READ_OPENED, STREAM_READ_CLOSED,
      STREAM_READ_BYTES, STREAM_READ_OPERATIONS, STREAM_READ_OPERATIONS_INCOMPLETE,
      STREAM_READ_FULLY_OPERATIONS, STREAM_READ_SEEK_OPERATIONS,
      STREAM_READ_SEEK_BACKWARD_OPERATIONS, STREAM_READ_SEEK_FORWARD_OPERATIONS,
      STREAM_READ_SEEK_POLICY_CHANGED, STREAM_READ_VECTORED_OPERATIONS,
      STREAM_READ_VECTORED_INCOMING_RANGES, STREAM_READ_UNBUFFERED, STREAM_READ_EXCEPTIONS,
      STREAM_READ_TOTAL_BYTES);

  static final List<String> OUTPUT_STREAM = List.of(STREAM_WRITE_BYTES,
      STREAM_WRITE_BLOCK_UPLOADS, STREAM_WRITE_EXCEPTIONS);

  static IOStatisticsStore forFileSystem() {
    List<String> all = new ArrayList<>(HADOOP_OPS);
    all.addAll(StoreCallCounters.NAMES);
    all.addAll(INPUT_STREAM);
    all.addAll(OUTPUT_STREAM);
    return IOStatisticsBinding.iostatisticsStore()
        .withCounters(all.toArray(new String[0]))
        .build();
  }

  static IOStatisticsStore forInputStream() {
    return IOStatisticsBinding.iostatisticsStore()
        .withCounters(INPUT_STREAM.toArray(new String[0]))
        .build();
  }

  static IOStatisticsStore forOutputStream() {
    return IOStatisticsBinding.iostatisticsStore()
        .withCounters(OUTPUT_STREAM.toArray(new String[0]))
        .build();
  }
}
