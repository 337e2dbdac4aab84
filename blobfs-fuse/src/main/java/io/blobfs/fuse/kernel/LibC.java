package io.blobfs.fuse.kernel;

import com.sun.jna.LastErrorException;
import com.sun.jna.Library;
import com.sun.jna.Native;
import java.nio.ByteBuffer;

/**
 * The libc calls a FUSE server needs. Java has no call that opens a character device
 * as a plain file descriptor number (the mount options name it) nor mount(2), so these
 * go through JNA, already the project's way to native code (blobfs-rados).
 */
interface LibC extends Library {
  LibC INSTANCE = Native.load("c", LibC.class);

  int O_RDWR = 2;
  int O_CLOEXEC = 0x80000;
  long MS_NOSUID = 2;
  long MS_NODEV = 4;
  int MNT_DETACH = 2;

  int open(String path, int flags) throws LastErrorException;

  /** Reads one whole request: /dev/fuse never returns part of one. */
  long read(int fd, ByteBuffer buf, long count) throws LastErrorException;

  /** Writes one whole reply. */
  long write(int fd, ByteBuffer buf, long count) throws LastErrorException;

  int close(int fd) throws LastErrorException;

  int mount(String source, String target, String fstype, long flags, String data)
      throws LastErrorException;

  int umount2(String target, int flags) throws LastErrorException;

  /** ioctl(2) with a pointer argument: the FUSE device's backing-file calls. */
  int ioctl(int fd, long request, com.sun.jna.Pointer arg) throws LastErrorException;
}
