package io.blobfs.namespace;

import io.blobfs.store.BlobMutation;
import io.blobfs.store.PutMode;
import io.blobfs.store.StoreFullException;
import io.blobfs.store.TransactionConflictException;
import io.blobfs.store.TransactionalBlobStore;
import java.io.IOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;

/**
 * The commit of a new version B over its base A at the same name ({@link
 * BlobNamespace#createVersion}, issue 16, {@code wip/shared-stripes/DESIGN.md} §2.3), with
 * transactions (Týr, memory): in one transaction,
 * <ol>
 *   <li>{@code Put(name, B)} + {@code Check(name, vA)}: B replaces exactly the version it
 *       was made from, else nothing is applied ({@link BaseChangedException});
 *   <li>if B names any key {@code d/A/s}: {@code Put(d/A/lock, ADOPTED by B)} + {@code
 *       Check(d/A/lock, as read)}, read after {@link DataLocks#awaitNoSweeper} (an expired
 *       sweeper's lock is overwritten: that sweeper checks its lock before it deletes, and
 *       stands down). WHY with the commit: from the commit on, A's keys are named by a
 *       record whose own id is not A; a sweeper that took A's lock (A unnamed in its first
 *       scan, B moving between its scans) could delete them. The check makes the commit
 *       fail instead, and it is tried again once no live sweeper holds the lock (I2);
 *   <li>{@code Delete} of every key of {@code keys(A) − keys(B)} (A's map and its cleanup
 *       dues, computed from the decoded records), then of the ADOPTED lock of every id A
 *       borrowed from that B no longer names, conditionally on the version read (I5).
 * </ol>
 * Nothing is left to a crash: the name holds A with all its keys, or B with exactly its
 * own. Deleting {@code keys(A) − keys(B)} is safe: by I1 (one owner) A was the only file
 * naming them, and B, which replaces A at its only name in the same transaction, does not
 * (the stripe index never changes, so a key {@code d/X/s} could only be B's stripe
 * {@code s}, which is compared). Readers of A opened before see A's bytes on the keys B
 * took (written once, I3) and {@code FileNotFoundException} on the others, never B's.
 *
 * <p>A cleanup too large for one transaction ({@link
 * io.blobfs.store.StoreLimits#maxCommitBytes}: about 4 KiB of deletes per 100 stripes)
 * is carried by B's record instead, as cleanup dues (A's keys that B does not name, and
 * the keys of the ids A borrowed), and done right after the commit, which then drops the
 * dues ({@code putIfVersion(name, B without dues, vB)}, as the RADOS step 7); a crash
 * there leaves them to the sweeper, which runs dues, or to the next version over B, which
 * deletes them with its own cleanup and carries them on only while its own is cut too.
 * A record whose head alone (with its dues) is over the limit is refused before the
 * commit ({@link RecordTooLargeException}), its data discarded.
 */
final class TakeoverCommit {
  private static final System.Logger LOG = System.getLogger(TakeoverCommit.class.getName());

  private final BlobNamespace ns;

  TakeoverCommit(BlobNamespace ns) {
    this.ns = ns;
  }

  private interface KeyStep {
    void accept(String key) throws IOException;
  }

