package io.blobfs.namespace;

import io.blobfs.store.BlobAlreadyExistsException;
import io.blobfs.store.BlobMutation;
import io.blobfs.store.PutMode;
import io.blobfs.store.TransactionConflictException;
import io.blobfs.store.VersionedBytes;
import java.io.FileNotFoundException;
import java.io.IOException;
import java.io.InterruptedIOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.security.SecureRandom;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.TimeUnit;

/**
 * The lock blob {@code d/FILEID/lock} that keeps the orphan sweeper away from the data of
 * a file that is being written or renamed, so that it never deletes data a record names
 * or is about to name.
 *
 * <p>The sweeper decides that a file id is an orphan by finding no record that names it.
 * That scan can miss a record that moves during it (a rename from a name not yet scanned
 * to one already scanned), and cannot see the record of a file whose writer has not
 * closed it yet. So:
 *
 * <ul>
 *   <li>A writer takes the lock exclusively before it sends its first stripe, renews it as
 *       it goes and once more right before it publishes (a lease:
 *       {@link NamespaceOptions#writerLease()}), and releases it after its record is
 *       published or its data discarded. The sweeper passes over a file id whose writer
 *       lease runs.
 *   <li>The sweeper takes the lock of each candidate, then scans every record again, and
 *       deletes data only of candidates still unnamed whose lock is still its own.
 *   <li>A rename checks, after the new name exists and before the old one goes (in the
 *       same transaction where the store has them), that no sweeper holds the lock. While
 *       a sweeper does, it keeps both names, waiting for the sweeper to see one of them. A
 *       sweeper's lock that has expired is removed instead: that sweeper will find its
 *       lock changed and delete nothing.
 * </ul>
 *
 * A record therefore never stops being visible to a sweeper's second scan: whoever could
 * move it away from the sweeper's eyes waits for that sweeper, or makes it stand down.
 * Holders compare wall clocks only through a lease's expiry: clock skew between clients
 * and the sweeper must stay well below the lease.
 *
 * <p>A lock {@link Owner#ADOPTED} says that another version (its {@code adopter}) names
 * some of this id's stripes through its {@link StripeMap} (issue 16,
 * {@code wip/shared-stripes/DESIGN.md} §2.2 I2): written before (RADOS) or with (Týr) the
 * commit that first names them under another id, removed after the last of them is no
 * longer named. The orphan sweeper never takes it, whatever its age: a record naming the
 * keys can move between the sweeper's scans, and its own id's lock, which renames guard,
 * is not this one. Renames, deletes and overwrites of the id's own record wait while it is
 * younger than its {@code until} (a publication over that record is committing), and take
 * it over after. Stored with an expiry of {@link Long#MAX_VALUE} and {@code until} after
 * the nonce, so that a client predating it reads a lock of unknown kind that never expires
 * (never swept, never blocking).
 */
final class DataLocks {
  private static final System.Logger LOG = System.getLogger(DataLocks.class.getName());
  private static final SecureRandom NONCES = new SecureRandom();
  private static final byte MAGIC = 'L';
  private static final int ENCODED = 1 + 1 + 8 + 8;
  /**
   * After a will's name version, where an older client reads a move's source length:
   * negative, so that it fails at once (NegativeArraySizeException) and reads "unknown".
   */
  private static final int WILL_MARK = -1;
  /** How long a rename waits for a sweeper to finish looking at a file before failing. */
  static final Duration SWEEPER_WAIT = Duration.ofSeconds(60);
  /** Renewals answered with less than half the lease left, in a row, before giving up. */
  private static final int LATE_RENEWALS = 3;

  /**
   * RENAMER: without transactions, a client that changes a name of the file: a rename,
   * from before its copy until the source is gone (with its {@link Move}), or a delete or
   * overwrite, from before it changes the name until the data is gone (no move). UNKNOWN:
   * content this code cannot read; never expires, never blocks a rename. ADOPTED: another
   * version names some of the id's stripes (see the class comment); never swept.
   */
  enum Owner { WRITER, SWEEPER, RENAMER, ADOPTED, UNKNOWN }

  /**
   * The file move a rename's lock guards: the source record key, the destination record
   * key, and the version of the source record being moved. Written with the lock, before
   * the copy, so that a rename cut off between its copy and the source's removal is
   * recognisable from the lock alone and can be rolled forward ({@link MoveSettler}).
   * A rename over an existing file ({@link MarkedReplace}) also records the version of
   * the destination's record it replaces ({@code replacedVersion}, else
   * {@link #NOT_REPLACING}): its commit is a write conditional on that version, which a
   * settler of a move that has not committed rewrites (the replaced file unchanged) to
   * fence the commit of a stalled mover.
   */
  record Move(String fromKey, String toKey, long version, long replacedVersion) {
    static final long NOT_REPLACING = -1;

    Move(String fromKey, String toKey, long version) {
      this(fromKey, toKey, version, NOT_REPLACING);
    }

    boolean replacing() {
      return replacedVersion != NOT_REPLACING;
    }
  }

  /**
   * A delete's will (issue 16, DESIGN §2.4): what a delete of a mapped record (one that
   * borrows stripes, or owes a cleanup's dues) writes into the file's lock, conditionally on
   * the lock it holds, before it removes the name ({@code nameKey}, which it first rewrote
   * to {@code nameVersion}: see {@code Deleter}). {@code record} is that record's header:
   * its map and dues, never its inline bytes. Stored with owner byte {@code 'D'}, then
   * {@code nameVersion} and {@link #WILL_MARK} before the rest (a client predating it
   * fails on the mark where it looks for a move, and reads a lock of unknown kind: never
   * swept, never blocking); in memory a
   * {@link Owner#RENAMER} lock, which it is while its delete runs. A will left behind
   * (the delete cut between the name's removal and its data's) is carried out by whoever
   * meets it expired ({@link #settleWill}): the orphan sweeper, or a client taking the
   * lock. Without it the borrowed keys stayed ADOPTED and named by no record, which no
   * sweep takes (the delete leak).
   */
  record Will(String nameKey, long nameVersion, FileRecord record) {
    /**
     * The {@code nameVersion} of a will written in the transaction that deleted the name
     * (Týr, memory): it exists only if the delete applied.
     */
    static final long WITH_DELETE = -1;
  }

