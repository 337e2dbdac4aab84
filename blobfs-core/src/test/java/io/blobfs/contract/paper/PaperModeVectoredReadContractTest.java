package io.blobfs.contract.paper;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.contract.AbstractContractVectoredReadTest;
import org.apache.hadoop.fs.contract.AbstractFSContract;

public class PaperModeVectoredReadContractTest extends AbstractContractVectoredReadTest {
  public PaperModeVectoredReadContractTest(String bufferType) {
    super(bufferType);
  }

  @Override
  protected AbstractFSContract createContract(Configuration conf) {
    return new PaperModeContract(conf);
  }
}
