package io.blobfs.fuse.kernel;

/**
 * An open file or directory handle.
 *
 * @param keepCache let the kernel keep the pages it cached for this inode (false: they are
 *     dropped at this open, which is what gives close-to-open consistency)
 * @param directIo bypass the page cache for this handle: its reads and writes all reach
 *     the file system, so they never share pages with the inode's other handles
 * @param backingId a {@link Passthrough} id: the kernel reads and writes that file for this
 *     handle, with no READ or WRITE request; 0 for none
 */
public record Opened(long fh, boolean keepCache, boolean directIo, int backingId) {
  public Opened(long fh, boolean keepCache, boolean directIo) {
    this(fh, keepCache, directIo, 0);
  }

  public Opened(long fh, boolean keepCache) {
    this(fh, keepCache, false);
  }
}
