package io.blobfs.fuse.kernel;

/** A looked-up name: the inode the kernel now holds one more reference to, and its attributes. */
public record Entry(long node, Attr attr) {}
