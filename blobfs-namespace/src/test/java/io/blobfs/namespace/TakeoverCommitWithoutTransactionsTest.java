package io.blobfs.namespace;

import io.blobfs.store.BlobStore;
import io.blobfs.store.StoreLimits;
import io.blobfs.store.memory.InMemoryBlobStore;

/**
 * {@link TakeoverScenarios} on a memory store seen without transactions: RADOS's seven
 * conditional steps (DESIGN §2.3), as {@code RadosTakeoverIT} runs them on Ceph.
 */
class TakeoverCommitWithoutTransactionsTest extends TakeoverScenarios {
  @Override
  protected BlobStore openStore() {
    return new InMemoryBlobStore("stripes", new StoreLimits(1024, 1L << 30, Integer.MAX_VALUE));
  }

  @Override
  protected boolean transactional() {
    return false;
  }
}
