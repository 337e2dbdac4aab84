package io.blobfs.namespace;

import java.io.IOException;
import java.util.Optional;

/**
 * What a marked move ({@link MarkedMove}, {@link MarkedReplace}) reads after a store call
 * whose outcome is unknown (a timeout: it may or may not have applied): the names, and
 * its lock. If such a read fails too, the move is undecided: the caller is told that its
 * outcome could not be read back, the lock is kept, and its next taker settles the move
 * once the lease runs out. A failed read of the lock is one of these like a failed read of
 * a name (before, the raw store error of the lock's read reached the caller: review of
 * rados-outcome, should 6).
 */
final class OutcomeReadBack {
  private final BlobNamespace ns;
  private final DataLocks.Lock lock;
  private final String what;
  private final String readersSee;

  /**
   * For the move {@code what} under {@code lock}; {@code readersSee} says what readers
   * see meanwhile, for the message.
   */
  OutcomeReadBack(BlobNamespace ns, DataLocks.Lock lock, String what, String readersSee) {
    this.ns = ns;
    this.lock = lock;
    this.what = what;
    this.readersSee = readersSee;
  }

  /** The record at {@code key}, read after {@code unknown}. */
  Optional<VersionedRecord> read(String key, IOException unknown) throws IOException {
    try {
      return ns.readStored(key, false);
    } catch (IOException e) {
      throw notReadBack(unknown, e);
    }
  }

  /** Whether the lock is still the move's, read after {@code unknown}. */
  boolean lockHeld(IOException unknown) throws IOException {
    try {
      return ns.locks().stillHeld(lock);
    } catch (IOException e) {
      throw notReadBack(unknown, e);
    }
  }

  private IOException notReadBack(IOException unknown, IOException e) {
    unknown.addSuppressed(e);
    return new IOException(what + " failed part-way and its outcome could not be read"
        + " back: readers see " + readersSee + "; the next operation on the file (after its"
        + " lock's lease) completes the rename or takes it back", unknown);
  }
}
