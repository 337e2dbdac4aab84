package io.blobfs.namespace;

/**
 * What the namespace knows of one path: a file with its record, or a directory
 * (explicit marker or implicit in the names under it).
 */
public record FileInfo(FsPath path, boolean isDirectory, long length, long modificationTime,
    long blockSize, FileRecord record) {

  static FileInfo file(FsPath path, FileRecord record) {
    return new FileInfo(path, false, record.length(), record.modificationTime(),
        record.stripeSize(), record);
  }

  static FileInfo directory(FsPath path, long mtime) {
    return new FileInfo(path, true, 0, mtime, 0, null);
  }

  public boolean isFile() {
    return !isDirectory;
  }
}
