package io.blobfs.rados.contract;

import io.blobfs.contract.BlobContract;
import io.blobfs.rados.CephTestCluster;
import java.io.IOException;
import java.net.URI;
import java.util.Map;
import org.apache.hadoop.conf.Configuration;

/**
 * Hadoop's contract suites on {@code blob://rados-contract/}: the real single-OSD cluster
 * started by the project's script, as client.blobfs, in a RADOS namespace of this run.
 */
public class RadosContract extends BlobContract {
  public static final String XML = "contract/rados.xml";
  static final String STORE = "rados-contract";
  private static final String NAMESPACE = "contract-" + ProcessHandle.current().pid();

  public RadosContract(Configuration conf) {
    super(conf, XML, URI.create("blob://" + STORE + "/"));
  }

  @Override
  protected void configure(Configuration conf) throws IOException {
    CephTestCluster.Env env;
    try {
      env = CephTestCluster.single();
    } catch (org.opentest4j.TestAbortedException skip) {
      // JUnit 4 (these suites) knows only its own way of skipping.
      throw new org.junit.AssumptionViolatedException(skip.getMessage());
    }
    for (Map.Entry<String, String> e : CephTestCluster.hadoopConf(env, STORE, NAMESPACE)) {
      if (e.getKey().startsWith("fs.blob.")) {
        conf.set(e.getKey(), e.getValue());
      }
    }
  }
}
