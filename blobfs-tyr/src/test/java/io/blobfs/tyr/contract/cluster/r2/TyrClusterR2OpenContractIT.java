package io.blobfs.tyr.contract.cluster.r2;

import io.blobfs.tyr.contract.cluster.TyrClusterContract;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.contract.AbstractFSContract;
import org.apache.hadoop.fs.contract.AbstractContractOpenTest;

public class TyrClusterR2OpenContractIT extends AbstractContractOpenTest {
  @Override
  protected AbstractFSContract createContract(Configuration conf) {
    return TyrClusterContract.replicated(conf);
  }
}
