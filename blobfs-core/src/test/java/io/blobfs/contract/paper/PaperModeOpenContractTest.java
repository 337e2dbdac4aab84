package io.blobfs.contract.paper;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.contract.AbstractFSContract;
import org.apache.hadoop.fs.contract.AbstractContractOpenTest;

public class PaperModeOpenContractTest extends AbstractContractOpenTest {
  @Override
  protected AbstractFSContract createContract(Configuration conf) {
    return new PaperModeContract(conf);
  }
}
