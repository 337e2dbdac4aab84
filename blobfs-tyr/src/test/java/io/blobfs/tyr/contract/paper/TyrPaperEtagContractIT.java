package io.blobfs.tyr.contract.paper;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.contract.AbstractFSContract;
import org.apache.hadoop.fs.contract.AbstractContractEtagTest;

public class TyrPaperEtagContractIT extends AbstractContractEtagTest {
  @Override
  protected AbstractFSContract createContract(Configuration conf) {
    return new TyrPaperContract(conf);
  }
}
