package io.blobfs.contract.paper;

import io.blobfs.contract.BlobContract;
import java.net.URI;
import org.apache.hadoop.conf.Configuration;

/**
 * The contract binding in the paper's default mode: no directory markers. Suites that
 * create empty directories and probe them from elsewhere or after emptying a parent
 * (delete, rename, getFileStatus, rootdir, contentSummary) assume HDFS directories and
 * are bound only in markers=keep mode; mkdir's probes see this instance's own.
 */
public class PaperModeContract extends BlobContract {
  public static final String XML = "contract/blob-paper.xml";
  public static final URI STORE = URI.create("blob://paper/");

  public PaperModeContract(Configuration conf) {
    super(conf, XML, STORE);
  }
}
