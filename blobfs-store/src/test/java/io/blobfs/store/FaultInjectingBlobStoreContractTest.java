package io.blobfs.store;

import io.blobfs.store.memory.InMemoryBlobStore;

/**
 * The SPI contract through a wrapper with no fault armed: what tests see through it is
 * the wrapped store's behaviour, futures and exceptions included.
 */
class FaultInjectingBlobStoreContractTest extends TransactionalBlobStoreContract {

  @Override
  protected BlobStore openStore() {
    return FaultInjectingBlobStore.over(
        new InMemoryBlobStore("t", new StoreLimits(1024, 8L << 20, Integer.MAX_VALUE))).store();
  }
}
