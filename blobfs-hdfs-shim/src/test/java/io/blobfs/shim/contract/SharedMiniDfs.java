package io.blobfs.shim.contract;

import java.io.File;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.URI;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileUtil;
import org.apache.hadoop.hdfs.HdfsConfiguration;
import org.apache.hadoop.hdfs.MiniDFSCluster;

/**
 * One MiniDFSCluster (a NameNode and a DataNode in this JVM, ephemeral ports, data under
 * target/) for every contract suite of the run: started by the first test that asks,
 * stopped when the JVM exits. Failsafe runs the suites in one JVM, so the cluster starts
 * once, instead of once per class as Hadoop's own HDFS contract tests do.
 */
final class SharedMiniDfs {
  private static MiniDFSCluster cluster;

  private SharedMiniDfs() {}

  static synchronized URI uri() {
    if (cluster == null) {
      cluster = start();
    }
    return cluster.getURI();
  }

  private static MiniDFSCluster start() {
    File base = new File("target/minidfs-" + ProcessHandle.current().pid()).getAbsoluteFile();
    removeStale(base.getParentFile());
    Configuration conf = new HdfsConfiguration();
    conf.set(MiniDFSCluster.HDFS_MINIDFS_BASEDIR, base.getPath());
    conf.setLong("dfs.blocksize", 1024 * 1024);
    // The suites write files with 1 KiB blocks, as Hadoop's own HDFS contract allows.
    conf.setLong("dfs.namenode.fs-limits.min-block-size", 0);
    try {
      MiniDFSCluster c = new MiniDFSCluster.Builder(conf, base).numDataNodes(1).build();
      c.waitActive();
      Runtime.getRuntime().addShutdownHook(new Thread(() -> c.shutdown(true), "minidfs-stop"));
      return c;
    } catch (IOException e) {
      throw new UncheckedIOException("MiniDFSCluster did not start under " + base, e);
    }
  }

  /**
   * The exit hook does not always finish before the forked JVM is halted, so a run can
   * leave its directory behind: those of processes that are gone are removed.
   */
  private static void removeStale(File target) {
    File[] dirs = target.listFiles((d, name) -> name.matches("minidfs-\\d+"));
    for (File dir : dirs == null ? new File[0] : dirs) {
      long pid = Long.parseLong(dir.getName().substring("minidfs-".length()));
      if (ProcessHandle.of(pid).isEmpty()) {
        FileUtil.fullyDelete(dir);
      }
    }
  }
}
