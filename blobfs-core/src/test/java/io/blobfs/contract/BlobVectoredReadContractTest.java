package io.blobfs.contract;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.contract.AbstractContractVectoredReadTest;
import org.apache.hadoop.fs.contract.AbstractFSContract;

public class BlobVectoredReadContractTest extends AbstractContractVectoredReadTest {
  public BlobVectoredReadContractTest(String bufferType) {
    super(bufferType);
  }

  @Override
  protected AbstractFSContract createContract(Configuration conf) {
    return new BlobContract(conf);
  }
}
