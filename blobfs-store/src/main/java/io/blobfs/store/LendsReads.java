package io.blobfs.store;

import java.util.concurrent.CompletableFuture;

/**
 * Optional: reads that lend the buffer the bytes arrived in instead of copying them into
 * one of the caller's. A reader that holds bytes before handing them on (read-ahead) then
 * copies each byte once, from the store's buffer into the application's array, instead of
 * twice (store's buffer, its own chunk, the array). Every loan must be released, once,
 * whatever became of the read that asked for it.
 */
public interface LendsReads extends BlobStore {
  /** Whether this store lends on its current path (it may not, e.g. on local reads). */
  default boolean lendsReads() {
    return true;
  }

  /**
   * Up to {@code length} bytes of {@code key} from {@code offset}: fewer only at the blob's
   * end, none at or past it. Fails as {@link #read} does (BlobNotFoundException, ...).
   */
  CompletableFuture<ReadLoan> lendRead(String key, long offset, int length);

  /** Bytes lent by the store, valid until {@link #release}. */
  interface ReadLoan {
    int length();

    /** Copies {@code len} bytes from {@code at} in this loan into {@code dst}. */
    void copyTo(int at, byte[] dst, int off, int len);

    /**
     * Copies {@code len} bytes from {@code at} in this loan into {@code dst} at its
     * position, advancing it. The default goes through a heap array; a store whose loans
     * can copy into a buffer directly (a direct one, say a FUSE reply) overrides it.
     */
    default void copyTo(int at, java.nio.ByteBuffer dst, int len) {
      byte[] tmp = new byte[len];
      copyTo(at, tmp, 0, len);
      dst.put(tmp);
    }

    /** Gives the buffer back; may be called from any thread, more than once. */
    void release();
  }
}
