package io.blobfs.tyr.contract;

import io.blobfs.contract.BlobContract;
import io.blobfs.tyr.testing.TyrTestServer;
import java.io.IOException;
import java.net.URI;
import org.apache.hadoop.conf.Configuration;

/**
 * Hadoop's contract suites on {@code blob://tyr-contract/}: a Týr server in a process of
 * its own, started once per test JVM.
 */
public class TyrContract extends BlobContract {
  public static final String XML = "contract/tyr.xml";
  public static final String STORE = "tyr-contract";

  public TyrContract(Configuration conf) {
    super(conf, XML, URI.create("blob://" + STORE + "/"));
  }

  @Override
  protected void configure(Configuration conf) throws IOException {
    bind(conf);
  }

  /** Points the contract store at the shared server. */
  public static void bind(Configuration conf) throws IOException {
    conf.set("fs.blob.store." + STORE + ".address", TyrTestServer.shared().address());
  }
}
