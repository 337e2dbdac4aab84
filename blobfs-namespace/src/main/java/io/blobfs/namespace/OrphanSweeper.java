package io.blobfs.namespace;

import io.blobfs.store.BlobInfo;
import java.io.IOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * Finds and removes data blobs that no record names: what a writer leaves behind when
 * it dies before {@code close()}, or a failed cleanup. A file id counts as orphaned only
 * if no record names it and even its newest data blob is older than {@code minAge}, so a
 * writer still at work (it wrote within {@code minAge}) is never touched. Records are
 * read after the data blobs are listed, so a file published meanwhile is seen.
 */
public final class OrphanSweeper {
  /** What a sweep found; {@code deletedBlobs} is 0 for a dry run. */
  public record Report(int dataBlobs, int fileIds, int referencedFileIds,
      List<String> orphanFileIds, int orphanBlobs, long orphanBytes, int deletedBlobs) {}

  private final BlobNamespace ns;

  public OrphanSweeper(BlobNamespace ns) {
    this.ns = ns;
  }

  public Report sweep(Duration minAge, boolean dryRun) throws IOException {
    Map<String, List<String>> blobsByFile = new HashMap<>();
    List<String> dataKeys = ns.scanAll(KeyLayout.DATA);
    for (String key : dataKeys) {
      String rest = key.substring(KeyLayout.DATA.length());
      int slash = rest.indexOf('/');
      if (slash > 0) {
        blobsByFile.computeIfAbsent(rest.substring(0, slash), k -> new ArrayList<>()).add(key);
      }
    }
    Set<String> referenced = new HashSet<>();
    for (String key : ns.scanAll(KeyLayout.NAMES + "/")) {
      if (!KeyLayout.isMarker(key)) {
        ns.readRecord(key, false).ifPresent(r -> referenced.add(r.record().fileId()));
      }
    }
    long cutoff = System.currentTimeMillis() - minAge.toMillis();
    List<String> orphans = new ArrayList<>();
    int orphanBlobs = 0;
    long orphanBytes = 0;
    int deleted = 0;
    for (Map.Entry<String, List<String>> e : blobsByFile.entrySet()) {
      if (referenced.contains(e.getKey())) {
        continue;
      }
      List<BlobInfo> infos = new ArrayList<>();
      boolean old = true;
      for (String key : e.getValue()) {
        BlobInfo info = ns.calls().stat(key);
        if (info.exists()) {
          infos.add(info);
          old &= info.modifiedMillis() != 0 && info.modifiedMillis() < cutoff;
        }
      }
      if (!old || infos.isEmpty()) {
        continue;
      }
      orphans.add(e.getKey());
      orphanBlobs += infos.size();
      for (BlobInfo info : infos) {
        orphanBytes += info.size();
        if (!dryRun && ns.calls().delete(info.key())) {
          deleted++;
        }
      }
    }
    orphans.sort(null);
    return new Report(dataKeys.size(), blobsByFile.size(), referenced.size(), orphans,
        orphanBlobs, orphanBytes, deleted);
  }
}
