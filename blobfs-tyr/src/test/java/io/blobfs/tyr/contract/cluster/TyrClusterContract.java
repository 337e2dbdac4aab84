package io.blobfs.tyr.contract.cluster;

import io.blobfs.contract.BlobContract;
import io.blobfs.tyr.cluster.TyrProcessCluster;
import java.io.IOException;
import java.net.URI;
import java.nio.file.Files;
import org.apache.hadoop.conf.Configuration;

/**
 * Hadoop's contract suites on {@code blob://tyr-cluster/}: a Týr cluster of three server
 * processes (R = 1) on hosts of their own where network namespaces work, started once per
 * test JVM.
 */
public class TyrClusterContract extends BlobContract {
  public static final String XML = "contract/tyr-cluster.xml";
  public static final String STORE = "tyr-cluster";

  public TyrClusterContract(Configuration conf) {
    super(conf, XML, URI.create("blob://" + STORE + "/"));
  }

  @Override
  protected void configure(Configuration conf) throws IOException {
    bind(conf);
  }

  private static TyrProcessCluster shared;

  /** Points the contract store at the cluster shared by every suite of this test JVM. */
  public static void bind(Configuration conf) throws IOException {
    conf.set("fs.blob.store." + STORE + ".nodes", shared().nodesOption());
  }

  private static synchronized TyrProcessCluster shared() throws IOException {
    if (shared == null) {
      try {
        shared = TyrProcessCluster.start(Files.createTempDirectory("tyr-cluster-contract-"),
            3, 128, 1);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new java.io.InterruptedIOException("starting the Týr cluster");
      }
      Runtime.getRuntime().addShutdownHook(new Thread(shared::close));
    }
    return shared;
  }
}
