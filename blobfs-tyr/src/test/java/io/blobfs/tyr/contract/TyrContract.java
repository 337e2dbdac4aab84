package io.blobfs.tyr.contract;

import io.blobfs.contract.BlobContract;
import io.blobfs.tyr.server.TyrServerProcess;
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

  private final String store;

  public TyrContract(Configuration conf) {
    this(conf, XML, STORE);
  }

  /** A binding with its own options file and store name (the paper-mode one). */
  protected TyrContract(Configuration conf, String xml, String store) {
    super(conf, xml, URI.create("blob://" + store + "/"));
    this.store = store;
  }

  @Override
  protected void configure(Configuration conf) throws IOException {
    bind(conf, store);
  }

  private static TyrServerProcess shared;

  /** Points the contract store at the server shared by every suite of this test JVM. */
  public static void bind(Configuration conf) throws IOException {
    bind(conf, STORE);
  }

  static void bind(Configuration conf, String store) throws IOException {
    conf.set("fs.blob.store." + store + ".address", shared().address());
  }

  private static synchronized TyrServerProcess shared() throws IOException {
    if (shared == null) {
      shared = new TyrServerProcess(java.nio.file.Files.createTempDirectory("tyr-contract-"),
          "--sync", "interval").start();
      Runtime.getRuntime().addShutdownHook(new Thread(shared::close));
    }
    return shared;
  }
}