  /**
   * A lock as read or taken: who holds it, until when (wall clock of its holder), the
   * version of its blob, which every later change of it is conditional on, and for a
   * rename the move it guards (else null). An {@link Owner#ADOPTED} lock's expiry is its
   * {@code until}, and {@code adopter} the file id of the version that adopted; a
   * {@link Owner#RENAMER} lock as taken by {@link #takeForRename} over an expired ADOPTED
   * one keeps that one's adopter there, in memory only ({@link #release(Lock, String)});
   * else null.
   */
  record Lock(String fileId, String key, Owner owner, long expiresMillis, long nonce,
      long version, Move move, String adopter, Will will) {
    Lock(String fileId, String key, Owner owner, long expiresMillis, long nonce,
        long version, Move move, String adopter) {
      this(fileId, key, owner, expiresMillis, nonce, version, move, adopter, null);
    }

    boolean expired(long nowMillis) {
      return nowMillis > expiresMillis;
    }

    Lock tookOver(String adoptedBy) {
      return adoptedBy == null ? this
          : new Lock(fileId, key, owner, expiresMillis, nonce, version, move, adoptedBy);
    }

    /** A delete's will left by a client that died or stalled past its lease. */
    boolean unsettledWill(long nowMillis) {
      return will != null && expired(nowMillis);
    }

    /** A rename's lock left by a client that died or stalled past its lease mid-move. */
    boolean interruptedMove(long nowMillis) {
      return owner == Owner.RENAMER && move != null && expired(nowMillis);
    }
  }

  /**
   * How long {@link #takeForRename} may wait for another client's lock.
   * <ul>
   *   <li>BOUNDED: {@link #SWEEPER_WAIT}, which fits under the leases a caller may already
   *       hold: a lock taken first (a rename over a file takes two), a directory
   *       operation's intent, renewed only before it acts (session 17's rename-wait
   *       review, M1: a longer wait let them run out under a live caller).
   *   <li>OUTWAIT: the caller holds nothing a longer wait could outlive (a rename or a
   *       delete of one file, the first of a rename-over's two locks, a publication whose
   *       writer lease is long), so it waits until the lock it meets has expired, then
   *       takes it over as it would at once: a client that died holding a lock leaves it
   *       for a whole rename lease (90 s), longer than the fixed wait, and the next rename,
   *       delete or publication of that file in the lease's last 30 s failed "retry" (a
   *       mount SIGKILLed mid-publication: the fresh mount's close got EIO, CrashIT).
   *       Bounded by the wait plus one rename lease: a lock that lasts longer is not one
   *       this client's options wrote, and it fails as before rather than wait for ever.
   * </ul>
   * A rename's, delete's or overwrite's lock (RENAMER) is never renewed: a live holder
   * slower than its lease is taken over at expiry by whoever waits (now every OUTWAIT
   * waiter, before only those that came late), and fenced as before: its later steps are
   * conditional on the lock and the names it read.
   */
  enum Patience { BOUNDED, OUTWAIT }

  private final BlobNamespace ns;
  /** {@link #SWEEPER_WAIT}; shorter only in tests, which cannot wait a minute. */
  private volatile Duration wait = SWEEPER_WAIT;

  DataLocks(BlobNamespace ns) {
    this.ns = ns;
  }

  /** For tests: the fixed wait, instead of {@link #SWEEPER_WAIT}. */
  void waitForTests(Duration d) {
    wait = d;
  }

  /**
   * A publication's patience: OUTWAIT unless its writer lease could run out meanwhile. A
   * publication may wait once per attempt ({@link BlobNamespace#RACE_ATTEMPTS}) before it
   * renews, each time up to the fixed wait plus a lease, and keeps a lease of margin for
   * the renewal: 14 min with the defaults, well inside the writer lease of a day. A
   * shorter {@code writer.lease} (a few minutes; tests) keeps the fixed wait (review S5).
   */
  Patience forWriter() {
    Duration longest = wait.plus(renameLease()).multipliedBy(BlobNamespace.RACE_ATTEMPTS);
    return ns.options().writerLease().compareTo(longest.plus(renameLease())) > 0
        ? Patience.OUTWAIT : Patience.BOUNDED;
  }

  /**
   * When (a {@code System.nanoTime()}) a wait that began at {@code startNanos} gives up on
   * {@code held}: see {@link Patience}. The holder's time left is capped before it is
   * added, so that a lock whose expiry is far off (an old client's) cannot overflow.
   */
  private long deadline(long startNanos, Lock held, Patience patience) {
    long bounded = wait.toNanos();
    if (patience == Patience.BOUNDED) {
      return startNanos + bounded;
    }
    long cap = bounded + renameLease().toNanos();
    long left = Math.min(cap, TimeUnit.MILLISECONDS.toNanos(
        Math.max(0, held.expiresMillis() - System.currentTimeMillis())));
    long untilExpired = System.nanoTime() - startNanos + left + TimeUnit.SECONDS.toNanos(1);
    return startNanos + Math.max(bounded, Math.min(untilExpired, cap));
  }

  String key(String fileId) {
    return KeyLayout.DATA + fileId + "/" + KeyLayout.LOCK;
  }

