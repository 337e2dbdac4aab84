package io.blobfs.tyr.contract.paper;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.contract.AbstractFSContract;
import org.apache.hadoop.fs.contract.AbstractContractMkdirTest;

public class TyrPaperMkdirContractIT extends AbstractContractMkdirTest {
  @Override
  protected AbstractFSContract createContract(Configuration conf) {
    return new TyrPaperContract(conf);
  }
}
