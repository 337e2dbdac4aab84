package io.blobfs.fuse;

import io.blobfs.store.BlobStore;
import io.blobfs.store.InProcess;
import io.blobfs.store.PlacementAware;

/** Review: {@link SharedStripesReviewTest} without transactions (RADOS's seven steps). */
class SharedStripesReviewStepsTest extends SharedStripesReviewTest {
  @Override
  Class<?>[] interfaces(BlobStore store) {
    return new Class<?>[] {BlobStore.class, PlacementAware.class, InProcess.class};
  }
}