  Optional<Lock> read(String fileId) throws IOException {
    String key = key(fileId);
    VersionedBytes got;
    try {
      // A move holds two record keys, each at most the store's key limit; a will one key
      // and a record's header.
      got = ns.calls().readWithVersion(key, (int) Math.min(Integer.MAX_VALUE, ENCODED + 24
          + 2L * ns.layout().maxKeyBytes() + FileRecord.MAX_STORED_HEADER + 16));
    } catch (FileNotFoundException e) {
      return Optional.empty();
    }
    ByteBuffer b = ByteBuffer.wrap(got.bytes());
    if (b.remaining() < ENCODED || b.get() != MAGIC) {
      return Optional.of(unreadable(fileId, key, got.version()));
    }
    byte owner = b.get();
    long expires = b.getLong();
    long nonce = b.getLong();
    if (owner == 'A') {
      try {
        long until = b.getLong();
        return Optional.of(new Lock(fileId, key, Owner.ADOPTED, until, nonce, got.version(),
            null, string(b)));
      } catch (RuntimeException e) {
        return Optional.of(unreadable(fileId, key, got.version()));
      }
    }
    if (owner == 'D') {
      try {
        long nameVersion = b.getLong();
        if (b.getInt() != WILL_MARK) {
          return Optional.of(unreadable(fileId, key, got.version()));
        }
        String nameKey = string(b);
        byte[] rec = new byte[b.getInt()];
        b.get(rec);
        return Optional.of(new Lock(fileId, key, Owner.RENAMER, expires, nonce, got.version(),
            null, null, new Will(nameKey, nameVersion,
                FileRecord.decode(key, rec, rec.length, false))));
      } catch (RuntimeException | CorruptRecordException e) {
        return Optional.of(unreadable(fileId, key, got.version()));
      }
    }
    Move move = null;
    if (b.hasRemaining()) { // a rename's move; older versions wrote none
      try {
        long version = b.getLong();
        String from = string(b);
        String to = string(b);
        // a rename over a file appends the replaced version; older versions wrote none
        move = new Move(from, to, version,
            b.remaining() >= 8 ? b.getLong() : Move.NOT_REPLACING);
      } catch (RuntimeException e) {
        return Optional.of(unreadable(fileId, key, got.version()));
      }
    }
    return Optional.of(new Lock(fileId, key, owner == 'W' ? Owner.WRITER
        : owner == 'S' ? Owner.SWEEPER : owner == 'R' ? Owner.RENAMER : Owner.UNKNOWN,
        expires, nonce, got.version(), move, null));
  }

  private static Lock unreadable(String fileId, String key, long version) {
    LOG.log(System.Logger.Level.WARNING, key + " is not a lock this version can read: its"
        + " data will not be swept; remove it by hand if no writer or sweeper uses it");
    return new Lock(fileId, key, Owner.UNKNOWN, Long.MAX_VALUE, 0, version, null, null);
  }

  private static String string(ByteBuffer b) {
    byte[] bytes = new byte[b.getInt()];
    b.get(bytes);
    return new String(bytes, StandardCharsets.UTF_8);
  }

  /** A writer's lock on its fresh file id, taken before any data blob exists. */
  Lock takeForWriter(String fileId, Duration lease) throws IOException {
    long expires = expiry(lease);
    long nonce = NONCES.nextLong();
    try {
      ns.calls().put(key(fileId), encode(Owner.WRITER, expires, nonce, null), PutMode.CREATE);
    } catch (IOException e) {
      return ownIfApplied(fileId, nonce, lease, e);
    }
    return stamped(fileId, nonce);
  }

  /**
   * Extends a writer's lease; fails with an IOException if the lock is no longer the one
   * held: it expired and a sweeper took it, so the writer's data may be gone.
   */
  Lock renew(Lock held, Duration lease) throws IOException {
    // A renewal answered late leaves little of its lease: the writer's next step (its
    // record's put, right after the renewal before publishing) could then outlast it, and
    // a sweep meanwhile would delete the data the record names. So half the lease must be
    // left; a late answer is renewed again (conditionally, on the version it renewed),
    // since one slow call under load is common and a second one rarely as slow.
    Lock renewed = held;
    for (int attempt = 1; ; attempt++) {
      renewed = renewOnce(renewed, lease);
      if (hasMargin(renewed, lease)) {
        return renewed;
      }
      if (attempt == LATE_RENEWALS) {
        throw new IOException("the writer's lease renewals on its data (" + held.key()
            + ") were answered too late " + LATE_RENEWALS + " times, the last with "
            + Math.max(0, renewed.expiresMillis() - System.currentTimeMillis()) + " ms of its "
            + lease + " left: the store is slower than the lease allows"
            + " (fs.blob.writer.lease), so nothing is published");
      }
    }
  }

  private Lock renewOnce(Lock held, Duration lease) throws IOException {
    long expires = expiry(lease);
    long nonce = NONCES.nextLong();
    try {
      ns.calls().putIfVersion(held.key(), encode(Owner.WRITER, expires, nonce, null),
          held.version());
      return stamped(held.fileId(), nonce);
    } catch (TransactionConflictException e) {
      return ownIfApplied(held.fileId(), nonce, lease, new IOException("the writer's lease"
          + " on its data ran out and the orphan sweeper took it (" + held.key() + "): its"
          + " data may be gone, so nothing is published", e));
    } catch (IOException e) {
      return ownIfApplied(held.fileId(), nonce, lease, e);
    }
  }

