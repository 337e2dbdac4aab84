package io.blobfs.namespace;

import io.blobfs.store.BlobInfo;
import java.io.IOException;
import java.time.Clock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;

/**
 * Finds and removes data blobs that no record names: what a writer leaves behind when it
 * dies before {@code close()}, or a failed cleanup.
 *
 * <p>A file id is swept only if, in this order: no record named it in a first scan; its
 * newest data blob is older than {@code minAge}; no writer holds its lock (a writer's
 * lease, {@link NamespaceOptions#writerLease()}, renewed as it writes and before it
 * publishes); this sweeper then took its lock; a second scan of every record, made while
 * the lock is held, found no record naming it either; and the lock was still this
 * sweeper's after that scan. A record cannot slip past the second scan: renames wait for
 * a live sweeper's lock to go before removing the old name (and remove an expired one,
 * which makes its sweeper stand down), a file rename's lock is never taken over by a
 * sweeper (an interrupted one is settled, which fences its mover, and the file left to
 * the next sweep), and a writer publishes only after renewing its own
 * lock conditionally ({@link DataLocks}). So neither a writer at work, however idle within
 * its lease, nor a file renamed during the sweep loses data. Every client and sweeper of
 * a store must run this version: older ones neither take nor honour the locks.
 *
 * <p>Shared stripes (issue 16, {@code wip/shared-stripes/DESIGN.md} §2.5): an id whose
 * stripes a later version's map borrows is named (by that record), and an id whose lock is
 * {@link DataLocks.Owner#ADOPTED} is never taken, even unnamed in both scans: the record
 * naming its keys is not guarded by that id's lock, so it may have moved past both scans.
 * What a replace's cut cleanup left (a record's cleanup dues) is deleted from the first
 * scan, without locks, key by key: a listed key a due names and no scanned record names.
 * No record can name it later: its version was replaced, and the replacing version's
 * successors borrow only what it named (I1, I3). An ADOPTED lock whose id has no data
 * blob left, in the first scan and in a listing made after the lock was read, and that no
 * scanned record names (own id or map) goes too, conditionally.
 */
public final class OrphanSweeper {
  private static final System.Logger LOG = System.getLogger(OrphanSweeper.class.getName());

  /**
   * What a sweep found; {@code deletedBlobs} is 0 for a dry run, whose orphans are only
   * candidates (the second scan and the locks are skipped). {@code heldByWriters}: file ids
   * left alone because a writer's lease on them runs; {@code stillNamed}: candidates that
   * the second scan found named (renamed during the first); {@code adopted}: unnamed ids
   * left alone because their lock is ADOPTED; {@code dueBlobsDeleted}: blobs deleted as a
   * record's cleanup dues listed them; {@code adoptedLocksRemoved}: ADOPTED locks of ids
   * with no data left; {@code willsCarriedOut}: wills of deletes cut before their data
   * was gone, carried out ({@link DataLocks.Will}).
   */
  public record Report(int dataBlobs, int fileIds, int referencedFileIds,
      List<String> orphanFileIds, int orphanBlobs, long orphanBytes, int deletedBlobs,
      int heldByWriters, int stillNamed, int adopted, int dueBlobsDeleted,
      int adoptedLocksRemoved, int willsCarriedOut) {}

  /** What the records of one scan name: ids (own and borrowed), keys, cleanup dues. */
  private static final class Names {
    final Set<String> ids = new HashSet<>();
    final Set<String> ownIds = new HashSet<>();
    final Set<String> borrowedKeys = new HashSet<>();
    final List<FileRecord> withDues = new ArrayList<>();
  }

  /**
   * How long a sweeper's lock on a candidate lasts: past it, renames and later sweeps may
   * remove it, and this sweep then leaves that candidate alone. Its second scan of the
   * names must fit in it.
   */
  public static final Duration DEFAULT_LOCK_HOLD = Duration.ofMinutes(10);

  private final BlobNamespace ns;
  private final Duration lockHold;
  private final Clock clock;