  /**
   * Publishes {@code ours} over the version {@code baseId} at {@code path}. {@code
   * discardData} removes the writer's own keys (never a taken-over one: those are
   * {@code d/<other id>/s}); it runs whenever nothing can have been applied.
   */
  void commit(FsPath path, FileRecord ours, String baseId, Runnable discardData,
      BlobNamespace.Renewal renewWriterLock) throws IOException {
    if (!ns.calls().transactional()) {
      commitInSteps(path, ours, baseId, discardData, renewWriterLock);
      return;
    }
    String key = ns.layout().recordKey(path);
    TransactionalBlobStore tx = ns.calls().transactions();
    for (int attempt = 1; ; attempt++) {
      FileRecord published;
      List<BlobMutation> mutations;
      boolean cleanupAfter;
      FileRecord base;
      try {
        Optional<VersionedRecord> now = ns.readRecord(key, false);
        if (now.isEmpty() || !now.get().record().fileId().equals(baseId)) {
          throw new BaseChangedException(path + " no longer holds the version this writer"
              + " was made from (" + baseId + "): replaced, renamed or deleted meanwhile;"
              + " nothing was published");
        }
        if (attempt > 1) {
          renewWriterLock.renew(); // the retry may follow a wait for a sweeper
        }
        base = now.get().record();
        List<BlobMutation> head = new ArrayList<>();
        head.add(null); // the record's put, below
        head.add(new BlobMutation.Check(key, now.get().version()));
        if (ours.map().ids().contains(baseId)) {
          // Review S2: a wait for a sweeper on A can outlast the writer's lease, and a sweep
          // may then have taken B's own data: the lease is renewed (conditionally: it fails
          // if a sweeper took B's lock) after any wait, on every attempt. Afterwards, as for
          // a plain overwrite (commitFile), only reads come before the transaction.
          Optional<DataLocks.Lock> lock =
              ns.locks().awaitNoSweeper(baseId, path, renewWriterLock);
          String lockKey = ns.locks().key(baseId);
          head.add(new BlobMutation.Put(lockKey,
              DataLocks.adopted(ours.fileId(), Duration.ZERO), PutMode.OVERWRITE));
          head.add(new BlobMutation.Check(lockKey,
              lock.map(DataLocks.Lock::version).orElse(BlobMutation.ABSENT)));
        }
        List<BlobMutation> tail = new ArrayList<>();
        long budget = tx.limits().maxCommitBytes();
        boolean fits = forEachUnnamed(base, ours,
            k -> tail.add(new BlobMutation.Delete(k, BlobMutation.ANY_VERSION)), budget);
        for (String id : dropped(base, ours)) {
          Optional<DataLocks.Lock> lock = ns.locks().read(id);
          if (lock.isPresent() && lock.get().owner() == DataLocks.Owner.ADOPTED) {
            // After its keys (I2): nothing names them once this transaction applies.
            tail.add(new BlobMutation.Delete(lock.get().key(), lock.get().version()));
          }
        }
        head.set(0, new BlobMutation.Put(key, ours.encode(), PutMode.OVERWRITE));
        fits = fits && tx.commitBytes(head) + tx.commitBytes(tail) <= budget;
        cleanupAfter = !fits;
        published = fits ? ours : ours.withStripes(ours.map(), duesFor(base, ours));
        head.set(0, new BlobMutation.Put(key, published.encode(), PutMode.OVERWRITE));
        if (tx.commitBytes(head) > budget) {
          // Review S3: the record (with its dues) and its checks alone exceed one commit.
          // The store would refuse it before applying anything: refused here, typed, and
          // the data discarded (the catch below), not left as an unknown outcome.
          throw new RecordTooLargeException(path + ": the record of this version, with the"
              + " cleanup it must carry, takes " + tx.commitBytes(head) + " bytes of a commit"
              + " limited to " + budget + "; nothing was published");
        }
        mutations = head;
        if (fits) {
          mutations.addAll(tail);
        }
      } catch (IOException | RuntimeException e) {
        discardData.run();
        throw e;
      }
      try {
        ns.calls().commit(mutations);
      } catch (TransactionConflictException e) {
        // The name or A's lock changed since they were read: read again (a changed base
        // is then a BaseChangedException; a sweeper's lock is waited for).
        if (attempt < BlobNamespace.RACE_ATTEMPTS) {
          continue;
        }
        discardData.run();
        throw BlobNamespace.lostRace("publish " + path, e);
      } catch (StoreFullException e) {
        if (!ns.publishedDespite(path, key, published, e)) {
          discardData.run();
          throw e;
        }
      } catch (IOException | RuntimeException e) {
        // Unknown outcome: published if the name holds B now (the cleanup went with it);
        // else thrown, and B's data is left to the sweeper (the commit may apply late).
        ns.confirmPublished(path, key, published, e);
      }
      if (cleanupAfter) {
        cleanUp(path, key, base, ours, published, renewWriterLock);
      }
      return;
    }
  }

  private static BaseChangedException baseChanged(FsPath path, String baseId) {
    return new BaseChangedException(path + " no longer holds the version this writer was"
        + " made from (" + baseId + "): replaced, renamed or deleted meanwhile; nothing was"
        + " published");
  }

