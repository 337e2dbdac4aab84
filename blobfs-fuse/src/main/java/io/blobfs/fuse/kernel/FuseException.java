package io.blobfs.fuse.kernel;

/** A failed operation and the errno the kernel gets for it. */
public class FuseException extends Exception {
  private final int errno;

  public FuseException(int errno, String message) {
    super(message);
    this.errno = errno;
  }

  public FuseException(int errno, String message, Throwable cause) {
    super(message, cause);
    this.errno = errno;
  }

  public int errno() {
    return errno;
  }
}
