package io.blobfs.namespace;

import io.blobfs.store.BlobAlreadyExistsException;
import io.blobfs.store.PutMode;
import io.blobfs.store.TransactionConflictException;
import io.blobfs.store.VersionedBytes;
import java.io.FileNotFoundException;
import java.io.IOException;
import java.io.InterruptedIOException;
import java.nio.ByteBuffer;
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
 *       it goes (a lease: {@link NamespaceOptions#writerLease()}), and releases it after
 *       its record is published or its data discarded. The sweeper passes over a file id
 *       whose writer lock has not expired.
 *   <li>The sweeper takes the lock of each candidate, then scans every record again, and
 *       deletes data only of candidates still unnamed, before it releases their locks.
 *   <li>A rename checks, after the new name exists and before the old one goes (in the
 *       same transaction where the store has them), that no sweeper holds the lock. While
 *       a sweeper does, it keeps both names, waiting for the sweeper to see one of them.
 * </ul>
 *
 * A record therefore never stops being visible to a sweeper's second scan: whoever could
 * move it away from the sweeper's eyes waits for that sweeper.
 */
final class DataLocks {
  private static final System.Logger LOG = System.getLogger(DataLocks.class.getName());
  private static final byte MAGIC = 'L';
  private static final int ENCODED = 1 + 1 + 8;
  /** How long a rename waits for a sweeper to finish looking at a file before failing. */
  static final Duration SWEEPER_WAIT = Duration.ofSeconds(60);

  enum Owner { WRITER, SWEEPER }

  /**
   * A lock as read or taken: who holds it, until when (wall clock of its holder), and the
   * version of its blob, which every later change of it is conditional on.
   */
  record Lock(String fileId, String key, Owner owner, long expiresMillis, long version) {
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
      // Not ours to judge: held by nobody known, never expired, so never taken over.
      return Optional.of(new Lock(fileId, key, Owner.SWEEPER, Long.MAX_VALUE, got.version()));
    }
    Owner owner = b.get() == 'W' ? Owner.WRITER : Owner.SWEEPER;
    return Optional.of(new Lock(fileId, key, owner, b.getLong(), got.version()));
  }

  /** A writer's lock on its fresh file id, taken before any data blob exists. */
  Lock takeForWriter(String fileId, Duration lease) throws IOException {
    long expires = System.currentTimeMillis() + lease.toMillis();
    String key = key(fileId);
    ns.calls().put(key, encode(Owner.WRITER, expires), PutMode.CREATE);
    return stamped(fileId, Owner.WRITER, expires);
  }

  /**
   * Extends a writer's lease; fails with an IOException if the lock is no longer the one
   * held: it expired and a sweeper took it, so the writer's data may be gone.
   */
  Lock renew(Lock held, Duration lease) throws IOException {
    long expires = System.currentTimeMillis() + lease.toMillis();
    try {
      ns.calls().putIfVersion(held.key(), encode(Owner.WRITER, expires), held.version());
    } catch (TransactionConflictException e) {
      throw new IOException("the writer's lease on its data expired and the orphan sweeper"
          + " took it (" + held.key() + "); its data may be gone", e);
    }
    return stamped(held.fileId(), Owner.WRITER, expires);
  }

  /**
   * The sweeper's lock on a candidate, taken only if the lock is as the sweeper last saw
   * it ({@code seen}: absent, or an expired lock to take over). Empty if someone else
   * changed it meanwhile.
   */
  Optional<Lock> takeForSweeper(String fileId, Optional<Lock> seen, Duration hold)
      throws IOException {
    long expires = System.currentTimeMillis() + hold.toMillis();
    String key = key(fileId);
    try {
      if (seen.isEmpty()) {
        ns.calls().put(key, encode(Owner.SWEEPER, expires), PutMode.CREATE);
      } else {
        ns.calls().putIfVersion(key, encode(Owner.SWEEPER, expires), seen.get().version());
      }
    } catch (TransactionConflictException | BlobAlreadyExistsException e) {
      return Optional.empty();
    }
    return Optional.of(stamped(fileId, Owner.SWEEPER, expires));
  }

  /**
   * Removes a lock if it is still the one held. Best effort: a lock left behind is taken
   * over by a later sweep once it expires, and until then only delays sweeping.
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
   * For a rename of the file with this id: returns the lock as it is when no sweeper holds
   * it (empty: no lock), waiting up to {@link #SWEEPER_WAIT} while one does. A transaction
   * makes its move conditional on the lock staying as returned.
   */
  Optional<Lock> awaitNoSweeper(String fileId, FsPath path) throws IOException {
    long deadline = System.nanoTime() + SWEEPER_WAIT.toNanos();
    long pauseMillis = 10;
    while (true) {
      Optional<Lock> lock = read(fileId);
      if (lock.isEmpty() || lock.get().owner() != Owner.SWEEPER) {
        return lock;
      }
      if (System.nanoTime() > deadline) {
        throw new IOException("the orphan sweeper has held the data of " + path + " ("
            + lock.get().key() + ") for over " + SWEEPER_WAIT.toSeconds() + " s; retry the"
            + " rename once it is done (a lock of a sweeper that died is taken over by the"
            + " next sweep)");
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

  /** The version of a lock just written, read back: put does not return it. */
  private Lock stamped(String fileId, Owner owner, long expires) throws IOException {
    Optional<Lock> now = read(fileId);
    if (now.isEmpty() || now.get().owner() != owner || now.get().expiresMillis() != expires) {
      throw new IOException("lock " + key(fileId) + " changed right after it was taken");
    }
    return now.get();
  }

  private static ByteBuffer encode(Owner owner, long expiresMillis) {
    ByteBuffer b = ByteBuffer.allocate(ENCODED);
    b.put(MAGIC).put((byte) (owner == Owner.WRITER ? 'W' : 'S')).putLong(expiresMillis);
    return b.flip();
  }
}
