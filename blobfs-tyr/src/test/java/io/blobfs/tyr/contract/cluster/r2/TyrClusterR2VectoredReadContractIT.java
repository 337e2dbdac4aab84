package io.blobfs.tyr.contract.cluster.r2;

import io.blobfs.tyr.contract.cluster.TyrClusterContract;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.contract.AbstractFSContract;
import org.apache.hadoop.fs.contract.AbstractContractVectoredReadTest;

public class TyrClusterR2VectoredReadContractIT extends AbstractContractVectoredReadTest {
  public TyrClusterR2VectoredReadContractIT(String bufferType) {
    super(bufferType);
  }

  @Override
  protected AbstractFSContract createContract(Configuration conf) {
    return TyrClusterContract.replicated(conf);
  }
}
