package io.blobfs.hadoop;

import io.blobfs.namespace.FileInfo;
import org.apache.hadoop.fs.EtagSource;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.permission.FsPermission;

/**
 * A FileStatus that remembers the namespace's record, so that {@code openFile()} with
 * this status (and {@code getFileBlockLocations}) need no second metadata read. The etag
 * is the file id: new for every write, kept by rename.
 */
public class BlobFileStatus extends FileStatus implements EtagSource {
  private static final long serialVersionUID = 1L;

  private final transient FileInfo info;

  BlobFileStatus(FileInfo info, long blockSize, FsPermission permission, String owner,
      String group, Path path) {
    super(info.length(), info.isDirectory(), 1, blockSize, info.modificationTime(), 0,
        permission, owner, group, path);
    this.info = info;
  }

  FileInfo info() {
    return info;
  }

  @Override
  public String getEtag() {
    return etagOf(info);
  }

  static String etagOf(FileInfo info) {
    return info == null || info.isDirectory() ? null : info.record().fileId();
  }

  @Override
  public boolean equals(Object o) {
    return super.equals(o); // FileStatus equality is by path, as Hadoop defines it
  }

  @Override
  public int hashCode() {
    return super.hashCode();
  }
}
