package io.blobfs.rados;

import io.blobfs.store.BlobAlreadyExistsException;
import io.blobfs.store.BlobNotFoundException;
import io.blobfs.store.StoreUnavailableException;
import java.io.IOException;
import java.nio.file.AccessDeniedException;

/** Turns a librados return code into the typed exception a caller can act on. */
final class RadosErrors {
  private RadosErrors() {}

  static final int EPERM = 1;
  static final int ENOENT = 2;
  static final int EIO = 5;
  static final int EACCES = 13;
  static final int EEXIST = 17;
  static final int EFBIG = 27;
  static final int ENOSPC = 28;
  /** From an asserted version older than the object's. */
  static final int ERANGE = 34;
  static final int ENAMETOOLONG = 36;
  /** From an asserted version newer than the object's. */
  static final int EOVERFLOW = 75;
  static final int ETIMEDOUT = 110;
  static final int EDQUOT = 122;
  /** From a failed omap_cmp: the entry was not what the write op asserted. */
  static final int ECANCELED = 125;

  /** Throws the typed exception of a negative return code. */
  static void check(String op, String key, int rc) throws IOException {
    if (rc < 0) {
      throw toException(op, key, rc);
    }
  }

  static IOException toException(String op, String key, int rc) {
    int errno = -rc;
    String where = op + " " + key + ": ";
    return switch (errno) {
      case ENOENT -> new BlobNotFoundException(key);
      case EEXIST -> new BlobAlreadyExistsException(key);
      case EPERM, EACCES -> new AccessDeniedException(key, null,
          op + " denied by the cluster (cephx caps do not allow this pool?) errno " + errno);
      case ETIMEDOUT -> new StoreUnavailableException(where
          + "timed out (rados_osd_op_timeout); an OSD may be down or the pool full", null);
      case ENOSPC, EDQUOT -> new StoreFullException(where + "the pool or cluster is full"
          + " (errno " + errno + ")");
      default -> new IOException(where + "librados error " + errno + " ("
          + describe(errno) + ")");
    };
  }

  private static String describe(int errno) {
    return switch (errno) {
      case EIO -> "I/O error";
      case EFBIG -> "object too large (osd_max_object_size)";
      case ENAMETOOLONG -> "object name too long";
      default -> "see errno.h";
    };
  }

  /** A write failed because the pool (or its quota) is full. */
  static final class StoreFullException extends io.blobfs.store.StoreFullException {
    private static final long serialVersionUID = 1L;

    StoreFullException(String message) {
      super(message);
    }
  }
}
