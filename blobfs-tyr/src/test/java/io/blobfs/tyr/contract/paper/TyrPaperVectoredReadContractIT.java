package io.blobfs.tyr.contract.paper;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.contract.AbstractFSContract;
import org.apache.hadoop.fs.contract.AbstractContractVectoredReadTest;

public class TyrPaperVectoredReadContractIT extends AbstractContractVectoredReadTest {
  public TyrPaperVectoredReadContractIT(String bufferType) {
    super(bufferType);
  }

  @Override
  protected AbstractFSContract createContract(Configuration conf) {
    return new TyrPaperContract(conf);
  }
}
