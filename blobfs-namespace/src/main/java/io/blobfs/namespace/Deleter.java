package io.blobfs.namespace;

import io.blobfs.store.BlobMutation;
import io.blobfs.store.StoreFullException;
import io.blobfs.store.TransactionConflictException;
import java.io.IOException;
import java.nio.file.DirectoryNotEmptyException;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

/**
 * Deletes of files and directories over the flat store. A name is deleted only if it still
 * holds the record read, and a file's data only once the name that held it is gone: a
 * file renamed away meanwhile keeps its data, and one replaced meanwhile is read again
 * and deleted as it is now. With transactions, a directory's names go in one transaction
 * if they fit in one, else in chunks of the store's commit limit, each atomic: a delete
 * cut off part-way leaves the names of the chunks not yet committed, each whole, and is
 * finished by deleting again.
 */
final class Deleter {
  private final BlobNamespace ns;

  Deleter(BlobNamespace ns) {
    this.ns = ns;
  }

  /** {@link BlobNamespace#delete}. */
  boolean delete(FsPath path, boolean recursive) throws IOException {
    ns.layout().checkPath(path);
    if (path.isRoot()) {
      boolean empty = ns.calls().firstKeys(ns.layout().dirPrefix(path), 1).isEmpty();
      if (empty) {
        return true;
      }
      if (!recursive) {
        throw new DirectoryNotEmptyException("/");
      }
      return false;
    }
    String key = ns.layout().recordKey(path);
    for (int attempt = 1; ; attempt++) {
      Optional<VersionedRecord> file = ns.readRecord(key, false);
      if (file.isPresent()) {
        TransactionConflictException lost = deleteFile(key, file.get(), path, null);
        if (lost == null) {
          break;
        }
        if (attempt < BlobNamespace.RACE_ATTEMPTS) {
          continue;
        }
        throw BlobNamespace.lostRace("delete " + path, lost);
      }
      if (!ns.pending().covers(path) && !ns.isDirectory(path)) {
        return false;
      }
      if (!recursive && !ns.pending().childNames(path).isEmpty()) {
        throw new DirectoryNotEmptyException(path.toString());
      }
      if (recursive) {
        // A rename or delete cut off part-way below is finished first, so that its intent
        // does not outlive its source and act on a later directory of the same name.
        DirectoryMove.finishAtOrUnder(ns, ns.renamer(), path, DirectoryMove.Live.REFUSE);
      }
      deleteDirectory(path, recursive);
      break;
    }
    ns.pending().removeAtOrUnder(path);
    ns.keepVisible(path.parent());
    return true;
  }

  /**
   * Deletes one file's name if it still holds {@code read}, then its data. Without
   * transactions under its lock ({@link DataLocks#takeForReplace}), so that no rename of
   * it is under way or cut off meanwhile: deleting the data of a file that a rename's copy
   * names too would leave that name without data. Returns the conflict if the name
   * changed after it was read (nothing deleted), else null.
   */
  private TransactionConflictException deleteFile(String key, VersionedRecord read,
      FsPath path, DirectoryMove.Running running) throws IOException {
    DataLocks.Lock lock = null;
    if (ns.locksNames(read)) {
      DataLocks.Held taken;
      try {
        // one file's delete holds nothing; a directory's holds its intent (Patience)
        taken = ns.locks().takeForReplace(key, read, path, running == null
            ? DataLocks.Patience.OUTWAIT : DataLocks.Patience.BOUNDED);
      } catch (StoreFullException full) {
        // A full store takes no lock, and deletes must still free space: without it, as
        // long as no rename of this file was cut off (that needs writes to settle).
        ns.locks().refuseIfInterrupted(read.record().fileId(), path, full);
        taken = new DataLocks.Held(null, false);
      }
      if (taken.changed()) {
        return new TransactionConflictException(path + " changed after it was read");
      }
      lock = taken.lock();
    }
    boolean willLeft = false;
    try {
      if (running != null) {
        running.keepAlive(); // taking the lock may have waited: a stalled delete stops here
      }
      long version = read.version();
      if (lock == null && ns.calls().transactional() && read.record().isMapped()) {
        // With transactions the will goes with the name's delete (see fence for why).
        long nonce = DataLocks.nonce();
        List<BlobMutation> tx = new ArrayList<>();
        tx.add(new BlobMutation.Delete(key, version));
        tx.addAll(ns.locks().willWithDelete(key, read.record(), path, nonce));
        ns.calls().commit(tx);
        ns.deleteData(read.record());
        ns.locks().releaseWill(read.record().fileId(), nonce);
        return null;
      }
      if (lock != null && read.record().isMapped()) {
        version = fence(key, read);
        lock = ns.locks().writeWill(lock, key, version, read.record());
        willLeft = true;
      }
      try {
        ns.calls().deleteIfVersion(key, version);
      } catch (TransactionConflictException changed) {
        // The name changed after the fence (a writer's dropDues re-put it): the delete did
        // not apply, so its will is void and goes with the lock now (review must-fix 1).
        // Left, the retry waited on it for SWEEPER_WAIT and failed. Kept only if the name
        // no longer holds the file (a delete of ours applied, its answer lost and the
        // retry conflicting): then it is what finishes the data.
        Optional<VersionedRecord> now = ns.readStored(key, false);
        willLeft = willLeft && (now.isEmpty()
            || !now.get().record().fileId().equals(read.record().fileId()));
        throw changed;
      }
      ns.deleteDataUnder(read.record(), lock);
      willLeft = false;
      return null;
    } catch (TransactionConflictException lost) {
      return lost;
    } finally {
      // A will stays until the data is gone: whoever meets it expired finishes (or voids) it.
      if (lock != null && !willLeft) {
        ns.locks().release(lock, key); // a taken-over adoption may have to stay (S1)
      }
    }
  }