  /**
   * The sweeper's lock on a candidate, taken only if the lock is as the sweeper last saw
   * it ({@code seen}: absent, or an expired lock to take over). Empty if someone else
   * changed it meanwhile.
   */
  Optional<Lock> takeForSweeper(String fileId, Optional<Lock> seen, Duration hold)
      throws IOException {
    long nonce = NONCES.nextLong();
    ByteBuffer content = encode(Owner.SWEEPER, expiry(hold), nonce, null);
    try {
      if (seen.isEmpty()) {
        ns.calls().put(key(fileId), content, PutMode.CREATE);
      } else {
        ns.calls().putIfVersion(key(fileId), content, seen.get().version());
      }
    } catch (TransactionConflictException | BlobAlreadyExistsException e) {
      try {
        return mine(fileId, nonce, hold);
      } catch (IOException readFailed) {
        // As any lock it does not hold; if its write was applied, the lock stays for the
        // hold, and renames of the file wait for it (or give up) meanwhile.
        LOG.log(System.Logger.Level.WARNING, "could not read back the sweeper's lock "
            + key(fileId) + " after a conflict; if it was applied it blocks the file for "
            + hold.toSeconds() + " s", readFailed);
        return Optional.empty();
      }
    } catch (IOException e) {
      return Optional.of(ownIfApplied(fileId, nonce, hold, e));
    }
    return Optional.of(stamped(fileId, nonce));
  }

  /**
   * Marks {@code fileId}'s data adopted by version {@code adopter}, conditionally on the
   * lock as {@code seen} (absent: none), for {@code until}. A takeover commit with
   * transactions puts {@link #adopted} in its transaction instead.
   */
  Lock adopt(String fileId, Optional<Lock> seen, String adopter, Duration until)
      throws IOException {
    long nonce = NONCES.nextLong();
    ByteBuffer content = adopted(adopter, until, nonce);
    if (seen.isEmpty()) {
      ns.calls().put(key(fileId), content, PutMode.CREATE);
    } else {
      ns.calls().putIfVersion(key(fileId), content, seen.get().version());
    }
    return stamped(fileId, nonce);
  }

  /**
   * An ADOPTED lock's bytes: adopted by version {@code adopter} until {@code until} from
   * now, stored with an expiry of {@link Long#MAX_VALUE} (see the class comment).
   */
  static ByteBuffer adopted(String adopter, Duration until, long nonce) {
    byte[] id = adopter.getBytes(StandardCharsets.UTF_8);
    ByteBuffer content = ByteBuffer.allocate(ENCODED + 8 + 4 + id.length);
    content.put(MAGIC).put((byte) 'A').putLong(Long.MAX_VALUE).putLong(nonce)
        .putLong(expiry(until)).putInt(id.length).put(id).flip();
    return content;
  }

  /** {@link #adopted(String, Duration, long)} with a fresh nonce. */
  static ByteBuffer adopted(String adopter, Duration until) {
    return adopted(adopter, until, NONCES.nextLong());
  }

  /**
   * Removes {@code fileId}'s lock if it is {@link Owner#ADOPTED}, conditionally on the
   * version read: for whoever drops the last key of an adopted id (a delete, a replace's
   * cleanup, the sweeper).
   */
  void releaseAdopted(String fileId) throws IOException {
    Optional<Lock> lock = read(fileId);
    if (lock.isPresent() && lock.get().owner() == Owner.ADOPTED) {
      release(lock.get());
    }
  }

  /**
   * Releases a lock taken by {@link #takeForRename} (or {@link #takeForReplace}) for the
   * name at {@code nameKey}, as {@link #release(Lock)}, unless it took an expired ADOPTED
   * lock over: that adopter's commit (a put conditional on the version of this id's record
   * it read) may have applied late, after {@code until}, or may still apply if the name
   * was not changed (review S1). Released then, the adopter's record would name this id's
   * keys with no ADOPTED lock, which I2 (DESIGN §2.2) forbids: the sweeper could delete
   * them. So one record read decides (paid only after such a takeover):
   * <ul>
   *   <li>the name holds a record whose map names this id (the commit applied, and this
   *       client's change lost to it): ADOPTED by that record, committed ({@code until} now);
   *   <li>the name still holds this id's own record (nothing changed it: the commit may
   *       still apply), or cannot be read: the ADOPTED lock is put back as it was taken;
   *   <li>else (renamed, deleted, replaced: a late commit cannot apply) released.
   * </ul>
   * Put back conditionally on the version held; an ADOPTED lock whose id ends with no data
   * and no record is removed by the sweeper.
   */
  void release(Lock held, String nameKey) {
    if (held.owner() != Owner.RENAMER || held.adopter() == null) {
      release(held);
      return;
    }
    String adopter = held.adopter();
    try {
      Optional<VersionedRecord> now = ns.readRecord(nameKey, false);
      if (now.isPresent() && now.get().record().map().ids().contains(held.fileId())) {
        adopter = now.get().record().fileId();
      } else if (now.isEmpty() || !now.get().record().fileId().equals(held.fileId())) {
        release(held);
        return;
      }
    } catch (IOException | RuntimeException e) {
      LOG.log(System.Logger.Level.DEBUG, "could not read " + nameKey + "; the adoption of "
          + held.fileId() + " by " + adopter + " is put back", e);
    }
    try {
      adopt(held.fileId(), Optional.of(held), adopter, Duration.ZERO);
    } catch (IOException | RuntimeException e) {
      // Taken over meanwhile, or unknown: the RENAMER lock expires and is taken over as
      // any other, by a client that puts the adoption back the same way.
      LOG.log(System.Logger.Level.WARNING, "could not put back the adoption of "
          + held.fileId() + " by " + adopter + " (" + held.key() + ")", e);
    }
  }

  /**
   * Removes a lock if it is still the one held. Best effort: a lock left behind expires,
   * and is then removed by the next sweep or rename that meets it.
   */
  void release(Lock held) {
    for (int attempt = 1; attempt <= 2; attempt++) {
      try {
        ns.calls().deleteIfVersion(held.key(), held.version());
        return;
      } catch (TransactionConflictException e) {
        return; // taken over meanwhile (or a first try applied): not ours any more
      } catch (IOException | RuntimeException e) {
        LOG.log(System.Logger.Level.DEBUG, "could not release " + held.key(), e);
      }
    }
  }

