package io.blobfs.fuse.kernel;

/**
 * The changes of one setattr call; a field not asked for is absent.
 *
 * @param fh the open handle it came through ({@code ftruncate}), or -1
 * @param size the new length, or -1
 * @param mtimeMillis the new modification time, or -1 ("now" is resolved by the session)
 */
public record SetAttr(long fh, long size, long mtimeMillis, boolean modeOrOwner) {}
