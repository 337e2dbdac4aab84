package io.blobfs.store;

import java.nio.ByteBuffer;
import java.util.concurrent.CompletableFuture;

/**
 * Optional: many reads of one blob served by one set-up, for a caller that knows the blob
 * does not change while it reads it. BlobFS's data blobs are such blobs: each is written
 * under a fresh file id before the record that names it is published, and never written
 * again (no append, truncate or rewrite; a rewrite is a new file id, which may name the
 * unchanged stripes of the version it replaces instead of writing its own, but never
 * writes them), only deleted.
 *
 * <p>A store's {@link #read} serves the newest version at the time of each call; a
 * snapshot serves the version current when it was opened, for as long as it is open,
 * even once the blob is deleted. That is why only a caller that knows the blob is
 * immutable may use one: for such a blob, the two are the same bytes.
 */
public interface SnapshotReads extends BlobStore {
  /**
   * Reads of the first {@code length} bytes of one version of {@code key}, or null if the
   * store cannot serve them now (the caller then uses {@link #read}; so it does on any
   * failure of a snapshot's read). Never fails: a blob that is gone or shorter than
   * {@code length} gives null, and the caller's {@link #read} reports it.
   */
  CompletableFuture<Snapshot> openSnapshot(String key, long length);

  /** One version of a blob's first bytes; thread-safe. */
  interface Snapshot extends AutoCloseable {
    /**
     * Reads {@code dst.remaining()} bytes from {@code offset}, which must lie within the
     * snapshot's length, advancing {@code dst}'s position; completes with that count.
     */
    CompletableFuture<Integer> read(long offset, ByteBuffer dst);

    /**
     * Frees what the snapshot holds; later reads fail. Reads already accepted either finish
     * first (Týr's snapshots hold their files until they are done) or fail. Idempotent.
     */
    @Override
    void close();

    /**
     * True once closed, by {@link #close} or by the store itself (Týr closes a snapshot
     * nobody has read for a while): the caller then opens another instead of reading it.
     */
    default boolean isClosed() {
      return false;
    }
  }
}
