package io.blobfs.shim.contract;

import java.io.IOException;
import java.net.URI;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.contract.AbstractFSContract;

/**
 * Binds Hadoop's contract suites to {@code flat://contract/}, whose flat root is
 * {@code /flat} on the shared MiniDFSCluster. The options come from
 * {@code contract/flat-hdfs.xml}, which declares every way the shim differs from HDFS.
 */
public class FlatHdfsContract extends AbstractFSContract {
  public static final String XML = "contract/flat-hdfs.xml";
  public static final URI FS = URI.create("flat://contract/");

  private FileSystem fs;

  public FlatHdfsContract(Configuration conf) {
    super(conf);
    addConfResource(XML);
  }

  @Override
  public void init() throws IOException {
    super.init();
    getConf().set("fs.flat.underlying.contract", SharedMiniDfs.uri() + "/flat");
    fs = FileSystem.get(FS, getConf());
  }

  @Override
  public FileSystem getTestFileSystem() {
    return fs;
  }

  @Override
  public String getScheme() {
    return "flat";
  }

  @Override
  public Path getTestPath() {
    return new Path(FS.toString(), "/test");
  }
}
