package io.blobfs.namespace;

import io.blobfs.store.BlobInfo;
import java.io.IOException;
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
 * lease runs from its last write, {@link NamespaceOptions#writerLease()}); this sweeper
 * then took its lock (for {@code minAge}); a second scan of every record, made while the
 * lock is held, found no record naming it either; and the lock was still this sweeper's
 * after that scan. A record cannot slip past the second scan: renames
 * wait for the lock to be released before removing the old name, and a writer publishes
 * only under its own lock ({@link DataLocks}). So neither a writer at work, however idle
 * within its lease, nor a file renamed during the sweep loses data.
 */
public final class OrphanSweeper {
  /**
   * What a sweep found; {@code deletedBlobs} is 0 for a dry run, whose orphans are only
   * candidates (the second scan and the locks are skipped). {@code heldByWriters}: file ids
   * left alone because a writer's lease on them runs; {@code stillNamed}: candidates that
   * the second scan found named (renamed during the first).
   */
  public record Report(int dataBlobs, int fileIds, int referencedFileIds,
      List<String> orphanFileIds, int orphanBlobs, long orphanBytes, int deletedBlobs,
      int heldByWriters, int stillNamed) {}

  private final BlobNamespace ns;

  public OrphanSweeper(BlobNamespace ns) {
    this.ns = ns;
  }

  public Report sweep(Duration minAge, boolean dryRun) throws IOException {
    List<String> dataKeys = ns.scanAll(KeyLayout.DATA);
    Map<String, List<String>> blobsByFile = new TreeMap<>();
    for (String key : dataKeys) {
      String id = KeyLayout.fileIdOf(key);
      if (id != null) {
        List<String> blobs = blobsByFile.computeIfAbsent(id, k -> new ArrayList<>());
        if (!KeyLayout.isLock(key)) {
          blobs.add(key);
        }
      }
    }
    Set<String> referenced = namedFileIds();
    long now = System.currentTimeMillis();
    long cutoff = now - minAge.toMillis();
    Map<String, List<BlobInfo>> candidates = new HashMap<>();
    Map<String, Optional<DataLocks.Lock>> seenLocks = new HashMap<>();
    int heldByWriters = 0;
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
      // A writer's lock whose lease ran out, or a sweeper's held past minAge (it died, or
      // runs alongside: it checks its lock before deleting anything), may be taken over.
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
      return report(blobsByFile, referenced, candidates, 0, heldByWriters, 0);
    }

    Map<String, DataLocks.Lock> held = new HashMap<>();
    try {
      for (String id : candidates.keySet()) {
        ns.locks().takeForSweeper(id, seenLocks.get(id), minAge)
            .ifPresent(lock -> held.put(id, lock));
      }
      candidates.keySet().retainAll(held.keySet());
      Set<String> namedNow = held.isEmpty() ? Set.of() : namedFileIds();
      int stillNamed = 0;
      for (String id : List.copyOf(candidates.keySet())) {
        if (namedNow.contains(id)) {
          candidates.remove(id);
          stillNamed++;
        } else if (!stillHeld(held.get(id))) {
          // Taken over during the second scan (this sweep outlived its hold): renames may
          // have gone on meanwhile, so the scan proves nothing. The new holder decides.
          candidates.remove(id);
          held.remove(id);
        }
      }
      int deleted = 0;
      for (String id : candidates.keySet()) {
        deleted += deleteData(id);
        ns.locks().release(held.remove(id));
      }
      return report(blobsByFile, referenced, candidates, deleted, heldByWriters,
          stillNamed);
    } finally {
      // Named after all, or a deletion failed: the lock goes so renames need not wait.
      // A lock kept by a sweeper that died is taken over by the next sweep after minAge.
      for (DataLocks.Lock lock : held.values()) {
        ns.locks().release(lock);
      }
    }
  }

  private boolean stillHeld(DataLocks.Lock lock) throws IOException {
    Optional<DataLocks.Lock> now = ns.locks().read(lock.fileId());
    return now.isPresent() && now.get().version() == lock.version();
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

  private Set<String> namedFileIds() throws IOException {
    Set<String> ids = new HashSet<>();
    for (String key : ns.scanAll(KeyLayout.NAMES + "/")) {
      if (!KeyLayout.isMarker(key)) {
        ns.readRecord(key, false).ifPresent(r -> ids.add(r.record().fileId()));
      }
    }
    return ids;
  }

  /** Deletes every data blob of a file id as it is now (not as first listed). */
  private int deleteData(String id) throws IOException {
    int deleted = 0;
    for (String key : ns.scanAll(KeyLayout.DATA + id + "/")) {
      if (!KeyLayout.isLock(key) && ns.calls().delete(key)) {
        deleted++;
      }
    }
    return deleted;
  }

  private static Report report(Map<String, List<String>> blobsByFile,
      Set<String> referenced, Map<String, List<BlobInfo>> orphans, int deleted,
      int heldByWriters, int stillNamed) {
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
        bytes, deleted, heldByWriters, stillNamed);
  }
}
