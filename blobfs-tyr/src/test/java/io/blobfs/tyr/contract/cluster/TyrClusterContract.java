package io.blobfs.tyr.contract.cluster;

import io.blobfs.contract.BlobContract;
import io.blobfs.tyr.cluster.TyrProcessCluster;
import java.io.IOException;
import java.net.URI;
import java.nio.file.Files;
import org.apache.hadoop.conf.Configuration;

/**
 * Hadoop's contract suites on a Týr cluster of three server processes on hosts of their
 * own where network namespaces work: {@code blob://tyr-cluster/} with R = 1 and
 * {@code blob://tyr-cluster-r2/} with R = 2 (primary-backup), each cluster started once
 * per test JVM.
 */
public class TyrClusterContract extends BlobContract {
  public static final String XML = "contract/tyr-cluster.xml";
  public static final String STORE = "tyr-cluster";
  public static final String XML_R2 = "contract/tyr-cluster-r2.xml";
  public static final String STORE_R2 = "tyr-cluster-r2";

  private final int replication;

  public TyrClusterContract(Configuration conf) {
    this(conf, XML, STORE, 1);
  }

  private TyrClusterContract(Configuration conf, String xml, String store, int replication) {
    super(conf, xml, URI.create("blob://" + store + "/"));
    this.replication = replication;
  }

  /** The binding on the cluster with two replicas of every key. */
  public static TyrClusterContract replicated(Configuration conf) {
    return new TyrClusterContract(conf, XML_R2, STORE_R2, 2);
  }

  @Override
  protected void configure(Configuration conf) throws IOException {
    if (replication == 1) {
      bind(conf);
    } else {
      bindReplicated(conf);
    }
  }

  private static final TyrProcessCluster[] SHARED = new TyrProcessCluster[3];

  /** Points the R = 1 store at the cluster shared by every suite of this test JVM. */
  public static void bind(Configuration conf) throws IOException {
    conf.set("fs.blob.store." + STORE + ".nodes", shared(1).nodesOption());
  }

  /** Points the R = 2 store at its cluster. */
  public static void bindReplicated(Configuration conf) throws IOException {
    conf.set("fs.blob.store." + STORE_R2 + ".nodes", shared(2).nodesOption());
  }

  private static synchronized TyrProcessCluster shared(int replication) throws IOException {
    if (SHARED[replication] == null) {
      TyrProcessCluster c;
      try {
        c = TyrProcessCluster.start(Files.createTempDirectory("tyr-cluster-contract-"), 3, 128,
            replication);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new java.io.InterruptedIOException("starting the Týr cluster");
      }
      SHARED[replication] = c;
      Runtime.getRuntime().addShutdownHook(new Thread(c::close));
    }
    return SHARED[replication];
  }
}
