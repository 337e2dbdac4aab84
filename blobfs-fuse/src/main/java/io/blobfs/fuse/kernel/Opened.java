package io.blobfs.fuse.kernel;

/**
 * An open file or directory handle.
 *
 * @param keepCache let the kernel keep the pages it cached for this inode (false: they are
 *     dropped at this open, which is what gives close-to-open consistency)
 */
public record Opened(long fh, boolean keepCache) {}
