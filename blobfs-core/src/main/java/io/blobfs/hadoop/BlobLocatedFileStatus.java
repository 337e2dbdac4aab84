package io.blobfs.hadoop;

import org.apache.hadoop.fs.BlockLocation;
import org.apache.hadoop.fs.EtagSource;
import org.apache.hadoop.fs.LocatedFileStatus;

/** A listing entry with its block locations filled in, and the file's etag. */
public class BlobLocatedFileStatus extends LocatedFileStatus implements EtagSource {
  private static final long serialVersionUID = 1L;

  private final String etag;

  BlobLocatedFileStatus(BlobFileStatus status, BlockLocation[] locations) {
    super(status, locations);
    this.etag = status.getEtag();
  }

  @Override
  public String getEtag() {
    return etag;
  }

  @Override
  public boolean equals(Object o) {
    return super.equals(o);
  }

  @Override
  public int hashCode() {
    return super.hashCode();
  }
}
