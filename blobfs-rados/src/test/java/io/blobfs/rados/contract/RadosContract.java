package io.blobfs.rados.contract;

import io.blobfs.rados.CephTestCluster;
import java.io.IOException;
import java.net.URI;
import java.util.Map;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.contract.AbstractFSContract;

/**
 * Hadoop's contract suites on {@code blob://rados-contract/}: the real single-OSD cluster
 * started by the project's script, as client.blobfs, in a RADOS namespace of this run.
 */
public class RadosContract extends AbstractFSContract {
  public static final String XML = "contract/rados.xml";
  static final String STORE = "rados-contract";
  private static final String NAMESPACE = "contract-" + ProcessHandle.current().pid();

  private FileSystem fs;

  public RadosContract(Configuration conf) {
    super(conf);
    addConfResource(XML);
  }

  @Override
  public void init() throws IOException {
    super.init();
    CephTestCluster.Env env;
    try {
      env = CephTestCluster.single();
    } catch (org.opentest4j.TestAbortedException skip) {
      // JUnit 4 (these suites) knows only its own way of skipping.
      throw new org.junit.AssumptionViolatedException(skip.getMessage());
    }
    Configuration cluster = CephTestCluster.hadoopConf(env, STORE, NAMESPACE);
    for (Map.Entry<String, String> e : cluster) {
      if (e.getKey().startsWith("fs.blob.")) {
        getConf().set(e.getKey(), e.getValue());
      }
    }
    fs = FileSystem.get(URI.create("blob://" + STORE + "/"), getConf());
  }

  @Override
  public FileSystem getTestFileSystem() {
    return fs;
  }

  @Override
  public String getScheme() {
    return "blob";
  }

  @Override
  public Path getTestPath() {
    return new Path("blob://" + STORE + "/test");
  }
}
