package io.blobfs.tyr.contract.cluster.r2;

import io.blobfs.tyr.contract.cluster.TyrClusterContract;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.contract.AbstractFSContract;
import org.apache.hadoop.fs.contract.AbstractContractGetEnclosingRoot;

public class TyrClusterR2GetEnclosingRootContractIT extends AbstractContractGetEnclosingRoot {
  @Override
  protected AbstractFSContract createContract(Configuration conf) {
    return TyrClusterContract.replicated(conf);
  }
}
