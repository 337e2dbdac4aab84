package io.blobfs.namespace;

import java.io.IOException;
import java.time.Duration;
import java.util.concurrent.TimeUnit;

/**
 * Clients with a 2 s rename lease and a 300 ms fixed wait (instead of 90 s and 60 s), and a
 * client that dies holding a file's lock: the dead-holder tests of {@link DataLocks.Patience}
 * without waiting minutes.
 */
abstract class DeadHolderFixture extends StalledMoveFixture {
  static final Duration WAIT = Duration.ofMillis(300);
  static final NamespaceOptions SHORT = new NamespaceOptions(4096, 1024, 4096, 256,
      false, 3).withRenameLease(Duration.ofSeconds(2));

  /** A client of the store with {@code options} and the short wait. */
  BlobNamespace client(NamespaceOptions options) {
    BlobNamespace ns = new BlobNamespace(faults().store(), options, StoreCallCounters.NONE);
    ns.locks().waitForTests(WAIT);
    return ns;
  }

  /** {@code path}'s lock taken as a delete takes it, by a client that never comes back. */
  String diedHoldingTheLockOf(FsPath path, Duration lease) throws IOException {
    BlobNamespace dead = client(SHORT.withRenameLease(lease));
    String id = dead.probe(path).get().record().fileId();
    dead.locks().takeForRename(id, path, null);
    return id;
  }

  static long millisSince(long startNanos) {
    return TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - startNanos);
  }
}
