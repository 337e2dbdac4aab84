package io.blobfs.namespace;

import io.blobfs.namespace.FileRecord.Mark;
import io.blobfs.store.TransactionConflictException;
import java.io.IOException;
import java.util.Optional;

/**
 * Finishes a file rename that has committed ({@link MarkedMove}: its source is marked
 * {@link Mark#MOVED}): the destination's incoming record is made plain, then the source
 * deleted, each conditionally on the version read. The commit is final, so anyone may do
 * it: the mover itself, the settler of its lock ({@link MoveSettler}), a reader that meets
 * the moved source ({@link BlobNamespace#readRecord}). All three go through here.
 *
 * <p>Once the move committed, the destination is the file's only name: the source,
 * marked moved, is hidden from readers and kept only until the destination is seen
 * holding the file or no longer being this move's incoming record. Nothing removes or
 * changes an incoming record while its source is moved with the same token, except
 * making it plain (a finisher): no settler judges it (fact I), no create takes it for
 * dead (its source is moved). So a destination that is no longer this move's incoming
 * record changed after the commit: made plain, or then deleted, overwritten or renamed
 * on through the name readers saw. Either way the file's fate follows the destination,
 * and the moved source names nothing: it is deleted. Before, a finisher that found the
 * destination no longer holding the file kept the source for good with a warning, and
 * the old name could never be made again (fourth review: an inline delete of the new
 * name racing a settler, or a mover that resumed without its lock).
 */
final class CommittedMove {
  private CommittedMove() {}

  /**
   * Finishes the committed move whose source {@code fromKey} was read {@code moved}.
   * {@code incoming} is the destination as its finisher already knows it (the mover: its
   * own record, with its inline bytes); empty to read it here.
   */
  static void finish(BlobNamespace ns, String fromKey, VersionedRecord moved,
      Optional<VersionedRecord> incoming) throws IOException {
    FileRecord src = moved.record();
    String toKey = src.moveKey();
    Optional<VersionedRecord> dst = incoming.isPresent() ? incoming
        : ns.readStored(toKey, true);
    if (dst.isPresent() && isOwnIncoming(dst.get().record(), fromKey, src)) {
      try {
        ns.calls().putIfVersion(toKey, dst.get().record().unmarked().encode(),
            dst.get().version());
      } catch (TransactionConflictException changed) {
        // made plain by another finisher, or changed since through the name readers see
      }
    }
    // The destination holds the file now, or changed after the commit (see above): either
    // way the moved source names nothing any more.
    try {
      ns.calls().deleteIfVersion(fromKey, moved.version());
    } catch (TransactionConflictException gone) {
      // removed by another finisher meanwhile
    }
  }

  /** Whether {@code r} is the incoming record that the moved source {@code src} commits. */
  private static boolean isOwnIncoming(FileRecord r, String fromKey, FileRecord src) {
    return r.is(Mark.INCOMING, fromKey, src.fileId(), src.moveToken());
  }
}
