package io.blobfs.contract;

import java.io.IOException;
import java.net.URI;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.contract.AbstractFSContract;

/**
 * Binds Hadoop's contract suites to {@code blob://contract/} on the in-memory store.
 * The options and the store settings come from {@code contract/blob.xml}, which states
 * every way BlobFS differs from HDFS.
 */
public class BlobContract extends AbstractFSContract {
  public static final String XML = "contract/blob.xml";
  public static final URI STORE = URI.create("blob://contract/");

  private final URI store;
  private FileSystem fs;

  public BlobContract(Configuration conf) {
    this(conf, XML, STORE);
  }

  /** Each binding needs its own store name: FileSystem.get caches by URI, not settings. */
  protected BlobContract(Configuration conf, String xml, URI store) {
    super(conf);
    addConfResource(xml);
    this.store = store;
  }

  @Override
  public void init() throws IOException {
    super.init();
    configure(getConf());
    fs = FileSystem.get(store, getConf());
  }

  /** Adds what a binding learns only at run time (a cluster's address, keys) to the conf. */
  protected void configure(Configuration conf) throws IOException {
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
    return new Path(store.toString(), "/test");
  }
}