  /**
   * For a rename of the file with this id: returns the lock as it is once no live sweeper
   * holds it (empty: no lock), waiting up to {@link #SWEEPER_WAIT} while one does. A
   * returned lock of a sweeper has expired: the caller removes it, conditionally, in the
   * step that removes the old name (or in a transaction with it), so that the sweeper,
   * which checks its lock before it deletes anything, stands down.
   */
  Optional<Lock> awaitNoSweeper(String fileId, FsPath path) throws IOException {
    return awaitNoSweeper(fileId, path, () -> {});
  }

  /**
   * {@link #awaitNoSweeper(String, FsPath)}, calling {@code afterWait} before it returns
   * if it waited: a writer's lease may have run out meanwhile (review S2).
   */
  Optional<Lock> awaitNoSweeper(String fileId, FsPath path, BlobNamespace.Renewal afterWait)
      throws IOException {
    long deadline = System.nanoTime() + wait.toNanos();
    long pauseMillis = 10;
    boolean waited = false;
    while (true) {
      Optional<Lock> lock = read(fileId);
      if (lock.isEmpty() || lock.get().owner() != Owner.SWEEPER
          || lock.get().expired(System.currentTimeMillis())) {
        if (waited) {
          afterWait.renew();
        }
        return lock;
      }
      waited = true;
      if (System.nanoTime() > deadline) {
        throw new IOException("the orphan sweeper has held the data of " + path + " ("
            + lock.get().key() + ") for over " + wait.toSeconds() + " s; retry once"
            + " it is done (a lock of a sweeper that died is removed once it expires)");
      }
      try {
        Thread.sleep(pauseMillis);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new InterruptedIOException("interrupted waiting for the orphan sweeper");
      }
      pauseMillis = Math.min(pauseMillis * 2, 1000);
    }
  }

  /**
   * Without transactions, a rename of a file holds its lock from before it reads the
   * source until the source is gone, recording its {@code move}: two renames of one file,
   * one of them part of a directory rename, then never interleave their copy-then-delete
   * steps (one could carry away the other's copy, leaving two names on one file), no
   * sweeper looks at the file meanwhile, and a rename cut off between its copy and the
   * source's removal is rolled forward by whoever takes the lock next. A delete or an
   * overwrite holds it too ({@code move} null), from before it changes the name until the
   * data is gone, so that while a rename's lock is held or unsettled nobody else changes
   * the names of its file. Waits (up to {@link #SWEEPER_WAIT}, or as {@link Patience}
   * says) while a live sweeper or rename holds it; takes over a writer's lock (the file
   * is named: its writer is done) and expired ones, first settling an interrupted move
   * ({@link MoveSettler}).
   */
  Lock takeForRename(String fileId, FsPath path, Move move) throws IOException {
    return takeForRename(fileId, path, move, Patience.BOUNDED);
  }

  /** {@link #takeForRename(String, FsPath, Move)}, waiting as {@code patience} says. */
  Lock takeForRename(String fileId, FsPath path, Move move, Patience patience)
      throws IOException {
    long start = System.nanoTime();
    long pauseMillis = 5;
    while (true) {
      Optional<Lock> lock = read(fileId);
      long now = System.currentTimeMillis();
      if (lock.isPresent() && lock.get().interruptedMove(now)) {
        MoveSettler.settle(ns, lock.get());
        continue; // settled by this client or another: look again
      }
      if (lock.isPresent() && lock.get().unsettledWill(now)) {
        // Taken over as it is, the will would be lost with this client's lock if the name
        // changed (a delete that applied): carried out first, then looked at again.
        try {
          settleWill(lock.get());
        } catch (WillLeft left) {
          // Review should-fix 4: the data of a delete that applied could not all go. The
          // file has no name now, so the caller read it before that delete: a change of
          // the name, as after a lost race, not a failure of the caller's operation. The
          // will stays in the settler's lock for the sweeper (or whoever comes next).
          LOG.log(System.Logger.Level.WARNING, left.getMessage(), left.getCause());
          throw new DeletedUnderWill(path + " was deleted meanwhile (" + key(fileId)
              + " holds its will)");
        }
        continue;
      }
      // ADOPTED: a publication over this file is committing (it adopted the file's data
      // before its commit, RADOS); it has until then to commit or to give up.
      boolean busy = lock.isPresent() && !lock.get().expired(now)
          && (lock.get().owner() == Owner.SWEEPER || lock.get().owner() == Owner.RENAMER
          || lock.get().owner() == Owner.ADOPTED);
      if (!busy) {
        long nonce = NONCES.nextLong();
        ByteBuffer content = encode(Owner.RENAMER, expiry(renameLease()), nonce, move);
        // An expired ADOPTED lock taken over: its publication may still commit, late (review
        // S1); the lock remembers its adopter so that release(Lock, String) can put it back.
        String adopter = lock.isPresent() && lock.get().owner() == Owner.ADOPTED
            ? lock.get().adopter() : null;
        try {
          if (lock.isEmpty()) {
            ns.calls().put(key(fileId), content, PutMode.CREATE);
          } else {
            ns.calls().putIfVersion(key(fileId), content, lock.get().version());
          }
          return stamped(fileId, nonce).tookOver(adopter);
        } catch (TransactionConflictException | BlobAlreadyExistsException e) {
          Optional<Lock> mine = mine(fileId, nonce, renameLease());
          if (mine.isPresent()) {
            // a retry of our own write met it: see ownIfApplied
            return mine.get().tookOver(adopter);
          }
          continue; // someone else changed it first: look again
        } catch (IOException e) {
          return ownIfApplied(fileId, nonce, renameLease(), e).tookOver(adopter);
        }
      }
      if (System.nanoTime() > deadline(start, lock.get(), patience)) {
        throw new IOException("the data of " + path + " (" + lock.get().key() + ") has been"
            + " held by " + (lock.get().owner() == Owner.SWEEPER ? "the orphan sweeper"
            : lock.get().owner() == Owner.ADOPTED ? "a publication over it"
            : "another rename, delete or overwrite") + " for over "
            + TimeUnit.NANOSECONDS.toSeconds(System.nanoTime() - start) + " s; retry");
      }
      try {
        Thread.sleep(pauseMillis);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new InterruptedIOException("interrupted waiting for the lock of " + path);
      }
      pauseMillis = Math.min(pauseMillis * 2, 500);
    }
  }

