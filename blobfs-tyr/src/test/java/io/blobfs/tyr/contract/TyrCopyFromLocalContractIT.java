package io.blobfs.tyr.contract;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.contract.AbstractFSContract;
import org.apache.hadoop.fs.contract.AbstractContractCopyFromLocalTest;

public class TyrCopyFromLocalContractIT extends AbstractContractCopyFromLocalTest {
  @Override
  protected AbstractFSContract createContract(Configuration conf) {
    return new TyrContract(conf);
  }
}
