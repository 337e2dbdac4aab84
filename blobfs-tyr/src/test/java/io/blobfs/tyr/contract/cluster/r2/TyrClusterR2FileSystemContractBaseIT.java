package io.blobfs.tyr.contract.cluster.r2;

import io.blobfs.tyr.contract.cluster.TyrClusterContract;

import io.blobfs.contract.BlobFileSystemContractBaseTest;
import java.net.URI;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileSystem;

/** Hadoop's older FileSystem contract on the Týr cluster with R = 2. */
public class TyrClusterR2FileSystemContractBaseIT extends BlobFileSystemContractBaseTest {
  @Override
  protected FileSystem openFileSystem() throws Exception {
    Configuration conf = new Configuration();
    conf.addResource(TyrClusterContract.XML_R2);
    TyrClusterContract.bindReplicated(conf);
    return FileSystem.get(URI.create("blob://" + TyrClusterContract.STORE_R2 + "/"), conf);
  }
}