  /**
   * Turns the lock a delete holds into its {@link Will}, conditionally on the version held,
   * with a fresh rename lease: the delete of {@code nameKey}, which holds {@code record} at
   * {@code nameVersion}, is about to apply. Returns the lock as it is then.
   */
  Lock writeWill(Lock held, String nameKey, long nameVersion, FileRecord record)
      throws IOException {
    long nonce = NONCES.nextLong();
    ByteBuffer b = encodeWill(nameKey, nameVersion, record, nonce);
    try {
      ns.calls().putIfVersion(held.key(), b, held.version());
    } catch (TransactionConflictException e) {
      // A retry of an applied put conflicts with itself (review should-fix 5): the will is
      // then this delete's, live, and it must go on (or release it), not return as lost
      // and wait for its own will on the next attempt.
      Optional<Lock> mine = mine(held.fileId(), nonce, renameLease());
      if (mine.isPresent()) {
        return mine.get();
      }
      throw new TransactionConflictException(held.key() + " was taken over before the"
          + " delete wrote its will");
    } catch (IOException e) {
      return ownIfApplied(held.fileId(), nonce, renameLease(), e);
    }
    return stamped(held.fileId(), nonce);
  }

  private ByteBuffer encodeWill(String nameKey, long nameVersion, FileRecord record,
      long nonce) {
    // The header only (map, dues): the will's data are the keys, never the inline bytes.
    FileRecord header = new FileRecord(record.kind(), record.isInline() ? 0 : record.length(),
        record.modificationTime(), record.stripeSize(), record.fileId(), false, null,
        FileRecord.Mark.NONE, null, 0, record.isInline() ? StripeMap.NONE : record.map(),
        record.dues());
    byte[] name = nameKey.getBytes(StandardCharsets.UTF_8);
    ByteBuffer rec = header.encode();
    // The name's version, then WILL_MARK, before the name (review must-fix 2): a client
    // predating the will parses a move there, a long then a source key's length, and so
    // fails on new byte[-1] and reads the lock as unknown. The name's length and bytes
    // there made it allocate a length read from 4 ASCII bytes of the name (~1.9 GB).
    ByteBuffer b = ByteBuffer.allocate(ENCODED + 8 + 4 + 4 + name.length + 4 + rec.remaining());
    b.put(MAGIC).put((byte) 'D').putLong(expiry(renameLease())).putLong(nonce)
        .putLong(nameVersion).putInt(WILL_MARK).putInt(name.length).put(name)
        .putInt(rec.remaining()).put(rec).flip();
    return b;
  }

  /**
   * With transactions: the mutations that write the {@link Will} of {@code record}'s delete
   * (nonce {@code nonce}) into its lock, to go in the transaction that deletes its name at
   * {@code nameKey}: the will exists if and only if the name's delete applied. Over the
   * lock as it is once no live sweeper holds it (an expired sweeper's is overwritten: it
   * checks its lock before deleting, and stands down), checked.
   */
  List<BlobMutation> willWithDelete(String nameKey, FileRecord record, FsPath path, long nonce)
      throws IOException {
    Optional<Lock> seen = awaitNoSweeper(record.fileId(), path);
    String k = key(record.fileId());
    return List.of(
        new BlobMutation.Put(k, encodeWill(nameKey, Will.WITH_DELETE, record, nonce),
            PutMode.OVERWRITE),
        new BlobMutation.Check(k, seen.map(Lock::version).orElse(BlobMutation.ABSENT)));
  }

  static long nonce() {
    return NONCES.nextLong();
  }

  /** Removes the will with {@code nonce} once its delete removed the data. */
  void releaseWill(String fileId, long nonce) throws IOException {
    Optional<Lock> now = read(fileId);
    if (now.isPresent() && now.get().will() != null && now.get().nonce() == nonce) {
      release(now.get());
    }
  }

  /**
   * Carries out an expired {@link Will}: under its lock, taken over as it was read (the
   * will kept in it), if the name no longer holds the will's file at all (gone, or another
   * file's), the delete applied (the delete had rewritten the record, fencing any older
   * writer's put, and the file's names change only under the lock the will holds) and the
   * record's keys are named by nothing: the file's own, the borrowed ones and its dues'
   * go, then the ADOPTED locks of the ids it borrowed (I1: it was their only namer;
   * {@link BlobNamespace#deleteData}); if they cannot all go, {@link WillLeft}, the will
   * kept in this settler's lock.
   * Else the delete never applied and the file lives on, at the fenced version or a later
   * one (a writer's dropDues, review must-fix 1): the will is void. Either way the lock
   * goes. False if another client took the lock first.
   */
  boolean settleWill(Lock will) throws IOException {
    Optional<Lock> mine = takeOver(will);
    if (mine.isEmpty()) {
      return false;
    }
    Optional<VersionedRecord> now = ns.readStored(will.will().nameKey(), false);
    // The name holding the will's file at another version is NOT the delete applied
    // (review must-fix 1): a writer's dropDues may have re-put the record over the fenced
    // version (it checks its own lock, which the delete took, but a put of it may have
    // been in flight), and a deleter whose name delete conflicted goes again from a fresh
    // read. Only a name gone, or holding another file, means the delete applied: the
    // file's names change only under its lock, which the will holds, so another file
    // there replaced it after the delete.
    boolean applied = will.will().nameVersion() == Will.WITH_DELETE || now.isEmpty()
        || (now.get().version() != will.will().nameVersion()
        && !now.get().record().fileId().equals(will.will().record().fileId()));
    if (applied) {
      LOG.log(System.Logger.Level.INFO, "carrying out the will of a delete of "
          + will.will().nameKey() + " (" + will.key() + "): its data was left behind");
      try {
        ns.deleteData(will.will().record());
      } catch (IOException | RuntimeException e) {
        throw new WillLeft("the will of a delete of " + will.will().nameKey() + " ("
            + will.key() + ") could not be carried out; it is kept for the orphan sweeper", e);
      }
    }
    release(mine.get());
    return applied;
  }

