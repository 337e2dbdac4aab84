package io.blobfs.tyr.contract.cluster;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.contract.AbstractFSContract;
import org.apache.hadoop.fs.contract.AbstractContractContentSummaryTest;

public class TyrClusterContentSummaryContractIT extends AbstractContractContentSummaryTest {
  @Override
  protected AbstractFSContract createContract(Configuration conf) {
    return new TyrClusterContract(conf);
  }
}
