package io.blobfs.namespace;

import io.blobfs.store.BlobAlreadyExistsException;
import io.blobfs.store.PutMode;
import io.blobfs.store.TransactionConflictException;
import io.blobfs.store.VersionedBytes;
import java.io.FileNotFoundException;
import java.io.IOException;
import java.io.InterruptedIOException;
import java.nio.ByteBuffer;
import java.security.SecureRandom;
import java.time.Duration;
import java.util.Optional;

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
 */
final class DataLocks {
  private static final System.Logger LOG = System.getLogger(DataLocks.class.getName());
  private static final SecureRandom NONCES = new SecureRandom();
  private static final byte MAGIC = 'L';
  private static final int ENCODED = 1 + 1 + 8 + 8;
  /** How long a rename waits for a sweeper to finish looking at a file before failing. */
  static final Duration SWEEPER_WAIT = Duration.ofSeconds(60);

  /** UNKNOWN: content this code cannot read; never expires, never blocks a rename. */
  enum Owner { WRITER, SWEEPER, UNKNOWN }

  /**
   * A lock as read or taken: who holds it, until when (wall clock of its holder), and the
   * version of its blob, which every later change of it is conditional on.
   */
  record Lock(String fileId, String key, Owner owner, long expiresMillis, long nonce,
      long version) {
    boolean expired(long nowMillis) {
      return nowMillis > expiresMillis;
    }
  }

  private final BlobNamespace ns;

  DataLocks(BlobNamespace ns) {
    this.ns = ns;
  }

  String key(String fileId) {
    return KeyLayout.DATA + fileId + "/" + KeyLayout.LOCK;
  }

  Optional<Lock> read(String fileId) throws IOException {
    String key = key(fileId);
    VersionedBytes got;
    try {
      got = ns.calls().readWithVersion(key, ENCODED);
    } catch (FileNotFoundException e) {
      return Optional.empty();
    }
    ByteBuffer b = ByteBuffer.wrap(got.bytes());
    if (b.remaining() < ENCODED || b.get() != MAGIC) {
      LOG.log(System.Logger.Level.WARNING, key + " is not a lock this version can read: its"
          + " data will not be swept; remove it by hand if no writer or sweeper uses it");
      return Optional.of(new Lock(fileId, key, Owner.UNKNOWN, Long.MAX_VALUE, 0,
          got.version()));
    }
    byte owner = b.get();
    return Optional.of(new Lock(fileId, key, owner == 'W' ? Owner.WRITER
        : owner == 'S' ? Owner.SWEEPER : Owner.UNKNOWN, b.getLong(), b.getLong(),
        got.version()));
  }

  /** A writer's lock on its fresh file id, taken before any data blob exists. */
  Lock takeForWriter(String fileId, Duration lease) throws IOException {
    long expires = expiry(lease);
    long nonce = NONCES.nextLong();
    ns.calls().put(key(fileId), encode(Owner.WRITER, expires, nonce), PutMode.CREATE);
    return stamped(fileId, nonce);
  }

  /**
   * Extends a writer's lease; fails with an IOException if the lock is no longer the one
   * held: it expired and a sweeper took it, so the writer's data may be gone.
   */
  Lock renew(Lock held, Duration lease) throws IOException {
    long expires = expiry(lease);
    long nonce = NONCES.nextLong();
    try {
      ns.calls().putIfVersion(held.key(), encode(Owner.WRITER, expires, nonce),
          held.version());
    } catch (TransactionConflictException e) {
      throw new IOException("the writer's lease on its data ran out and the orphan sweeper"
          + " took it (" + held.key() + "): its data may be gone, so nothing is published", e);
    }
    return stamped(held.fileId(), nonce);
  }

  /**
   * The sweeper's lock on a candidate, taken only if the lock is as the sweeper last saw
   * it ({@code seen}: absent, or an expired lock to take over). Empty if someone else
   * changed it meanwhile.
   */
  Optional<Lock> takeForSweeper(String fileId, Optional<Lock> seen, Duration hold)
      throws IOException {
    long nonce = NONCES.nextLong();
    ByteBuffer content = encode(Owner.SWEEPER, expiry(hold), nonce);
    try {
      if (seen.isEmpty()) {
        ns.calls().put(key(fileId), content, PutMode.CREATE);
      } else {
        ns.calls().putIfVersion(key(fileId), content, seen.get().version());
      }
    } catch (TransactionConflictException | BlobAlreadyExistsException e) {
      return Optional.empty();
    }
    return Optional.of(stamped(fileId, nonce));
  }

  /**
   * Removes a lock if it is still the one held. Best effort: a lock left behind expires,
   * and is then removed by the next sweep or rename that meets it.
   */
  void release(Lock held) {
    try {
      ns.calls().deleteIfVersion(held.key(), held.version());
    } catch (TransactionConflictException e) {
      // Taken over meanwhile: it is the new holder's to release.
    } catch (IOException | RuntimeException e) {
      LOG.log(System.Logger.Level.DEBUG, "could not release " + held.key(), e);
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
    long deadline = System.nanoTime() + SWEEPER_WAIT.toNanos();
    long pauseMillis = 10;
    while (true) {
      Optional<Lock> lock = read(fileId);
      if (lock.isEmpty() || lock.get().owner() != Owner.SWEEPER
          || lock.get().expired(System.currentTimeMillis())) {
        return lock;
      }
      if (System.nanoTime() > deadline) {
        throw new IOException("the orphan sweeper has held the data of " + path + " ("
            + lock.get().key() + ") for over " + SWEEPER_WAIT.toSeconds() + " s; retry once"
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
   * Removes an expired sweeper's lock met by a rename, if it is still as read (else a new
   * holder has it, whose own checks apply). Non-transactional stores only: a transaction
   * does it as one of its steps.
   */
  void breakExpired(Lock lock) throws IOException {
    try {
      ns.calls().deleteIfVersion(lock.key(), lock.version());
    } catch (TransactionConflictException e) {
      throw new TransactionConflictException("the lock of " + lock.key()
          + " changed while a rename was removing the expired one");
    }
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

  private static ByteBuffer encode(Owner owner, long expiresMillis, long nonce) {
    ByteBuffer b = ByteBuffer.allocate(ENCODED);
    b.put(MAGIC).put((byte) (owner == Owner.WRITER ? 'W' : 'S')).putLong(expiresMillis)
        .putLong(nonce);
    return b.flip();
  }
}
