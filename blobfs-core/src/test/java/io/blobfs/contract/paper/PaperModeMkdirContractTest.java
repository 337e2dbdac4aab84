package io.blobfs.contract.paper;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.contract.AbstractContractMkdirTest;
import org.apache.hadoop.fs.contract.AbstractFSContract;

/**
 * mkdirs in the paper's mode writes nothing, but refuses a file at the path or above it;
 * the empty directories this suite makes are the instance's own (PendingDirectories).
 */
public class PaperModeMkdirContractTest extends AbstractContractMkdirTest {
  @Override
  protected AbstractFSContract createContract(Configuration conf) {
    return new PaperModeContract(conf);
  }
}