  /**
   * Before the delete of a mapped record (its map borrows other ids' stripes, or it owes a
   * cleanup's dues) removes the name, without transactions: the record put again as
   * stored, conditionally on the version read, and the version it then has returned. WHY
   * (the delete leak, issue 16, DESIGN §2.4): a delete cut between the name's removal and
   * its data's left the borrowed keys ADOPTED and named by no record, which no sweep takes.
   * So the delete first writes its {@link DataLocks.Will} into the lock it holds, and
   * whoever meets that will expired carries it out if the name no longer holds the version
   * the delete was to remove. That test is sound only if the delete is the one change that
   * version allows: a writer of a new version over this record that lost its lock while
   * its put (conditional on the version read) was in flight could otherwise apply it
   * after the will, name the borrowed keys, and see them deleted by the will. Put again,
   * the record has a version only this client knows, and that put fails from now on. Two
   * reads and one put more per delete of a mapped record (the will: one read and one put
   * more); plain records are as before.
   */
  private long fence(String key, VersionedRecord read) throws IOException {
    Optional<VersionedRecord> stored = ns.readStored(key, true);
    if (stored.isEmpty() || stored.get().version() != read.version()) {
      throw new TransactionConflictException(key + " changed after it was read");
    }
    ns.calls().putIfVersion(key, stored.get().record().encode(), read.version());
    Optional<VersionedRecord> fenced = ns.readStored(key, false);
    if (fenced.isEmpty() || !fenced.get().record().fileId().equals(read.record().fileId())
        || fenced.get().version() == read.version()) {
      throw new TransactionConflictException(key + " changed after it was read");
    }
    return fenced.get().version();
  }

  private void deleteDirectory(FsPath path, boolean recursive) throws IOException {
    String prefix = ns.layout().dirPrefix(path);
    if (!recursive) {
      for (String key : ns.calls().firstKeys(prefix, 2)) {
        if (!key.equals(prefix)) {
          throw new DirectoryNotEmptyException(path.toString());
        }
      }
      ns.calls().delete(prefix);
      return;
    }
    // Without transactions the delete goes name by name: its intent, written first and
    // removed last, lets whoever meets it finish a delete cut off part-way (finish()). A
    // store failure leaves it there; a lost race is answered, so it goes.
    DirectoryMove.Running intent = null;
    if (!ns.calls().transactional()) {
      try {
        intent = DirectoryMove.begin(ns,
            RenameIntent.startDelete(path, DirectoryMove.Running.expiry(ns)));
      } catch (StoreFullException full) {
        // A full store still deletes: without the intent, a delete cut off is finished
        // only by deleting again.
      }
    }
    for (int attempt = 1; ; attempt++) {
      TransactionConflictException lost = deleteAllUnder(prefix, intent);
      if (lost == null || attempt == BlobNamespace.RACE_ATTEMPTS) {
        if (intent != null) {
          intent.end();
        }
        if (lost != null) {
          throw BlobNamespace.lostRace("delete " + path, lost);
        }
        return;
      }
    }
  }

  /**
   * Finishes a recursive delete that was cut off part-way (without transactions): removes
   * what is still under its directory, except names written after the delete started (a
   * file created there since, by its record's time; one renamed there since keeps the
   * time it was written, and goes). Each file goes under its lock, as in a delete; a name
   * that changes meanwhile is left alone. The caller removes the intent.
   */
  void finish(RenameIntent intent, DirectoryMove.Running running) throws IOException {
    for (String key : ns.scanAll(ns.layout().dirPrefix(intent.src()))) {
      running.keepAlive();
      Optional<VersionedRecord> read = ns.readRecord(key, false);
      if (read.isEmpty()) {
        ns.removedDeadIncoming(key); // see deleteAllUnder
        continue;
      }
      if (read.get().record().modificationTime() > intent.startedMillis()) {
        continue;
      }
      if (KeyLayout.isMarker(key)) {
        try {
          ns.calls().deleteIfVersion(key, read.get().version());
        } catch (TransactionConflictException changed) {
          // made again meanwhile: kept
        }
      } else {
        deleteFile(key, read.get(), ns.layout().pathOf(key), running);
      }
    }
    ns.pending().removeAtOrUnder(intent.src());
  }