  /**
   * Without transactions (RADOS): DESIGN §2.3 steps 1-7, each conditional.
   * <ol>
   *   <li>read the name: another id than the base's is a {@link BaseChangedException};
   *   <li>A's lock as a replace takes it ({@link DataLocks#takeForReplace}: no rename,
   *       delete or sweep of A meanwhile), the name read again under it;
   *   <li>the writer's lease renewed (no sweeper took B's data);
   *   <li>if B names any {@code d/A/s}: A's lock made ADOPTED by B, conditionally on the
   *       lock held, until a rename lease from now. WHY before the commit: from the commit
   *       on, A's keys are named by a record whose own id is not A, and no sweeper may
   *       take A's lock then (I2). {@code until} keeps renames, deletes and overwrites of
   *       A waiting, as the lock held did; never reverted once written, since a commit
   *       whose answer is lost may still apply (review S1: whoever takes the lock after
   *       {@code until} puts it back if it loses to that commit);
   *   <li>the commit: {@code putIfVersion(name, B with its cleanup as dues, vA)}, so that
   *       a cut cleanup is found from B's record (the sweeper runs dues; the next version
   *       over B or a delete of B deletes them);
   *   <li>the cleanup: {@code keys(A) − keys(B)}, then the ADOPTED locks of the ids B no
   *       longer names, only while A's lock is still as this writer left it (else a client
   *       that overtook a stall decided; the dues stay for the sweeper);
   *   <li>the dues dropped: {@code putIfVersion(name, B, vB)}, only over B as this writer
   *       put it: vB read while the writer's own lock is still as it held it, since a
   *       delete takes that lock before it fences (review must-fix 1; no rename's mark: a
   *       conflict leaves the dues, harmless).
   * </ol>
   * A cut after any step leaves the name holding A whole or B whole: before step 5 B's
   * keys are unnamed (the sweeper takes them once the writer's lease ends) and A's are
   * A's; from step 5 on, A's keys B does not name are listed in B's dues.
   */
  private void commitInSteps(FsPath path, FileRecord ours, String baseId,
      Runnable discardData, BlobNamespace.Renewal renewWriterLock) throws IOException {
    String key = ns.layout().recordKey(path);
    DataLocks.Lock held = null;
    boolean adopted = false;
    FileRecord base;
    FileRecord published;
    long baseVersion;
    try {
      for (int attempt = 1; ; attempt++) {
        Optional<VersionedRecord> now = ns.readRecord(key, false); // 1
        if (now.isEmpty() || !now.get().record().fileId().equals(baseId)) {
          throw baseChanged(path, baseId);
        }
        DataLocks.Held taken = ns.locks().takeForReplace(key, now.get(), path, // 2
            ns.locks().forWriter());
        if (taken.changed()) {
          if (attempt < BlobNamespace.RACE_ATTEMPTS) {
            continue; // changed after it was read: step 1 tells whether it is A still
          }
          throw BlobNamespace.lostRace("publish " + path, new TransactionConflictException(
              path + " kept changing while this version tried to replace it"));
        }
        held = taken.lock();
        base = now.get().record();
        baseVersion = now.get().version();
        break;
      }
      renewWriterLock.renew(); // 3
      published = ours.withStripes(ours.map(), duesFor(base, ours));
      if (ours.map().ids().contains(baseId)) { // 4
        adopted = true; // from the attempt on: a write whose answer is lost may be applied
        held = ns.locks().adopt(baseId, Optional.of(held), ours.fileId(),
            ns.locks().renameLease());
      }
    } catch (IOException | RuntimeException e) {
      if (held != null && !adopted) {
        ns.locks().release(held, key);
      }
      discardData.run();
      throw e;
    }
    try {
      ns.calls().putIfVersion(key, published.encode(), baseVersion); // 5
    } catch (TransactionConflictException e) {
      // The name changed although A's lock was held: a stall past the lease, and the lock
      // taken over. Refused, so never applied later: B's keys are its own, unnamed.
      if (!adopted) {
        ns.locks().release(held, key);
      }
      discardData.run();
      throw baseChanged(path, baseId);
    } catch (StoreFullException e) {
      if (!ns.publishedDespite(path, key, published, e)) {
        if (!adopted) {
          ns.locks().release(held, key);
        }
        discardData.run();
        throw e;
      }
    } catch (IOException | RuntimeException e) {
      try {
        ns.confirmPublished(path, key, published, e);
      } catch (IOException notPublished) {
        if (!adopted) {
          ns.locks().release(held, key); // an unknown put is no different from a plain one
        }
        throw notPublished;
      }
    }
    try {
      if (held == null || ns.locks().stillHeld(held)) { // 6
        forEachUnnamed(base, published, ns.calls()::delete, Long.MAX_VALUE);
        for (String id : dropped(base, published)) {
          ns.locks().releaseAdopted(id);
        }
        if (held != null && !adopted) {
          ns.locks().release(held); // A is gone whole: its lock with it
        }
        ns.dropDues(key, ours, ours.encode(), renewWriterLock); // 7
      } else {
        LOG.log(System.Logger.Level.INFO, "the lock on " + held.key() + " was taken over"
            + " while " + path + " was published: the cleanup is left to the sweeper (the"
            + " record's dues)");
      }
    } catch (IOException | RuntimeException e) {
      LOG.log(System.Logger.Level.WARNING, "published " + path + ", but its cleanup was"
          + " not finished; its record lists what is left as cleanup dues, which the orphan"
          + " sweeper or the next version runs", e);
    }
  }

