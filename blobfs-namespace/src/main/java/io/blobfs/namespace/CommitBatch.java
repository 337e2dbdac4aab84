package io.blobfs.namespace;

import io.blobfs.store.BlobMutation;
import io.blobfs.store.StoreLimits;
import io.blobfs.store.TransactionalBlobStore;
import java.util.ArrayList;
import java.util.List;

/**
 * Mutations gathered for one transaction, up to a budget counted as the store counts it
 * ({@link TransactionalBlobStore#commitBytes}, against {@link StoreLimits#maxCommitBytes}),
 * so that a directory of any size is renamed or
 * deleted in transactions the store accepts. The mutations of one file are added
 * together and never split between two transactions.
 */
final class CommitBatch {
  private final TransactionalBlobStore store;
  private final long budget;
  private final List<BlobMutation> mutations = new ArrayList<>();
  private long bytes;

  CommitBatch(TransactionalBlobStore store, long budget) {
    this.store = store;
    this.budget = budget;
  }

  /**
   * True if {@code more} fits beside what is gathered. An empty batch takes anything, so a
   * single file over the budget still gets its own transaction (which the store judges).
   */
  boolean fits(List<? extends BlobMutation> more) {
    return mutations.isEmpty() || bytes + store.commitBytes(more) <= budget;
  }

  void add(List<? extends BlobMutation> more) {
    mutations.addAll(more);
    bytes += store.commitBytes(more);
  }

  boolean isEmpty() {
    return mutations.isEmpty();
  }

  /** The gathered mutations, then {@code extra}, as one transaction's list. */
  List<BlobMutation> with(List<? extends BlobMutation> extra) {
    List<BlobMutation> all = new ArrayList<>(mutations.size() + extra.size());
    all.addAll(mutations);
    all.addAll(extra);
    return all;
  }

  void clear() {
    mutations.clear();
    bytes = 0;
  }
}
