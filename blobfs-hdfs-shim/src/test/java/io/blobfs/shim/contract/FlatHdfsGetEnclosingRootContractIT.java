package io.blobfs.shim.contract;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.contract.AbstractContractGetEnclosingRoot;
import org.apache.hadoop.fs.contract.AbstractFSContract;

public class FlatHdfsGetEnclosingRootContractIT extends AbstractContractGetEnclosingRoot {
  @Override
  protected AbstractFSContract createContract(Configuration conf) {
    return new FlatHdfsContract(conf);
  }
}