  public OrphanSweeper(BlobNamespace ns) {
    this(ns, DEFAULT_LOCK_HOLD);
  }

  public OrphanSweeper(BlobNamespace ns, Duration lockHold) {
    this(ns, lockHold, Clock.systemUTC());
  }

  /**
   * With the clock that decides which leases have run out and which blobs are old enough:
   * a test stands in for "a day later" with an offset clock.
   */
  public OrphanSweeper(BlobNamespace ns, Duration lockHold, Clock clock) {
    this.ns = ns;
    this.lockHold = lockHold;
    this.clock = clock;
  }

  public Report sweep(Duration minAge, boolean dryRun) throws IOException {
    List<String> dataKeys = ns.scanAll(KeyLayout.DATA);
    Map<String, List<String>> blobsByFile = new TreeMap<>();
    Set<String> locked = new HashSet<>();
    for (String key : dataKeys) {
      String id = KeyLayout.fileIdOf(key);
      if (id != null) {
        List<String> blobs = blobsByFile.computeIfAbsent(id, k -> new ArrayList<>());
        if (KeyLayout.isLock(key)) {
          locked.add(id);
        } else {
          blobs.add(key);
        }
      }
    }
    List<String> incoming = new ArrayList<>();
    Names names = namedFileIds(incoming);
    Set<String> referenced = names.ids;
    int dueBlobsDeleted = 0;
    int adoptedLocksRemoved = 0;
    if (!dryRun) {
      removeExpiredLocksOfNamedFiles(locked, referenced);
      removeDeadIncoming(incoming);
      dueBlobsDeleted = runDues(names, blobsByFile);
      adoptedLocksRemoved = removeSpentAdoptions(names, locked, blobsByFile);
    }
    long now = clock.millis();
    long cutoff = now - minAge.toMillis();
    Map<String, List<BlobInfo>> candidates = new HashMap<>();
    Map<String, Optional<DataLocks.Lock>> seenLocks = new HashMap<>();
    int heldByWriters = 0;
    int adopted = 0;
    int willsCarriedOut = 0;
    for (Map.Entry<String, List<String>> e : blobsByFile.entrySet()) {
      String id = e.getKey();
      if (referenced.contains(id)) {
        continue;
      }
      List<BlobInfo> infos = oldBlobs(e.getValue(), cutoff);
      if (infos == null) {
        continue; // written to recently
      }
      Optional<DataLocks.Lock> lock = ns.locks().read(id);
      if (lock.isPresent() && lock.get().owner() == DataLocks.Owner.ADOPTED) {
        // A later version names (or is committing to name) some of its keys: that record
        // may have moved past this scan, and the second one too. Never taken.
        adopted++;
        continue;
      }
      if (lock.isPresent() && lock.get().will() != null) {
        // A delete's will (DESIGN §2.4): expired, it is carried out (its record's own,
        // borrowed and due keys, the borrowed ids' ADOPTED locks) if the delete applied,
        // else voided; never taken as a sweeper's, which would lose it. Live: its delete
        // runs.
        if (!dryRun && lock.get().unsettledWill(now) && settleWill(lock.get())) {
          willsCarriedOut++;
        }
        continue;
      }
      if (lock.isPresent() && lock.get().owner() == DataLocks.Owner.RENAMER
          && lock.get().move() != null) {
        // A rename of it, live or cut off: its file is named, by the source or the
        // destination, whatever the first scan saw. An interrupted one is settled (which
        // fences its mover, if it only stalled) and the file left to the next sweep.
        // Before, the sweeper took such a lock over as it was: the move it recorded was
        // lost, and a mover past its lease resumed, committed and finished during the
        // second scan, which then found neither name and deleted the data the new name
        // held (fourth review).
        if (lock.get().interruptedMove(clock.millis())) {
          MoveSettler.settle(ns, lock.get());
        }
        continue;
      }
      // A writer's lock whose lease ran out, or a sweeper's past its hold (it died, or runs
      // alongside: it checks its lock before deleting anything), may be taken over.
      if (lock.isPresent() && !lock.get().expired(now)) {
        if (lock.get().owner() == DataLocks.Owner.WRITER) {
          heldByWriters++;
        }
        continue;
      }
      candidates.put(id, infos);
      seenLocks.put(id, lock);
    }
    if (dryRun) {
      return report(blobsByFile, referenced, candidates, 0, heldByWriters, 0, adopted, 0, 0,
          0);
    }

    Map<String, DataLocks.Lock> held = new HashMap<>();
    try {
      for (String id : candidates.keySet()) {
        ns.locks().takeForSweeper(id, seenLocks.get(id), lockHold)
            .ifPresent(lock -> held.put(id, lock));
      }
      candidates.keySet().retainAll(held.keySet());
      Set<String> namedNow = held.isEmpty() ? Set.of() : namedFileIds(new ArrayList<>()).ids;
      int stillNamed = 0;
      for (String id : List.copyOf(candidates.keySet())) {
        if (namedNow.contains(id)) {
          candidates.remove(id);
          ns.locks().release(held.remove(id)); // at once: a rename of it may be waiting
          stillNamed++;
        } else if (!ns.locks().stillHeld(held.get(id))) {
          // Changed during the second scan (this sweep outlived its hold, and a rename or
          // another sweep removed the lock): the scan proves nothing. Not ours to release.
          candidates.remove(id);
          held.remove(id);
        }
      }
      int deleted = 0;
      for (Map.Entry<String, List<BlobInfo>> e : candidates.entrySet()) {
        for (BlobInfo blob : e.getValue()) {
          if (ns.calls().delete(blob.key())) {
            deleted++;
          }
        }
        // Stripes written after the first scan (by a writer whose lease ran out) are left
        // for the next sweep: they are as unnamed and will be as old.
        ns.locks().release(held.remove(e.getKey()));
      }
      return report(blobsByFile, referenced, candidates, deleted, heldByWriters,
          stillNamed, adopted, dueBlobsDeleted, adoptedLocksRemoved, willsCarriedOut);
    } finally {
      // Named after all, or a deletion failed: the lock goes so renames need not wait.
      // A lock kept by a sweeper that died expires after its hold; then the next sweep or
      // rename that meets it removes it.
      for (DataLocks.Lock lock : held.values()) {
        ns.locks().release(lock);
      }
    }
  }

