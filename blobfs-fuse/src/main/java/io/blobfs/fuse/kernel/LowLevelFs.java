package io.blobfs.fuse.kernel;

import java.nio.ByteBuffer;

/**
 * The operations of an inode-based file system, as libfuse's {@code fuse_lowlevel_ops}:
 * the kernel names files by the node ids this side hands out in {@link Entry}, never by
 * path, so a rename cannot strand an inode a reader already holds. {@link FuseSession}
 * decodes requests into these calls and encodes their answers; a {@link FuseException}
 * becomes its errno, any other exception EIO. Called from several threads at once.
 */
public interface LowLevelFs {
  long ROOT = 1;

  Entry lookup(long parent, String name) throws FuseException;

  /** The kernel dropped {@code count} references; no reply. */
  void forget(long node, long count);

  Attr getattr(long node) throws FuseException;

  Attr setattr(long node, SetAttr change) throws FuseException;

  Entry mkdir(long parent, String name) throws FuseException;

  /** {@code mknod} of a regular file: an empty file, as create then release. */
  Entry mknod(long parent, String name, int mode) throws FuseException;

  void unlink(long parent, String name) throws FuseException;

  void rmdir(long parent, String name) throws FuseException;

  /** {@code noReplace}: RENAME_NOREPLACE, fail with EEXIST if the target exists. */
  void rename(long parent, String name, long newParent, String newName, boolean noReplace)
      throws FuseException;

  Opened open(long node, int flags) throws FuseException;

  /** Creates and opens; the {@link Entry} counts as a lookup. */
  Entry create(long parent, String name, int flags, Opened[] handle) throws FuseException;

  /** Fills {@code dst} from {@code offset} up to its limit or the end of the file. */
  void read(long node, long fh, long offset, ByteBuffer dst) throws FuseException;

  /** Writes all of {@code src} at {@code offset}; returns the count written. */
  int write(long node, long fh, long offset, ByteBuffer src) throws FuseException;

  /** A close(2) of one descriptor of the handle (there may be several, after dup). */
  void flush(long node, long fh) throws FuseException;

  void release(long node, long fh) throws FuseException;

  void fsync(long node, long fh, boolean dataOnly) throws FuseException;

  Opened opendir(long node) throws FuseException;

  /** Adds the entries after {@code offset} (0: from the start) while they fit. */
  void readdir(long node, long fh, long offset, DirBuffer out) throws FuseException;

  void releasedir(long node, long fh);

  StatFs statfs() throws FuseException;

  /**
   * The kernel's INIT was answered: {@code passthrough} registers backing files for opens
   * ({@link Opened#backingId}), null when the mount does not pass through (not asked, or
   * the kernel does not offer it). Called before any other request.
   */
  default void initialized(Passthrough passthrough) {}
}
