package io.blobfs.bench.trace;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FSDataInputStream;
import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.LocalFileSystem;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The tracer's counts on file://, call by call, and Table 2's classification. */
class TracingLocalFileSystemTest {
  @TempDir
  Path dir;

  @Test
  void countsEachCallOnceAndClassifiesDirectoryOperations() throws Exception {
    Configuration conf = new Configuration();
    TracingFileSystem.configuration("file", "unused").forEach(conf::set);
    conf.setBoolean("fs.file.impl.disable.cache", true);
    FileSystem fs = FileSystem.get(dir.toUri(), conf);
    assertThat(fs).isInstanceOf(TracingLocalFileSystem.class).isInstanceOf(LocalFileSystem.class);
    Traced traced = (Traced) fs;
    org.apache.hadoop.fs.Path base = new org.apache.hadoop.fs.Path(dir.toUri());
    org.apache.hadoop.fs.Path input = new org.apache.hadoop.fs.Path(base, "in");
    org.apache.hadoop.fs.Path tmp = new org.apache.hadoop.fs.Path(base, "out/_temporary/0");
    traced.setInputDirectories(List.of(input));

    fs.mkdirs(tmp);                                   // mkdir (its parents are directories)
    org.apache.hadoop.fs.Path file = new org.apache.hadoop.fs.Path(input, "f");
    try (FSDataOutputStream out = fs.create(file)) {  // create: LocalFileSystem's own mkdirs
      out.write(new byte[] {1, 2, 3});                //   of the parent is not counted
      out.write(4);
    }
    try (FSDataInputStream in = fs.open(file)) {
      assertThat(in.read(new byte[10], 0, 10)).isEqualTo(4);
    }
    fs.listStatus(input);                             // opendir of the input
    fs.listStatus(tmp);                               // opendir of another directory
    fs.exists(file);                                  // a getFileStatus
    fs.delete(new org.apache.hadoop.fs.Path(base, "out/_temporary"), true);  // rmdir
    fs.delete(file, false);                           // a file: not an rmdir

    Map<String, Long> c = traced.counts();
    assertThat(c).containsEntry("trace.mkdirs", 1L).containsEntry("trace.dir_mkdir", 1L)
        .containsEntry("trace.create", 1L).containsEntry("trace.write", 2L)
        .containsEntry("trace.open", 1L).containsEntry("trace.read", 1L)
        .containsEntry("trace.list", 2L).containsEntry("trace.dir_open_input", 1L)
        .containsEntry("trace.dir_open_other", 1L).containsEntry("trace.get_file_status", 1L)
        .containsEntry("trace.delete", 2L).containsEntry("trace.dir_rmdir", 1L)
        .containsEntry("trace.rename", 0L);
  }
}