  /** The blobs, if every one of them was last written before {@code cutoff}; else null. */
  private List<BlobInfo> oldBlobs(List<String> keys, long cutoff) throws IOException {
    List<BlobInfo> infos = new ArrayList<>();
    for (String key : keys) {
      BlobInfo info = ns.calls().stat(key);
      if (info.exists()) {
        if (info.modifiedMillis() == 0 || info.modifiedMillis() >= cutoff) {
          return null;
        }
        infos.add(info);
      }
    }
    return infos;
  }

  /**
   * The file ids that a stored record names, a file rename's marked records included,
   * whatever readers make of their marks: a moved source not yet removed
   * ({@link CommittedMove}) and an incoming record still name the data until they go. Read raw, as stored: a scan neither depends on a
   * rename's progress (before, a reader's re-reads of a changing incoming record could
   * fail the whole scan) nor writes (a reader rolls a moved source forward).
   */
  private Names namedFileIds(List<String> incoming) throws IOException {
    Names names = new Names();
    for (String key : ns.scanAll(KeyLayout.NAMES + "/")) {
      if (!KeyLayout.isMarker(key)) {
        Optional<VersionedRecord> read = ns.readStored(key, false);
        if (read.isEmpty()) {
          continue;
        }
        FileRecord r = read.get().record();
        names.ids.add(r.fileId());
        names.ownIds.add(r.fileId());
        // Ids whose stripes its map borrows (BFS3) are named too: never orphans.
        names.ids.addAll(r.map().ids());
        for (StripeMap.Run run : r.map().runs()) {
          for (long s = run.first(); s < run.first() + run.count(); s++) {
            names.borrowedKeys.add(r.stripeKey(ns.layout(), s));
          }
        }
        if (!r.dues().isEmpty()) {
          names.withDues.add(r);
        }
        if (r.mark() == FileRecord.Mark.INCOMING) {
          incoming.add(key);
        }
      }
    }
    return names;
  }

