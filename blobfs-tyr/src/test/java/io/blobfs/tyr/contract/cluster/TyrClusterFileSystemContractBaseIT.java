package io.blobfs.tyr.contract.cluster;

import io.blobfs.contract.BlobFileSystemContractBaseTest;
import java.net.URI;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileSystem;

/** Hadoop's older FileSystem contract on the Týr cluster. */
public class TyrClusterFileSystemContractBaseIT extends BlobFileSystemContractBaseTest {
  @Override
  protected FileSystem openFileSystem() throws Exception {
    Configuration conf = new Configuration();
    conf.addResource(TyrClusterContract.XML);
    TyrClusterContract.bind(conf);
    return FileSystem.get(URI.create("blob://" + TyrClusterContract.STORE + "/"), conf);
  }
}
