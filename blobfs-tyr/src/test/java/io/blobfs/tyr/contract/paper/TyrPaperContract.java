package io.blobfs.tyr.contract.paper;

import io.blobfs.tyr.contract.TyrContract;
import org.apache.hadoop.conf.Configuration;

/** The contract suites on Týr in the paper's default mode (no directory markers). */
public class TyrPaperContract extends TyrContract {
  public static final String XML = "contract/tyr-paper.xml";

  public TyrPaperContract(Configuration conf) {
    super(conf, XML, "tyr-paper");
  }
}