  /**
   * Deletes the listed blobs that a record's cleanup dues name (all of an id's stripes
   * below its count, or those the record's own map does not name) and no scanned record
   * names: what a replace cut before its cleanup left. Returns how many went.
   */
  private int runDues(Names names, Map<String, List<String>> blobsByFile) {
    int deleted = 0;
    for (FileRecord r : names.withDues) {
      for (FileRecord.Due due : r.dues()) {
        if (names.ownIds.contains(due.fileId())) {
          continue; // a live version's own id: never a due's (a damaged record?)
        }
        for (String key : blobsByFile.getOrDefault(due.fileId(), List.of())) {
          long s = stripeOf(key);
          boolean listed = s >= 0 && s < due.stripeCount()
              && (due.scope() == FileRecord.Due.Scope.ALL
              || !due.fileId().equals(r.map().idOf(s)));
          if (listed && !names.borrowedKeys.contains(key)) {
            try {
              if (ns.calls().delete(key)) {
                deleted++;
              }
            } catch (IOException e) {
              // left for the next sweep, or the record's next publication or delete
            }
          }
        }
      }
    }
    return deleted;
  }

  private static long stripeOf(String dataKey) {
    try {
      return Long.parseLong(dataKey.substring(dataKey.lastIndexOf('/') + 1));
    } catch (NumberFormatException e) {
      return -1;
    }
  }

  /**
   * Removes the ADOPTED locks of ids with no data blob that no scanned record names (a
   * cleanup cut between an id's last key and its lock): no key of such an id can appear
   * again (I3), so no record can need it. "No data blob" is checked again after the lock
   * was read ADOPTED: the data scan alone proves nothing, as it may have met the id's
   * writer at work (its lock taken, its stripes not yet written), the version then
   * published and adopted by the next one before the names scan, which finds it named by
   * that one's map and no record's own id (issue 16, the race
   * {@code sweepsDuringTakeoversLoseNoNamedKey} met under load: the lock of a live
   * borrowed id went, and the next sweep could have taken the id and deleted its stripes).
   * An ADOPTED lock is written only over a published version's, and a version publishes
   * only once every stripe a map can name is written: a listing made after the lock was
   * read ADOPTED and holding none of its stripes shows them all deleted, for good. One
   * listing for all such ids (on RADOS a listing is a scan of the whole data namespace);
   * ids a map names keep their locks without one. Conditional on the lock as read.
   */
  private int removeSpentAdoptions(Names names, Set<String> locked,
      Map<String, List<String>> blobsByFile) throws IOException {
    Map<String, DataLocks.Lock> spent = new HashMap<>();
    for (String id : locked) {
      // An id a map names keeps its lock without a look: the race above is exactly that
      // case (its stripes exist), and a second listing costs a whole data scan on RADOS,
      // which cannot list by prefix (adopt-race review, M1).
      if (blobsByFile.getOrDefault(id, List.of()).isEmpty() && !names.ids.contains(id)) {
        Optional<DataLocks.Lock> lock = ns.locks().read(id);
        if (lock.isPresent() && lock.get().owner() == DataLocks.Owner.ADOPTED) {
          spent.put(id, lock.get());
        }
      }
    }
    if (spent.isEmpty()) {
      return 0;
    }
    Set<String> withData = new HashSet<>();
    try {
      // one listing for all of them, made after every lock was read ADOPTED
      for (String key : ns.scanAll(KeyLayout.DATA)) {
        String id = KeyLayout.fileIdOf(key);
        if (id != null && !KeyLayout.isLock(key) && spent.containsKey(id)) {
          withData.add(id);
        }
      }
    } catch (IOException e) {
      // kept for the next sweep, which looks again; the candidates still get their turn
      LOG.log(System.Logger.Level.WARNING, "could not list the data again to remove "
          + spent.size() + " spent adoptions; left for the next sweep", e);
      return 0;
    }
    int removed = 0;
    for (Map.Entry<String, DataLocks.Lock> e : spent.entrySet()) {
      if (!withData.contains(e.getKey())) {
        ns.locks().release(e.getValue());
        removed++;
      }
    }
    return removed;
  }

