package io.blobfs.fuse;

import io.blobfs.store.BlobStore;
import io.blobfs.store.InProcess;
import io.blobfs.store.PlacementAware;

/**
 * {@link SharedStripesTest} over a store without transactions: the version's commit is
 * the seven conditional steps RADOS takes ({@code TakeoverCommit}), with the base's lock.
 */
class SharedStripesStepsTest extends SharedStripesTest {
  @Override
  Class<?>[] interfaces(BlobStore store) {
    return new Class<?>[] {BlobStore.class, PlacementAware.class, InProcess.class};
  }
}
