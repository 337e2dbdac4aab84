package io.blobfs.tyr.contract.cluster.r2;

import io.blobfs.tyr.contract.cluster.TyrClusterContract;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.contract.AbstractFSContract;
import org.apache.hadoop.fs.contract.AbstractContractMkdirTest;

public class TyrClusterR2MkdirContractIT extends AbstractContractMkdirTest {
  @Override
  protected AbstractFSContract createContract(Configuration conf) {
    return TyrClusterContract.replicated(conf);
  }
}
