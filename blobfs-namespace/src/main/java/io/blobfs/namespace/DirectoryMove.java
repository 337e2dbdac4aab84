package io.blobfs.namespace;

import io.blobfs.store.BlobMutation;
import io.blobfs.store.PutMode;
import io.blobfs.store.StoreLimits;
import io.blobfs.store.TransactionConflictException;
import io.blobfs.store.TransactionalBlobStore;
import io.blobfs.store.VersionedBytes;
import java.io.FileNotFoundException;
import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

/**
 * A directory rename on a store with transactions.
 *
 * <p>A directory whose moves fit in one transaction (the store's
 * {@link StoreLimits#maxCommitBytes}) is renamed in one: atomically, as it always was. A
 * larger one is moved in chunks of that size, each chunk one transaction that moves whole
 * files and only if their records are still the ones read, so every file is under exactly
 * one of its names at every moment; readers see some names under the source and the rest
 * under the destination while it runs. The first chunk also creates a
 * {@link RenameIntent}, the last one removes it, so a rename cut off in between (a crash,
 * a failed store call) is recorded, and whoever meets the intent finishes it
 * ({@link #finishAtOrUnder}): the next rename or recursive delete of that directory or of
 * one above it, or {@link BlobNamespace#finishInterruptedRenames}. Several may finish the
 * same rename at once: each file's move is conditional, so each moves once.
 *
 * <p>Memory: one scan page of keys, and one chunk's mutations with their source and target
 * keys (the chunk is bounded by the store's commit limit), whatever the directory's size.
 */
final class DirectoryMove {
  /** Left-behind paths named in the error; the rest are counted. */
  private static final int NAMED = 5;

  private final BlobNamespace ns;
  private final Renamer renamer;
  private final RenameIntent intent;
  private final String intentKey;
  private final List<String[]> chunkMoves = new ArrayList<>();
  private final List<FsPath> leftBehind = new ArrayList<>();
  private long leftCount;

  private DirectoryMove(BlobNamespace ns, Renamer renamer, RenameIntent intent) {
    this.ns = ns;
    this.renamer = renamer;
    this.intent = intent;
    this.intentKey = ns.layout().renameIntentKey(intent.src());
  }

  /** Renames directory {@code src} to {@code dst} (both checked by the caller). */
  static void rename(BlobNamespace ns, Renamer renamer, FsPath src, FsPath dst)
      throws IOException {
    new DirectoryMove(ns, renamer, RenameIntent.start(src, dst)).run(false);
  }

  /**
   * Finishes every interrupted rename of {@code dir} or of a directory below it, and
   * returns them: moves what is still under each source to its destination, then removes
   * the intent.
   */
  static List<RenameIntent> finishAtOrUnder(BlobNamespace ns, Renamer renamer, FsPath dir)
      throws IOException {
    List<RenameIntent> finished = new ArrayList<>();
    for (String key : ns.scanAll(ns.layout().renameIntentPrefix(dir))) {
      Optional<RenameIntent> found = read(ns, key);
      if (found.isPresent() && found.get().src().isAtOrUnder(dir)) {
        new DirectoryMove(ns, renamer, found.get()).run(true);
        finished.add(found.get());
      }
    }
    return finished;
  }

  /** The intent stored under {@code key}, if any. */
  private static Optional<RenameIntent> read(BlobNamespace ns, String key) throws IOException {
    return readVersioned(ns, key).map(v -> v.intent);
  }

  private record Stored(RenameIntent intent, long version) {}

  private static Optional<Stored> readVersioned(BlobNamespace ns, String key)
      throws IOException {
    VersionedBytes v;
    try {
      v = ns.calls().readWithVersion(key,
          3 * ns.calls().store().limits().maxKeyBytes() + 256);
    } catch (FileNotFoundException gone) {
      return Optional.empty();
    }
    return Optional.of(new Stored(RenameIntent.decode(key, v.bytes()), v.version()));
  }

