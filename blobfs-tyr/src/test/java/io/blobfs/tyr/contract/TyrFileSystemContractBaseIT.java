package io.blobfs.tyr.contract;

import io.blobfs.contract.BlobFileSystemContractBaseTest;
import java.net.URI;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileSystem;

/** Hadoop's older FileSystem contract on the Týr binding of the contract suites. */
public class TyrFileSystemContractBaseIT extends BlobFileSystemContractBaseTest {
  @Override
  protected FileSystem openFileSystem() throws Exception {
    Configuration conf = new Configuration();
    conf.addResource(TyrContract.XML);
    TyrContract.bind(conf);
    return FileSystem.get(URI.create("blob://" + TyrContract.STORE + "/"), conf);
  }
}
