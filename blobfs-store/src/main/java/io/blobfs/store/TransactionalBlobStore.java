package io.blobfs.store;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.List;

/**
 * Optional power: apply several mutations on several blobs atomically. Either all of
 * them are applied and become visible at once, or none is and the call fails with
 * {@link TransactionConflictException} (retryable) or another IOException.
 *
 * <p>A transaction may be bounded in size ({@link StoreLimits#maxCommitBytes}): one whose
 * mutations' {@link #commitBytes} sum to at most that is never refused for its size.
 */
public interface TransactionalBlobStore extends BlobStore {

  /** What {@link #commitBytes} counts per mutation beyond its keys and content. */
  int MUTATION_OVERHEAD_BYTES = 32;

  void commit(List<BlobMutation> mutations) throws IOException;

  /**
   * What one mutation counts against {@link StoreLimits#maxCommitBytes}. This default is a
   * bound for any store that names a key at most twice (in the op and in its
   * precondition) and adds at most {@link #MUTATION_OVERHEAD_BYTES} of its own: the key
   * twice, the content, and that overhead. A store whose limit is tight counts exactly what
   * it sends, so that every transaction that fits is taken whole.
   */
  default long commitBytes(BlobMutation m) {
    long content = m instanceof BlobMutation.Put p ? p.content().remaining() : 0;
    return 2L * m.key().getBytes(StandardCharsets.UTF_8).length + content
        + MUTATION_OVERHEAD_BYTES;
  }

  /** The sum of {@link #commitBytes(BlobMutation)} over a transaction. */
  default long commitBytes(List<? extends BlobMutation> mutations) {
    long total = 0;
    for (BlobMutation m : mutations) {
      total += commitBytes(m);
    }
    return total;
  }
}