  /**
   * Removes the incoming records of moves that can never commit (a fenced mover that died
   * before its rollback left them): readers take them for absent, but each kept its
   * directory in existence and its name taken until a create reclaimed it (fifth review,
   * S1). One whose move may still commit is left ({@link BlobNamespace#removedDeadIncoming}).
   * Its file id stays counted as named for this sweep: the source names the same data.
   */
  private void removeDeadIncoming(List<String> incoming) throws IOException {
    for (String key : incoming) {
      ns.removedDeadIncoming(key);
    }
  }

  /**
   * A lock left on a named file (its writer or a sweeper could not release it) delays
   * renames and sweeps of it: once expired it goes, if unchanged since read. One left by a
   * rename cut off mid-move is settled instead ({@link MoveSettler}): the file may have two
   * names, and its lock is all that says which one is to stay.
   */
  private void removeExpiredLocksOfNamedFiles(Set<String> locked, Set<String> named)
      throws IOException {
    long now = clock.millis();
    for (String id : locked) {
      if (named.contains(id)) {
        Optional<DataLocks.Lock> lock = ns.locks().read(id);
        if (lock.isPresent() && lock.get().interruptedMove(now)) {
          MoveSettler.settle(ns, lock.get());
        } else if (lock.isPresent() && lock.get().unsettledWill(now)) {
          settleWill(lock.get()); // void if its name still holds the record
        } else if (lock.isPresent() && lock.get().expired(now)
            && lock.get().owner() != DataLocks.Owner.ADOPTED) { // its until is no lease
          ns.locks().release(lock.get());
        }
      }
    }
  }

  /**
   * {@link DataLocks#settleWill}, except that a will whose data cannot all be deleted
   * ({@link DataLocks.WillLeft}: it stays in this sweeper's lock, expiring, for the next
   * settler) is logged and passed over, false, so the sweep goes on with the next file
   * (second review of the will, should-fix 2). Before, it ended the whole sweep: one will
   * that kept failing stopped every run from sweeping anything after it.
   */
  private boolean settleWill(DataLocks.Lock will) throws IOException {
    try {
      return ns.locks().settleWill(will);
    } catch (DataLocks.WillLeft left) {
      LOG.log(System.Logger.Level.WARNING, left.getMessage(), left.getCause());
      return false;
    }
  }

  private static Report report(Map<String, List<String>> blobsByFile,
      Set<String> referenced, Map<String, List<BlobInfo>> orphans, int deleted,
      int heldByWriters, int stillNamed, int adopted, int dueBlobsDeleted,
      int adoptedLocksRemoved, int willsCarriedOut) {
    List<String> ids = new ArrayList<>(orphans.keySet());
    ids.sort(null);
    int blobs = 0;
    long bytes = 0;
    for (List<BlobInfo> infos : orphans.values()) {
      blobs += infos.size();
      for (BlobInfo info : infos) {
        bytes += info.size();
      }
    }
    int dataBlobs = 0;
    for (List<String> keys : blobsByFile.values()) {
      dataBlobs += keys.size();
    }
    return new Report(dataBlobs, blobsByFile.size(), referenced.size(), ids, blobs,
        bytes, deleted, heldByWriters, stillNamed, adopted, dueBlobsDeleted,
        adoptedLocksRemoved, willsCarriedOut);
  }
}
