package io.blobfs.fuse.kernel;

import java.io.IOException;
import java.nio.file.Path;

/**
 * FUSE passthrough (Linux 6.9+): the kernel reads and writes an open file's backing file
 * itself, with no request to this process per read or write. A file is registered once
 * ({@link #open}); every open reply that names its id ({@link Opened#backingId}) is then
 * served by the kernel from that file, until the handle is released. Only what concerns
 * the handle's data goes to the backing file: lookups, getattr, setattr, flush, fsync and
 * release still come here.
 *
 * <p>The kernel's rules, which the file system must keep: while any handle of an inode
 * passes through, every open of that inode must pass through to the same backing file
 * (else the open fails with EIO), and an inode with handles open through the page cache
 * cannot get a passthrough handle (EIO too); direct-I/O handles mix with either.
 */
public interface Passthrough {
  /** Registers {@code file}; returns its backing id (positive). Needs CAP_SYS_ADMIN. */
  int open(Path file) throws IOException;

  /** Drops the registration; handles opened with it keep their file until released. */
  void close(int backingId);
}