  /**
   * The cleanup that did not fit the commit's transaction, after it: the keys first, then
   * the dropped ids' ADOPTED locks (I2), then B's dues dropped. Best effort: until then
   * B's record carries the cleanup as dues.
   */
  private void cleanUp(FsPath path, String key, FileRecord base, FileRecord ours,
      FileRecord published, BlobNamespace.Renewal writer) {
    try {
      forEachUnnamed(base, published, ns.calls()::delete, Long.MAX_VALUE);
      for (String id : dropped(base, published)) {
        ns.locks().releaseAdopted(id);
      }
      // WHY (review M1): once done, the dues go, as RADOS step 7 drops them; else the next
      // oversized version copies them forward plus this base's id, one id more per
      // version, until the header passes 4 KiB. Conditional on the name holding B as put.
      ns.dropDues(key, ours, ours.encode(), writer);
    } catch (IOException | RuntimeException e) {
      LOG.log(System.Logger.Level.WARNING, "published " + path + ", but removing the keys"
          + " of the version it replaced failed; its record lists them as cleanup dues,"
          + " which the orphan sweeper runs", e);
    }
  }

  /**
   * Calls {@code step} for every key of {@code keys(a) − keys(b)}: a's stripes (through
   * its map) and the keys its cleanup dues list, less those b names. A key {@code d/X/s}
   * can only be b's stripe {@code s}, so one comparison per key decides. Stops, returning
   * false, once more keys than {@code budget} allows (counted as a delete's bytes at
   * least) would follow: a due may list up to 2^32 stripes, never gathered whole.
   */
  private boolean forEachUnnamed(FileRecord a, FileRecord b, KeyStep step, long budget)
      throws IOException {
    long spent = 0;
    for (long s = 0; s < a.stripeCount(); s++) {
      String k = a.stripeKey(ns.layout(), s);
      if (!names(b, s, k)) {
        if ((spent += 2L * k.length() + TransactionalBlobStore.MUTATION_OVERHEAD_BYTES)
            > budget) {
          return false;
        }
        step.accept(k);
      }
    }
    for (FileRecord.Due due : a.dues()) {
      for (long s = 0; s < due.stripeCount(); s++) {
        String k = ns.layout().dataKey(due.fileId(), s);
        if (!names(b, s, k) && !names(a, s, k)) { // a's named keys were visited above
          if ((spent += 2L * k.length() + TransactionalBlobStore.MUTATION_OVERHEAD_BYTES)
              > budget) {
            return false;
          }
          step.accept(k);
        }
      }
    }
    return true;
  }

  private boolean names(FileRecord r, long s, String k) {
    return s < r.stripeCount() && r.stripeKey(ns.layout(), s).equals(k);
  }

  /** The ids a borrowed from (map or dues) that b does not name: their locks go (I5). */
  private static Set<String> dropped(FileRecord a, FileRecord b) {
    Set<String> ids = new LinkedHashSet<>(a.map().ids());
    a.dues().forEach(d -> ids.add(d.fileId()));
    ids.removeAll(b.map().ids());
    ids.remove(b.fileId());
    return ids;
  }

  /**
   * What b's record must carry when its cleanup follows the commit: every id whose keys
   * a named or owed (its own, its borrowed, its dues' ids) with a's extent,
   * {@code UNNAMED} (relative to b's map, so a key b names is never deleted: DESIGN §2.5)
   * if b names the id, else {@code ALL}.
   */
  static List<FileRecord.Due> duesFor(FileRecord a, FileRecord b) {
    Map<String, Long> extent = new LinkedHashMap<>();
    extent.put(a.fileId(), a.stripeCount());
    a.map().ids().forEach(id -> extent.merge(id, a.stripeCount(), Math::max));
    a.dues().forEach(d -> extent.merge(d.fileId(), d.stripeCount(), Math::max));
    List<FileRecord.Due> dues = new ArrayList<>();
    extent.forEach((id, n) -> dues.add(new FileRecord.Due(id, n,
        b.map().ids().contains(id) ? FileRecord.Due.Scope.UNNAMED : FileRecord.Due.Scope.ALL)));
    return dues;
  }
}
