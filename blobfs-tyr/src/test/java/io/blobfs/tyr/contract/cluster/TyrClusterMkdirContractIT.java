package io.blobfs.tyr.contract.cluster;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.contract.AbstractFSContract;
import org.apache.hadoop.fs.contract.AbstractContractMkdirTest;

public class TyrClusterMkdirContractIT extends AbstractContractMkdirTest {
  @Override
  protected AbstractFSContract createContract(Configuration conf) {
    return new TyrClusterContract(conf);
  }
}