  /**
   * A will whose delete applied but whose data could not all be deleted: it stays in the
   * settler's lock (see {@link #takeOver}), for the next settler.
   */
  static final class WillLeft extends IOException {
    WillLeft(String message, Throwable cause) {
      super(message, cause);
    }
  }

  /**
   * {@link #takeForRename} met an expired will whose delete applied but whose data could
   * not all go ({@link WillLeft}): the file has no name now (or another file holds it), so
   * the caller read it before that delete. A lost race, as its supertype says; typed so a
   * rename can tell it from the others and treat its source as gone (second review of the
   * will, should-fix 1) after reading the name again.
   */
  static final class DeletedUnderWill extends TransactionConflictException {
    private static final long serialVersionUID = 1L;

    DeletedUnderWill(String message) {
      super(message);
    }
  }

  /**
   * What a delete or overwrite holds: the file's lock (null if none is needed), and
   * whether the name changed since it was read (then nothing is held: read again).
   */
  record Held(Lock lock, boolean changed) {}

  /**
   * For a delete or overwrite without transactions of the file {@code read} at
   * {@code key}. A file with data blobs: takes its lock (no move), then reads the name
   * again under it, so that its data is never deleted while a rename's copy names it too.
   * A file kept in its record has no shared data to lose (two names of it are two
   * copies), so it takes no lock: one read of the lock settles a rename of it that was cut
   * off, so that the delete or overwrite acts on the names as the rename left them; if
   * another client took that lock first, or a rename of it is live, it waits for it under
   * the lock as a file with data blobs does.
   */
  Held takeForReplace(String key, VersionedRecord read, FsPath path, Patience patience)
      throws IOException {
    String id = read.record().fileId();
    Optional<Lock> seen = read.record().stripeCount() == 0 ? read(id) : Optional.empty();
    // A live rename of it is waited for, under the lock: acting on the name meanwhile
    // could remove a source about to commit its move, so the file would have no name.
    boolean moving = seen.isPresent() && seen.get().owner() == Owner.RENAMER
        && seen.get().move() != null && !seen.get().expired(System.currentTimeMillis());
    if (read.record().stripeCount() == 0 && !moving) {
      boolean interrupted = seen.isPresent()
          && seen.get().interruptedMove(System.currentTimeMillis());
      if (!interrupted) {
        return new Held(null, false);
      }
      if (MoveSettler.settle(ns, seen.get())) {
        return new Held(null, !stillAt(key, read));
      }
      // Another client took the lock first (a settler, a rename) or the move could not be
      // settled: waited for under the lock, as takeForRename does, then the name read
      // again. Before, the delete went on at once while another settler finished the
      // move: it removed the destination between that settler's reads and its finish
      // (fourth review; harmless now that a finisher removes a moved source whatever the
      // destination became, but the delete acted on names a move was still changing).
    }
    Lock lock;
    try {
      lock = takeForRename(id, path, null, patience);
    } catch (TransactionConflictException deletedMeanwhile) {
      return new Held(null, true); // read again (should-fix 4, takeForRename)
    }
    boolean same = false;
    try {
      same = stillAt(key, read);
    } finally {
      if (!same) {
        release(lock, key); // a taken-over adoption may have to stay (S1)
      }
    }
    return same ? new Held(lock, false) : new Held(null, true);
  }

  private boolean stillAt(String key, VersionedRecord read) throws IOException {
    Optional<VersionedRecord> now = ns.readRecord(key, false);
    return now.isPresent() && now.get().version() == read.version();
  }

  /**
   * For a delete on a full store, which cannot take the lock: fails with {@code full} if a
   * rename of the file is under way or was cut off (its copy may share the data), else
   * returns and the delete goes on without the lock.
   */
  void refuseIfInterrupted(String fileId, FsPath path, IOException full) throws IOException {
    Optional<Lock> lock = read(fileId);
    if (lock.isPresent() && lock.get().owner() == Owner.RENAMER && lock.get().move() != null) {
      throw new IOException("cannot delete " + path + " on a full store: a rename of it is"
          + " under way or was cut off, and settling it needs a write; free space elsewhere"
          + " first", full);
    }
  }

  /**
   * Takes over an expired lock as it was read, keeping its move, with a fresh lease: a
   * settler works under it, so that the rename that left it, if only stalled, finds its
   * lock gone and does not undo what the settler does. Empty if it changed meanwhile.
   */
  Optional<Lock> takeOver(Lock expired) throws IOException {
    long nonce = NONCES.nextLong();
    // A will is kept in the taken-over lock (review should-fix 3): a settler cut in the
    // will's deleteData leaves it for the next one; as a plain lock, the borrowed keys
    // stayed ADOPTED and named by nothing (the delete leak again).
    Will will = expired.will();
    ByteBuffer content = will != null
        ? encodeWill(will.nameKey(), will.nameVersion(), will.record(), nonce)
        : encode(Owner.RENAMER, expiry(renameLease()), nonce, expired.move());
    try {
      ns.calls().putIfVersion(expired.key(), content, expired.version());
    } catch (TransactionConflictException e) {
      return Optional.empty();
    }
    return Optional.of(stamped(expired.fileId(), nonce));
  }

