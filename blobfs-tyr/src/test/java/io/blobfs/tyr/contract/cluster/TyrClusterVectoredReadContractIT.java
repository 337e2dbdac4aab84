package io.blobfs.tyr.contract.cluster;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.contract.AbstractFSContract;
import org.apache.hadoop.fs.contract.AbstractContractVectoredReadTest;

public class TyrClusterVectoredReadContractIT extends AbstractContractVectoredReadTest {
  public TyrClusterVectoredReadContractIT(String bufferType) {
    super(bufferType);
  }

  @Override
  protected AbstractFSContract createContract(Configuration conf) {
    return new TyrClusterContract(conf);
  }
}
