package io.blobfs.tyr.contract;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.contract.AbstractFSContract;
import org.apache.hadoop.fs.contract.AbstractContractBulkDeleteTest;

public class TyrBulkDeleteContractIT extends AbstractContractBulkDeleteTest {
  @Override
  protected AbstractFSContract createContract(Configuration conf) {
    return new TyrContract(conf);
  }
}