  /**
   * Turns a settler's lock into the tombstone of the move it completed: the same move,
   * expired from the start. False if the lock changed meanwhile.
   */
  boolean markSettled(Lock held) {
    try {
      ns.calls().putIfVersion(held.key(),
          encode(Owner.RENAMER, 0, NONCES.nextLong(), held.move()), held.version());
      return true;
    } catch (IOException | RuntimeException e) {
      return false;
    }
  }

  /**
   * For a rename whose lock {@code mine} was taken over: waits while a settler of this very
   * move holds it, then returns true if one completed it (its tombstone is there), false
   * if the lock was taken by anyone else or is gone (nothing proves the copy was adopted).
   */
  boolean settledByOther(Lock mine) throws IOException {
    long deadline = System.nanoTime() + SWEEPER_WAIT.toNanos();
    while (true) {
      Optional<Lock> now = read(mine.fileId());
      if (now.isEmpty() || now.get().version() == mine.version()
          || !mine.move().equals(now.get().move())) {
        return false;
      }
      if (now.get().expired(System.currentTimeMillis()) || System.nanoTime() > deadline) {
        return now.get().expiresMillis() == 0; // a tombstone: the move was completed
      }
      try {
        Thread.sleep(10);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new InterruptedIOException("interrupted waiting for the settler of " + mine.key());
      }
    }
  }

  /**
   * How long a rename's lock lasts if its holder dies: past it, others take it over (a
   * rename that stalled that long finds its lock gone and backs off):
   * {@link NamespaceOptions#renameLease}, or the writer lease if shorter (tests).
   */
  Duration renameLease() {
    Duration lease = ns.options().renameLease();
    return lease.compareTo(ns.options().writerLease()) < 0 ? lease : ns.options().writerLease();
  }

  /** Whether {@code held} is still the lock there: nobody took it over since. */
  boolean stillHeld(Lock held) throws IOException {
    Optional<Lock> now = read(held.fileId());
    return now.isPresent() && now.get().version() == held.version();
  }

  /**
   * After a lock write that failed: the lock, if the write was applied all the same (its
   * answer lost, or a retry of it conflicting with itself), else {@code failure}. A lock
   * that carries this call's nonce was written by this call (the nonces are random 64-bit
   * numbers, one per write), so reading it back tells. Without this, a lock PUT applied
   * with its answer lost failed its caller and then blocked the file for a whole lease: a
   * rename, delete or overwrite of it waited for, then gave up on, a lock nobody held.
   * A lost answer is a timeout, so it comes late: a lock with less than half of its
   * {@code lease} left is not claimed, since the caller's next step could outlast it and
   * act after others took it over (a writer's record put over data a sweep deleted). If
   * the write is still in flight when this reads, the caller fails as before, and the lock,
   * applied later, holds the file until it expires or is settled.
   */
  private Lock ownIfApplied(String fileId, long nonce, Duration lease, IOException failure)
      throws IOException {
    Optional<Lock> mine;
    try {
      mine = mine(fileId, nonce, lease);
    } catch (IOException readFailed) {
      failure.addSuppressed(readFailed);
      throw failure;
    }
    if (mine.isEmpty()) {
      throw failure;
    }
    return mine.get();
  }

  /** The lock, if this call wrote it ({@code nonce}) and half its {@code lease} is left. */
  private Optional<Lock> mine(String fileId, long nonce, Duration lease) throws IOException {
    return read(fileId).filter(l -> l.nonce() == nonce && hasMargin(l, lease));
  }

  private static boolean hasMargin(Lock lock, Duration lease) {
    long half = lease.getSeconds() >= Long.MAX_VALUE / 2000 ? Long.MAX_VALUE / 2
        : lease.toMillis() / 2;
    return lock.expiresMillis() - System.currentTimeMillis() >= half;
  }

  /** The version of a lock just written, read back: put does not return it. */
  private Lock stamped(String fileId, long nonce) throws IOException {
    Optional<Lock> now = read(fileId);
    if (now.isEmpty() || now.get().nonce() != nonce) {
      throw new TransactionConflictException("lock " + key(fileId)
          + " changed right after it was taken");
    }
    return now.get();
  }

  private static long expiry(Duration d) {
    long now = System.currentTimeMillis();
    return d.getSeconds() >= (Long.MAX_VALUE - now) / 1000 - 1 ? Long.MAX_VALUE - 1
        : now + d.toMillis();
  }

  /**
   * The lock's 18 bytes, then for a rename its move: version, both keys' lengths and
   * UTF-8, and for a rename over a file the replaced record's version.
   */
  private static ByteBuffer encode(Owner owner, long expiresMillis, long nonce, Move move) {
    byte[] from = move == null ? new byte[0] : move.fromKey().getBytes(StandardCharsets.UTF_8);
    byte[] to = move == null ? new byte[0] : move.toKey().getBytes(StandardCharsets.UTF_8);
    int replaced = move != null && move.replacing() ? 8 : 0;
    ByteBuffer b = ByteBuffer.allocate(
        ENCODED + (move == null ? 0 : 16 + from.length + to.length + replaced));
    b.put(MAGIC).put((byte) (owner == Owner.WRITER ? 'W' : owner == Owner.RENAMER ? 'R' : 'S'))
        .putLong(expiresMillis)
        .putLong(nonce);
    if (move != null) {
      b.putLong(move.version()).putInt(from.length).put(from).putInt(to.length).put(to);
      if (replaced > 0) {
        b.putLong(move.replacedVersion());
      }
    }
    return b.flip();
  }
}
