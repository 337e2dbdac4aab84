package io.blobfs.namespace;

import io.blobfs.store.StoreLimits;
import io.blobfs.store.memory.InMemoryBlobStore;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * {@link NamespaceSoak} on the in-memory store, with its transactions (Týr's path) and
 * with them hidden (RADOS' path): 5 s each by default, {@code -Dblobfs.soak=true} for the
 * long run.
 */
class NamespaceSoakTest {
  @ParameterizedTest(name = "transactional={0}")
  @ValueSource(booleans = {true, false})
  void nothingIsLostCorruptedOrLeftOver(boolean transactional) throws Exception {
    InMemoryBlobStore store =
        new InMemoryBlobStore("soak", new StoreLimits(1024, 1L << 30, Integer.MAX_VALUE));
    NamespaceSoak.run("memory" + (transactional ? "" : " without transactions"), store,
        transactional, NamespaceSoak.Config.fromSystemProperties(5)).assertNoFailures();
  }
}