  /**
   * One pass of a recursive delete: each name goes only if it still holds the record read,
   * and data only with its name. Returns the conflict if a name changed after it was read
   * (the pass is then to be repeated on what is there now), else null.
   */
  private TransactionConflictException deleteAllUnder(String prefix,
      DirectoryMove.Running intent) throws IOException {
    if (ns.calls().transactional()) {
      return deleteInChunks(prefix);
    }
    // Without transactions, name by name, each file under its lock with its data.
    TransactionConflictException lost = null;
    for (String key : ns.scanAll(prefix)) {
      if (intent != null) {
        intent.keepAlive();
      }
      if (KeyLayout.isMarker(key)) {
        ns.calls().delete(key);
        continue;
      }
      Optional<VersionedRecord> read = ns.readRecord(key, false);
      if (read.isPresent()) {
        TransactionConflictException e =
            deleteFile(key, read.get(), ns.layout().pathOf(key), intent);
        lost = e != null ? e : lost;
      } else {
        // Read as absent, but the key may still be there: the incoming record of a move
        // that can never commit (its fenced mover died before its rollback). Left, it kept
        // the deleted directory in existence (fifth review, S1); one whose move may still
        // commit is left to that move (the directory rename or delete is not atomic).
        ns.removedDeadIncoming(key);
      }
    }
    return lost;
  }

  /**
   * The delete of one name as read: a marker whatever it holds, a record only at the
   * version read (its record added to {@code files}, null for a marker). Empty if the
   * name is gone since the scan.
   */
  private Optional<BlobMutation.Delete> deleteOf(String key, List<FileRecord> files)
      throws IOException {
    if (KeyLayout.isMarker(key)) {
      files.add(null);
      return Optional.of(new BlobMutation.Delete(key, BlobMutation.ANY_VERSION));
    }
    Optional<VersionedRecord> read = ns.readRecord(key, false);
    if (read.isEmpty()) {
      return Optional.empty();
    }
    files.add(read.get().record());
    return Optional.of(new BlobMutation.Delete(key, read.get().version()));
  }

  /**
   * The pass with transactions, streaming the scan: the names go in one transaction when
   * they fit in one (the store's commit limit), else a chunk is committed each time the
   * limit is reached and its files' data removed, so only one page of keys and one chunk
   * are held. A chunk that conflicts ends the pass; the chunks before it stay deleted.
   */
  private TransactionConflictException deleteInChunks(String prefix) throws IOException {
    CommitBatch batch = new CommitBatch(ns.calls().transactions(),
        ns.calls().store().limits().maxCommitBytes());
    List<FileRecord> files = new ArrayList<>();
    List<Long> wills = new ArrayList<>(); // per file, its will's nonce (null: none)
    EntryIterator<String> keys = ns.scanKeys(prefix);
    while (keys.hasNext()) {
      String key = keys.next();
      List<FileRecord> read = new ArrayList<>(1);
      Optional<BlobMutation.Delete> d = deleteOf(key, read);
      if (d.isEmpty()) {
        continue;
      }
      List<BlobMutation> group = new ArrayList<>(List.of(d.get()));
      Long will = null;
      if (read.get(0) != null && read.get(0).isMapped()) {
        // A mapped record's will goes with its name's delete (see fence for why).
        will = DataLocks.nonce();
        group.addAll(ns.locks().willWithDelete(key, read.get(0), ns.layout().pathOf(key),
            will));
      }
      if (!batch.fits(group)) {
        TransactionConflictException lost = commitChunk(batch, files, wills);
        if (lost != null) {
          return lost;
        }
      }
      batch.add(group);
      files.addAll(read);
      wills.add(will);
    }
    return commitChunk(batch, files, wills);
  }

  /** Commits one chunk, then removes its files' data; returns a conflict, else null. */
  private TransactionConflictException commitChunk(CommitBatch batch, List<FileRecord> files,
      List<Long> wills) throws IOException {
    try {
      ns.calls().commit(batch.with(List.of()));
    } catch (TransactionConflictException e) {
      return e;
    }
    for (int i = 0; i < files.size(); i++) {
      FileRecord file = files.get(i);
      if (file != null) {
        ns.deleteData(file);
        if (wills.get(i) != null) {
          ns.locks().releaseWill(file.fileId(), wills.get(i));
        }
      }
    }
    wills.clear();
    batch.clear();
    files.clear();
    return null;
  }
}
