package io.blobfs.store;

import java.io.IOException;
import java.util.List;

/**
 * Optional power: apply several mutations on several blobs atomically. Either all of
 * them are applied and become visible at once, or none is and the call fails with
 * {@link TransactionConflictException} (retryable) or another IOException.
 */
public interface TransactionalBlobStore extends BlobStore {

  void commit(List<BlobMutation> mutations) throws IOException;
}