  /**
   * One pass over the source. {@code resumed}: the intent exists already (finishing an
   * interrupted rename), so every batch is a chunk and none creates it.
   */
  private void run(boolean resumed) throws IOException {
    FsPath src = intent.src();
    BlobMutation.Put create = new BlobMutation.Put(intentKey, intent.encode(), PutMode.CREATE);
    TransactionalBlobStore tx = ns.calls().transactions();
    // Room for the intent's creation and removal, so the first and last chunks fit too.
    long reserve = tx.commitBytes(List.of(create, new BlobMutation.Delete(intentKey, 1)));
    CommitBatch batch = new CommitBatch(tx, tx.limits().maxCommitBytes() - reserve);
    boolean chunked = resumed;
    EntryIterator<String> keys = ns.scanKeys(ns.layout().dirPrefix(src));
    while (keys.hasNext()) {
      String from = keys.next();
      String to = targetKey(from);
      Optional<VersionedRecord> read = ns.readRecord(from, true);
      if (read.isEmpty()) {
        continue; // deleted or moved since the scan
      }
      List<BlobMutation> move = renamer.moveMutations(from, to, read.get());
      if (!batch.fits(move)) {
        if (!chunked) {
          checkEveryTarget(); // bad input must change nothing, as in one transaction
          commitFirst(batch, create);
          chunked = true;
        } else if (currentVersion().isEmpty()) {
          return; // finished by another client meanwhile
        } else {
          commitChunk(batch, List.of());
        }
        batch.clear();
        chunkMoves.clear();
      }
      batch.add(move);
      chunkMoves.add(new String[] {from, to});
    }
    if (!chunked) {
      renamer.commitOrExplain(batch.with(List.of()), src, intent.dst());
      return;
    }
    Optional<Long> version = currentVersion();
    if (version.isEmpty()) {
      return;
    }
    commitChunk(batch, List.of(new BlobMutation.Delete(intentKey, version.get())));
    if (leftCount > 0) {
      throw new IOException(intent + " moved every name but " + leftCount + " under " + src
          + " whose destinations were taken, or that kept changing, while it ran (" + leftBehind
          + (leftCount > leftBehind.size() ? ", ..." : "") + "); each file is under exactly"
          + " one of its names: move or remove them, then rename them on their own");
    }
  }

  private String targetKey(String from) {
    FsPath moved = ns.layout().pathOf(from).rebase(intent.src(), intent.dst());
    return KeyLayout.isMarker(from) ? ns.layout().dirPrefix(moved) : ns.layout().recordKey(moved);
  }

  /** Reads every key once more, so a target key the store refuses fails before any step. */
  private void checkEveryTarget() throws IOException {
    EntryIterator<String> keys = ns.scanKeys(ns.layout().dirPrefix(intent.src()));
    while (keys.hasNext()) {
      targetKey(keys.next());
    }
  }

  /** The first chunk creates the intent; if it conflicts, nothing has changed yet. */
  private void commitFirst(CommitBatch batch, BlobMutation.Put create) throws IOException {
    try {
      ns.calls().commit(batch.with(List.of(create)));
    } catch (TransactionConflictException e) {
      throw BlobNamespace.lostRace(intent.toString(), e);
    }
  }

  /**
   * A later chunk. If it conflicts (a file of it changed since it was read, its
   * destination was taken, or the intent was removed), its files are moved one by one,
   * each re-read, so one busy name does not hold up the others.
   */
  private void commitChunk(CommitBatch batch, List<BlobMutation> extra) throws IOException {
    try {
      ns.calls().commit(batch.with(extra));
      return;
    } catch (TransactionConflictException e) {
      // handled below, file by file
    }
    for (String[] m : chunkMoves) {
      moveOne(m[0], m[1]);
    }
    if (!extra.isEmpty()) {
      try {
        ns.calls().commit(extra);
      } catch (TransactionConflictException e) {
        // the intent was removed by another client that finished this rename
      }
    }
  }

  private void moveOne(String from, String to) throws IOException {
    for (int attempt = 1; attempt <= BlobNamespace.RACE_ATTEMPTS; attempt++) {
      Optional<VersionedRecord> read = ns.readRecord(from, true);
      if (read.isEmpty()) {
        return; // moved or deleted by someone else
      }
      try {
        ns.calls().commit(renamer.moveMutations(from, to, read.get()));
        return;
      } catch (TransactionConflictException e) {
        // changed again, or the destination is taken: read again
      }
    }
    if (leftBehind.size() < NAMED) {
      leftBehind.add(ns.layout().pathOf(from));
    }
    leftCount++;
  }

  /** The version of this rename's intent, or empty if it is gone or another rename's. */
  private Optional<Long> currentVersion() throws IOException {
    return readVersioned(ns, intentKey)
        .filter(s -> s.intent().id().equals(intent.id()))
        .map(Stored::version);
  }
}
