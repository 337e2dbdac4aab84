package io.blobfs.namespace;

import io.blobfs.store.BlobMutation;
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
 * and deleted as it is now.
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
        try {
          ns.calls().deleteIfVersion(key, file.get().version());
        } catch (TransactionConflictException lost) {
          if (attempt < BlobNamespace.RACE_ATTEMPTS) {
            continue;
          }
          throw BlobNamespace.lostRace("delete " + path, lost);
        }
        ns.deleteData(file.get().record());
        break;
      }
      if (!ns.pending().covers(path) && !ns.isDirectory(path)) {
        return false;
      }
      if (!recursive && !ns.pending().childNames(path).isEmpty()) {
        throw new DirectoryNotEmptyException(path.toString());
      }
      deleteDirectory(path, recursive);
      break;
    }
    ns.pending().removeAtOrUnder(path);
    ns.keepVisible(path.parent());
    return true;
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
    for (int attempt = 1; ; attempt++) {
      TransactionConflictException lost = deleteAllUnder(prefix);
      if (lost == null) {
        return;
      }
      if (attempt == BlobNamespace.RACE_ATTEMPTS) {
        throw BlobNamespace.lostRace("delete " + path, lost);
      }
    }
  }

  /**
   * One pass of a recursive delete: each name goes only if it still holds the record read,
   * and data only with its name. Returns the conflict if a name changed after it was read
   * (the pass is then to be repeated on what is there now), else null.
   */
  private TransactionConflictException deleteAllUnder(String prefix) throws IOException {
    List<BlobMutation.Delete> deletes = new ArrayList<>();
    List<FileRecord> files = new ArrayList<>();
    for (String key : ns.scanAll(prefix)) {
      if (KeyLayout.isMarker(key)) {
        deletes.add(new BlobMutation.Delete(key, BlobMutation.ANY_VERSION));
        files.add(null);
        continue;
      }
      Optional<VersionedRecord> read = ns.readRecord(key, false);
      if (read.isPresent()) {
        deletes.add(new BlobMutation.Delete(key, read.get().version()));
        files.add(read.get().record());
      }
    }
    List<FileRecord> gone = new ArrayList<>(files.size());
    TransactionConflictException lost = null;
    if (ns.calls().transactional()) {
      try {
        ns.calls().commit(List.copyOf(deletes));
        gone = files;
      } catch (TransactionConflictException e) {
        return e;
      }
    } else {
      for (int i = 0; i < deletes.size(); i++) {
        BlobMutation.Delete d = deletes.get(i);
        if (d.ifVersion() == BlobMutation.ANY_VERSION) {
          ns.calls().delete(d.key());
          continue;
        }
        try {
          ns.calls().deleteIfVersion(d.key(), d.ifVersion());
          gone.add(files.get(i));
        } catch (TransactionConflictException e) {
          lost = e;
        }
      }
    }
    for (FileRecord file : gone) {
      if (file != null) {
        ns.deleteData(file);
      }
    }
    return lost;
  }
}
