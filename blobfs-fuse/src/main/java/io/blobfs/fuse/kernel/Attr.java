package io.blobfs.fuse.kernel;

/**
 * What {@code stat} shows of one inode (the kernel's {@code struct fuse_attr}).
 *
 * @param mode file type and permission bits, as st_mode
 * @param mtimeMillis modification time; atime and ctime report the same
 */
public record Attr(long ino, long size, long mtimeMillis, int mode, int nlink, int blksize,
    int uid, int gid) {

  public static final int S_IFDIR = 0040000;
  public static final int S_IFREG = 0100000;

  public boolean isDirectory() {
    return (mode & 0170000) == S_IFDIR;
  }
}
