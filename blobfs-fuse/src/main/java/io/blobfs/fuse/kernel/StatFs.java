package io.blobfs.fuse.kernel;

/** What {@code statfs} shows (the kernel's {@code struct fuse_kstatfs}). */
public record StatFs(long blocks, long blocksFree, long files, long filesFree, int blockSize,
    int nameMax) {}
