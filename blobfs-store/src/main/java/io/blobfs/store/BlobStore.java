package io.blobfs.store;

import java.io.Closeable;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.util.concurrent.CompletableFuture;

/**
 * The raw blob API every backend implements: the primitives of the paper's flat store.
 *
 * <p>Keys are opaque strings in one flat space; the store knows nothing of files or
 * directories. Optional powers (multi-blob transactions, placement) are separate mixin
 * interfaces, checked with {@code instanceof}: {@link TransactionalBlobStore},
 * {@link PlacementAware}.
 *
 * <p>Implementations are thread-safe. A missing blob is reported by {@link #stat} as
 * {@link BlobInfo#exists()} {@code == false}, and by the other calls as
 * {@link BlobNotFoundException}.
 */
public interface BlobStore extends Closeable {

  /** Size, existence and version of one blob. */
  BlobInfo stat(String key) throws IOException;

  /**
   * Up to {@code maxBytes} from the start of a blob (fewer only at its end), and the
   * version they were read from, taken together: the bytes are exactly that version's.
   */
  VersionedBytes readWithVersion(String key, int maxBytes) throws IOException;

  /**
   * Reads up to {@code dst.remaining()} bytes starting at {@code offset}. Completes with
   * the number of bytes read, which is less than asked only at the end of the blob, and
   * -1 when {@code offset} is at or past its end.
   */
  CompletableFuture<Integer> read(String key, long offset, ByteBuffer dst);

  /**
   * Writes {@code src} at {@code offset}, creating the blob if absent and growing it
   * (zero-filled) if the offset is past its end. The buffer must not be modified until
   * the future completes.
   */
  CompletableFuture<Void> write(String key, long offset, ByteBuffer src);

  /**
   * Replaces the whole content of a blob in one step: readers see the old or the new
   * content, never a mix. With {@link PutMode#CREATE} it fails with
   * {@link BlobAlreadyExistsException} if the blob exists.
   */
  void put(String key, ByteBuffer content, PutMode mode) throws IOException;

  /** Cuts or zero-extends a blob to {@code size} bytes. */
  void truncate(String key, long size) throws IOException;

  /**
   * As {@link #put}, but only if the blob is at {@code version}: a read-then-act caller
   * replaces only what it read. Fails with {@link TransactionConflictException}, nothing
   * applied, if the blob has changed or is gone. On the stores the file rename without
   * transactions runs on (RADOS and the memory store), a key never gets back a version it
   * had, not even once deleted and created anew (the contract tests check it): a version
   * seen replaced is gone for good, which that rename relies on. On RADOS this assumes no
   * placement-group merge (a lowered {@code pg_num}) hands an object a version counter it
   * has had before. Týr renumbers versions after a failover, so it does not promise this
   * (it has transactions: the namespace never runs that rename on it).
   */
  void putIfVersion(String key, ByteBuffer content, long version) throws IOException;

  /** Deletes a blob; returns false if it did not exist. */
  boolean delete(String key) throws IOException;

  /**
   * Deletes a blob only if it is at {@code version}; else fails with
   * {@link TransactionConflictException}, nothing applied (also when it is gone).
   */
  void deleteIfVersion(String key, long version) throws IOException;

  /**
   * One page of the keys that start with {@code prefix}, in no particular order.
   *
   * @param cursor null for the first page, else {@link ScanPage#nextCursor()} of the last
   * @param limit the most keys wanted in this page (a store may return fewer)
   */
  ScanPage scan(String prefix, String cursor, int limit) throws IOException;

  /**
   * Says that the caller will not ask for the page after this cursor (a probe that needed
   * only the first keys), so a store that keeps state per scan can free it now; the cursor
   * is then invalid. A store frees that state by itself after the last page. Stateless
   * stores ignore it.
   */
  default void closeScan(String cursor) {}

  /** What keys and objects this store accepts. */
  StoreLimits limits();

  /** Convenience: reads exactly {@code length} bytes or fails with EOFException. */
  default byte[] readFully(String key, long offset, int length) throws IOException {
    ByteBuffer buf = ByteBuffer.allocate(length);
    while (buf.hasRemaining()) {
      int n = Futures.await(read(key, offset + buf.position(), buf));
      if (n < 0) {
        throw new java.io.EOFException(
            "blob " + key + " ended at " + (offset + buf.position()) + ", wanted "
                + (offset + length));
      }
    }
    return buf.array();
  }
}
