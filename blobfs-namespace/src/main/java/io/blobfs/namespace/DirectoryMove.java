package io.blobfs.namespace;

import io.blobfs.store.BlobAlreadyExistsException;
import io.blobfs.store.BlobMutation;
import io.blobfs.store.PutMode;
import io.blobfs.store.StoreLimits;
import io.blobfs.store.TransactionConflictException;
import io.blobfs.store.TransactionalBlobStore;
import io.blobfs.store.VersionedBytes;
import java.io.FileNotFoundException;
import java.io.IOException;
import java.nio.file.FileAlreadyExistsException;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

/**
 * A directory rename, with an intent record where it goes in several steps.
 *
 * <p><b>Without transactions</b> (RADOS) every directory rename writes its
 * {@link RenameIntent} first, then moves file by file, each move atomic and crash-safe on
 * its own (a {@link MarkedMove} under the file's lock, {@link Renamer#moveLocked}, settled
 * by {@link MoveSettler} if cut off), then removes the intent. A rename cut off part-way
 * is finished as below; the same rename retried finishes it and returns true, so a retry
 * never nests the rest under the destination.
 *
 * <p><b>With transactions</b>:
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
    if (ns.calls().transactional()) {
      new DirectoryMove(ns, renamer, RenameIntent.start(src, dst)).run(false);
    } else {
      new DirectoryMove(ns, renamer, RenameIntent.startLeased(src, dst, Running.expiry(ns)))
          .runWithoutTransactions(null);
    }
  }

  /**
   * Finishes every interrupted rename or delete of {@code dir} or of a directory below it,
   * and returns them: moves what is still under each source to its destination (or, for a
   * delete, removes what is still there and older than it), then removes the intent. One
   * whose operation still runs (its lease, without transactions) is handled as
   * {@code live} says.
   */
  static List<RenameIntent> finishAtOrUnder(BlobNamespace ns, Renamer renamer, FsPath dir,
      Live live) throws IOException {
    List<RenameIntent> finished = new ArrayList<>();
    IOException failed = null;
    // Without transactions a rename into the tree counts too (its destination at, under or
    // above dir): it is half done there as much as at its source, and acting on the
    // destination first would split it (renamed on) or bring back what is deleted. Those
    // intents are not under dir's prefix: every intent is read (there are few).
    boolean bothSides = !ns.calls().transactional();
    String prefix = bothSides ? ns.layout().renameIntentPrefix(FsPath.ROOT)
        : ns.layout().renameIntentPrefix(dir);
    for (String key : ns.scanAll(prefix)) {
      Optional<Stored> found = readVersioned(ns, key);
      if (found.isEmpty() || !touches(found.get().intent(), dir, bothSides)) {
        continue;
      }
      RenameIntent intent = found.get().intent();
      if (intent.claimed()) {
        // A claim has done nothing yet: once its lease has run out (its client died before
        // it could act) it is only removed; a live one is an operation starting.
        if (live == Live.FINISH || !intent.live(System.currentTimeMillis())) {
          dropClaim(ns, found.get());
          continue;
        }
        if (live == Live.LEAVE) {
          continue;
        }
        throw BlobNamespace.lostRace(intent.toString(), new TransactionConflictException(
            intent + " is starting"));
      }
      boolean running = live != Live.FINISH && intent.live(System.currentTimeMillis());
      Optional<Running> taken = running ? Optional.empty() : Running.takeOver(ns, found.get());
      if (taken.isEmpty()) {
        if (live == Live.LEAVE || live == Live.FINISH) {
          continue;
        }
        throw BlobNamespace.lostRace(intent.toString(), new TransactionConflictException(
            intent + " is under way"));
      }
      DirectoryMove move = new DirectoryMove(ns, renamer, intent);
      try {
        if (intent.isDelete()) {
          ns.deleter().finish(intent, taken.get());
          taken.get().end();
        } else if (ns.calls().transactional()) {
          move.run(true);
        } else {
          move.runWithoutTransactions(taken.get());
        }
      } catch (IOException e) {
        if (live == Live.REFUSE) {
          throw e;
        }
        // Recovery goes on with the others, and reports the first failure at the end.
        if (failed == null) {
          failed = e;
        } else {
          failed.addSuppressed(e);
        }
        continue;
      }
      finished.add(intent);
    }
    if (failed != null) {
      throw failed;
    }
    return finished;
  }

  /** Whether finishing what touches {@code dir} includes {@code intent}. */
  private static boolean touches(RenameIntent intent, FsPath dir, boolean bothSides) {
    if (intent.src().isAtOrUnder(dir)) {
      return true;
    }
    return bothSides && intent.dst() != null
        && (intent.dst().isAtOrUnder(dir) || dir.isAtOrUnder(intent.dst()));
  }

  /** What {@link #finishAtOrUnder} does with an intent whose operation still runs. */
  enum Live {
    /** A lost race ("retry"): the caller's own operation must not join in. */
    REFUSE,
    /** Left to its operation: recovery while clients may run. */
    LEAVE,
    /** Finished all the same: recovery while no client runs (tests' checkpoints). */
    FINISH
  }

  private static int bytes(FsPath p) {
    return p.toString().getBytes(java.nio.charset.StandardCharsets.UTF_8).length;
  }

  /** Removes a claim that did nothing, if it is still as read. */
  private static void dropClaim(BlobNamespace ns, Stored claim) throws IOException {
    try {
      ns.calls().deleteIfVersion(claim.key(), claim.version());
    } catch (TransactionConflictException e) {
      // confirmed by its stalled owner just now, or removed by another: not ours
    }
  }

  /**
   * Finishes the interrupted rename or delete of exactly {@code dir}, if its intent is
   * there (one read with transactions; without, a scan of the intents of {@code dir} and
   * below, whose keys are the operations' own), and returns it.
   */
  static Optional<RenameIntent> finishExactly(BlobNamespace ns, Renamer renamer, FsPath dir)
      throws IOException {
    boolean found = false;
    if (ns.calls().transactional()) {
      found = read(ns, ns.layout().renameIntentKey(dir)).isPresent();
    } else {
      for (String key : ns.scanAll(ns.layout().renameIntentPrefix(dir))) {
        found |= ns.layout().isIntentOf(key, dir);
      }
    }
    if (!found) {
      return Optional.empty();
    }
    return finishAtOrUnder(ns, renamer, dir, Live.REFUSE).stream()
        .filter(i -> i.src().equals(dir)).findFirst();
  }

  /**
   * Without transactions: the intent first (unless {@code resumed}, an interrupted
   * rename's, taken over), then each name moved on its own under its file's lock, the
   * intent's lease renewed as it goes, then the intent removed. A store failure leaves the
   * intent for whoever finishes the rename once its lease has run out; a destination taken
   * by someone else leaves that file under the source, named in the error once every other
   * name is moved.
   */
  private void runWithoutTransactions(Running resumed) throws IOException {
    Running running = resumed;
    if (running == null) {
      // Bad input must change nothing; a destination no longer than the source makes no
      // key longer, and spares a scan (on RADOS, a walk of the pool's names).
      if (bytes(intent.dst()) > bytes(intent.src())) {
        checkEveryTarget();
      }
      running = begin(ns, intent);
    }
    EntryIterator<String> keys = ns.scanKeys(ns.layout().dirPrefix(intent.src()));
    while (keys.hasNext()) {
      running.keepAlive();
      String from = keys.next();
      String to = targetKey(from);
      if (KeyLayout.isMarker(from)) {
        // A marker has no data and no lock: the target's made (or kept, from an earlier
        // attempt), then the source removed; either step may be repeated.
        ns.calls().put(to, FileRecord.directory(System.currentTimeMillis()).encode(),
            PutMode.OVERWRITE);
        ns.calls().delete(from);
        continue;
      }
      Optional<VersionedRecord> read = ns.readRecord(from, true);
      if (read.isEmpty()) {
        // deleted or moved since the scan; a dead move's incoming record left here would
        // keep the source directory in existence (as in Deleter)
        ns.removedDeadIncoming(from);
        continue;
      }
      try {
        // false: renamed or deleted meanwhile, so no longer in this directory
        renamer.moveLocked(from, to, read.get(), ns.layout().pathOf(from),
            ns.layout().pathOf(to), true, running);
      } catch (FileAlreadyExistsException taken) {
        leftBehind(from);
      }
    }
    running.end();
    throwIfLeftBehind();
  }

  /**
   * Without transactions, starts an operation: writes its claim under a key of its own,
   * then looks for any other intent of the same directory; if there is one, another rename
   * or delete of it runs or starts (a lost race: the claim is withdrawn), else the claim is
   * confirmed and the operation may act. Two that start together may both withdraw, never
   * both act: each looks only after its own claim is written, so the later of the two looks
   * finds the other's claim. An intent's key is never used again once deleted, so that a
   * store may forget it at once (no tombstone that every later operation would read).
   */
  static Running begin(BlobNamespace ns, RenameIntent claim) throws IOException {
    String key = ns.layout().leasedIntentKey(claim.src(), claim.id());
    try {
      ns.calls().put(key, claim.encode(), PutMode.CREATE);
    } catch (BlobAlreadyExistsException e) { // a path too long for a key of its own
      throw BlobNamespace.lostRace(claim.toString(), new TransactionConflictException(
          "another rename or delete of " + claim.src() + " is under way"));
    }
    Running mine = Running.stamped(ns, key, claim);
    for (String other : ns.scanAll(ns.layout().renameIntentPrefix(claim.src()))) {
      if (!other.equals(key) && ns.layout().isIntentOf(other, claim.src())) {
        mine.withdraw();
        throw BlobNamespace.lostRace(claim.toString(), new TransactionConflictException(
            "another rename or delete of " + claim.src() + " is under way"));
      }
    }
    mine.confirm();
    return mine;
  }

  /**
   * A directory operation's intent while it runs without transactions: a lease, renewed
   * whenever a quarter of it has passed, so that nobody finishes the operation meanwhile.
   * Only when its client dies or stalls past the lease may another take it over. The lease
   * is a fence: every renewal is conditional on the version this owner last wrote, and an
   * owner whose intent was taken over or finished by another stops ({@link #keepAlive}),
   * so that a stalled operation never acts again once someone else has finished it.
   */
  static final class Running {
    private final BlobNamespace ns;
    private final String key;
    private RenameIntent intent;
    /** The version of the intent as this owner last wrote it; 0 with transactions. */
    private long version;
    private long renewedNanos;

    private Running(BlobNamespace ns, String key, RenameIntent intent, long version,
        long renewedNanos) {
      this.ns = ns;
      this.key = key;
      this.intent = intent;
      this.version = version;
      this.renewedNanos = renewedNanos;
    }

    static long expiry(BlobNamespace ns) {
      return System.currentTimeMillis() + ns.locks().renameLease().toMillis();
    }

    /**
     * The intent just written, with its version read back (a put does not return it). No
     * other client can have changed it meanwhile: its lease has only just begun.
     */
    private static Running stamped(BlobNamespace ns, String key, RenameIntent written)
        throws IOException {
      long started = System.nanoTime();
      Optional<Stored> now = readVersioned(ns, key);
      // A rename's intent does not store its start time: compared by id, lease and state.
      if (now.isEmpty() || !now.get().intent().id().equals(written.id())
          || now.get().intent().expiresMillis() != written.expiresMillis()
          || now.get().intent().claimed() != written.claimed()) {
        throw BlobNamespace.lostRace(written.toString(), new TransactionConflictException(
            "its intent changed right after it was written"));
      }
      return new Running(ns, key, written, now.get().version(), started);
    }

    /** Turns this operation's claim into its intent: from now on it may act. */
    private void confirm() throws IOException {
      RenameIntent confirmed = intent.confirmed().renewedUntil(expiry(ns));
      try {
        ns.calls().putIfVersion(key, confirmed.encode(), version);
      } catch (TransactionConflictException e) { // removed as expired: it stalled
        throw BlobNamespace.lostRace(intent.toString(), e);
      }
      Running now = stamped(ns, key, confirmed);
      intent = confirmed;
      version = now.version;
      renewedNanos = now.renewedNanos;
    }

    /** Removes this operation's claim, which did nothing; one left behind expires. */
    private void withdraw() {
      try {
        ns.calls().deleteIfVersion(key, version);
      } catch (IOException | RuntimeException e) {
        // removed as expired meanwhile, or left to expire: finishers remove it then
      }
    }

    /**
     * Takes over an intent whose lease ran out (or that has none: transactions), as read;
     * empty if another client changed it first (it runs it now, or has finished it).
     */
    static Optional<Running> takeOver(BlobNamespace ns, Stored read) throws IOException {
      if (read.intent().expiresMillis() == 0) {
        return Optional.of(new Running(ns, read.key(), read.intent(), 0, System.nanoTime()));
      }
      RenameIntent mine = read.intent().renewedUntil(expiry(ns));
      try {
        ns.calls().putIfVersion(read.key(), mine.encode(), read.version());
      } catch (TransactionConflictException e) {
        return Optional.empty();
      }
      return Optional.of(stamped(ns, read.key(), mine));
    }

    /**
     * Called before each act: renews the lease if a quarter of it has passed, on the
     * version this owner wrote. If another client took the intent over or finished it
     * meanwhile (this owner stalled past its lease), fails: acting on would undo or redo
     * what that client did (a delete removing a file made after it finished, say).
     */
    void keepAlive() throws IOException {
      long quarter = ns.locks().renameLease().toNanos() / 4;
      if (intent.expiresMillis() == 0 || System.nanoTime() - renewedNanos < quarter) {
        return;
      }
      RenameIntent renewed = intent.renewedUntil(expiry(ns));
      try {
        ns.calls().putIfVersion(key, renewed.encode(), version);
      } catch (TransactionConflictException e) { // taken over, or finished and removed
        throw outlived(e);
      }
      Running now = stamped(ns, key, renewed);
      intent = renewed;
      version = now.version;
      renewedNanos = now.renewedNanos;
    }

    private IOException outlived(IOException cause) {
      return new IOException(intent + " outlived its lease: another client took its intent"
          + " over (" + key + ") and finishes it; this one stopped", cause);
    }

    /** Removes the intent once the operation is done, if it is still this one's. */
    void end() throws IOException {
      if (version == 0) {
        new DirectoryMove(ns, ns.renamer(), intent).removeIntent();
        return;
      }
      try {
        ns.calls().deleteIfVersion(key, version);
      } catch (TransactionConflictException e) {
        throw outlived(e); // taken over as this one did its last act: that one ends it
      }
    }
  }

  /** Removes this operation's intent if it is still there (not finished by another). */
  void removeIntent() throws IOException {
    Optional<Long> version = currentVersion();
    if (version.isPresent()) {
      try {
        ns.calls().deleteIfVersion(intentKey, version.get());
      } catch (TransactionConflictException e) {
        // removed or replaced by another client that finished it
      }
    }
  }

  /** The intent stored under {@code key}, if any. */
  private static Optional<RenameIntent> read(BlobNamespace ns, String key) throws IOException {
    return readVersioned(ns, key).map(v -> v.intent);
  }

  /** An intent as read: what it says, where it is, and its version. */
  record Stored(RenameIntent intent, String key, long version) {}

  private static Optional<Stored> readVersioned(BlobNamespace ns, String key)
      throws IOException {
    VersionedBytes v;
    try {
      v = ns.calls().readWithVersion(key,
          3 * ns.calls().store().limits().maxKeyBytes() + 256);
    } catch (FileNotFoundException gone) {
      return Optional.empty();
    }
    return Optional.of(new Stored(RenameIntent.decode(key, v.bytes()), key, v.version()));
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
    throwIfLeftBehind();
  }

  private void throwIfLeftBehind() throws IOException {
    if (leftCount > 0) {
      throw new IOException(intent + " moved every name but " + leftCount + " under "
          + intent.src() + " whose destinations were taken, or that kept changing, while it"
          + " ran (" + leftBehind + (leftCount > leftBehind.size() ? ", ..." : "") + "); each"
          + " file is under exactly one of its names: move or remove them, then rename them"
          + " on their own");
    }
  }

  private void leftBehind(String from) {
    if (leftBehind.size() < NAMED) {
      leftBehind.add(ns.layout().pathOf(from));
    }
    leftCount++;
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
    leftBehind(from);
  }

  /** The version of this rename's intent, or empty if it is gone or another rename's. */
  private Optional<Long> currentVersion() throws IOException {
    return readVersioned(ns, intentKey)
        .filter(s -> s.intent().id().equals(intent.id()))
        .map(Stored::version);
  }
}
