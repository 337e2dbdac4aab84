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
 * <p>The source is deleted only once the destination is seen holding the file: this
 * move's incoming record made plain (by this call or another finisher), or the file's
 * record there under a later rename's mark. A moved source is the last record that
 * names the file when the destination has lost it; deleting it then would leave the file
 * with no record at all, and the orphan sweeper would delete its data. With every client
 * on this version that state is unreachable (the destination changes only under the
 * file's lock, which a mover or settler releases only once the source is gone), so
 * meeting it means a defect or a client that ignores the lock: the source is kept,
 * hidden from readers as every moved source is, its data out of the sweeper's reach
 * (the sweeper counts every stored record as naming its file), and a warning names both
 * keys. Before, every finisher deleted the source whatever the destination held: a
 * settler that had removed a live incoming record (third review) left no record at all.
 */
final class CommittedMove {
  private static final System.Logger LOG = System.getLogger(CommittedMove.class.getName());

  private CommittedMove() {}

  /**
   * Finishes the committed move whose source {@code fromKey} was read {@code moved}.
   * {@code incoming} is the destination as its finisher already knows it (the mover: its
   * own record, with its inline bytes); empty to read it here. Returns false if the
   * source was kept because the destination does not hold the file (see above).
   */
  static boolean finish(BlobNamespace ns, String fromKey, VersionedRecord moved,
      Optional<VersionedRecord> incoming) throws IOException {
    FileRecord src = moved.record();
    String toKey = src.moveKey();
    Optional<VersionedRecord> dst = incoming.isPresent() ? incoming
        : ns.readStored(toKey, true);
    boolean holds;
    if (dst.isPresent() && isOwnIncoming(dst.get().record(), fromKey, src)) {
      try {
        ns.calls().putIfVersion(toKey, dst.get().record().unmarked().encode(),
            dst.get().version());
        holds = true;
      } catch (TransactionConflictException changed) {
        // made plain by another finisher, or changed since by a later rename of it
        holds = holdsFile(ns.readStored(toKey, false), src);
      }
    } else {
      holds = holdsFile(dst, src);
    }
    if (!holds) {
      Optional<VersionedRecord> now = ns.readStored(fromKey, false);
      if (now.isEmpty() || now.get().version() != moved.version()) {
        return true; // finished by someone else meanwhile: the destination changed since
      }
      LOG.log(System.Logger.Level.WARNING, fromKey + " is the source of a committed rename"
          + " to " + toKey + ", which no longer holds its file " + src.fileId() + ": the"
          + " source is kept (readers take it for gone) so that its data is not swept;"
          + " restore the name by hand");
      return false;
    }
    try {
      ns.calls().deleteIfVersion(fromKey, moved.version());
    } catch (TransactionConflictException gone) {
      // removed by another finisher meanwhile
    }
    return true;
  }

  /** Whether {@code r} is the incoming record that the moved source {@code src} commits. */
  private static boolean isOwnIncoming(FileRecord r, String fromKey, FileRecord src) {
    return r.is(Mark.INCOMING, fromKey, src.fileId(), src.moveToken());
  }

  /**
   * Whether the destination, read after it changed from this move's incoming record (or
   * was not that record when read), holds the moved file: plain, or marked by a later
   * rename of it (moving on, or moved on: then that rename's destination holds it). An
   * incoming record is no name: this move's own cannot be there again once changed (a
   * mover creates it once), and another move's is not this file's name.
   */
  private static boolean holdsFile(Optional<VersionedRecord> dst, FileRecord src) {
    return dst.isPresent() && dst.get().record().fileId().equals(src.fileId())
        && dst.get().record().mark() != Mark.INCOMING;
  }
}
