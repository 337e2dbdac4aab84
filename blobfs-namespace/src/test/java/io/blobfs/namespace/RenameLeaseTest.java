package io.blobfs.namespace;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.blobfs.store.StoreLimits;
import io.blobfs.store.memory.InMemoryBlobStore;
import java.time.Duration;
import org.junit.jupiter.api.Test;

/**
 * The lease of a rename's lock and of a directory operation's intent: its own setting
 * (fifth review, S2), a few times RADOS's 30 s operation timeout by default. Before, it
 * was fixed at 30 s (the writer lease, at least a minute outside tests, never shortened
 * it), so a store call that timed out at 30 s could outlive it.
 */
class RenameLeaseTest {
  private static final NamespaceOptions OPTIONS =
      new NamespaceOptions(4096, 1024, 4096, 256, false, 3);

  @Test
  void theRenameLeaseIsItsOwnSetting() {
    assertEquals(Duration.ofSeconds(90), lease(OPTIONS));
    assertEquals(Duration.ofMinutes(5), lease(OPTIONS.withRenameLease(Duration.ofMinutes(5))));
    assertEquals(Duration.ofSeconds(2), lease(OPTIONS.withRenameLease(Duration.ofSeconds(2))));
  }

  @Test
  void aShorterWriterLeaseStillShortensIt() {
    assertEquals(Duration.ofMillis(40), lease(OPTIONS.withWriterLease(Duration.ofMillis(40))));
    assertEquals(Duration.ofMillis(40), lease(OPTIONS.withWriterLease(Duration.ofMillis(40))
        .withRenameLease(Duration.ofMinutes(5))));
  }

  private static Duration lease(NamespaceOptions options) {
    InMemoryBlobStore store =
        new InMemoryBlobStore("lease", new StoreLimits(1024, 1L << 30, Integer.MAX_VALUE));
    return new BlobNamespace(store, options, StoreCallCounters.NONE).locks().renameLease();
  }
}
