package io.blobfs.tyr.contract.cluster;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.contract.AbstractFSContract;
import org.apache.hadoop.fs.contract.AbstractContractGetEnclosingRoot;

public class TyrClusterGetEnclosingRootContractIT extends AbstractContractGetEnclosingRoot {
  @Override
  protected AbstractFSContract createContract(Configuration conf) {
    return new TyrClusterContract(conf);
  }
}
