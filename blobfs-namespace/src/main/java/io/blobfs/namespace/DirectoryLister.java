package io.blobfs.namespace;

import io.blobfs.store.HeadScanning;
import io.blobfs.store.ScanPage;
import java.io.FileNotFoundException;
import java.io.IOException;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.NoSuchElementException;
import java.util.Optional;
import java.util.Set;

/**
 * A directory listing emulated by a filtered scan, one page at a time: the names under
 * the directory's prefix grouped by their next path component (immediate mode) or every
 * file at any depth (recursive mode, one flat scan as the paper does). Record headers of
 * a page are read together so a store can overlap them.
 */
final class DirectoryLister implements EntryIterator<FileInfo> {
  private final BlobNamespace ns;
  private final FsPath dir;
  private final String prefix;
  private final boolean recursive;
  private final Set<String> seenDirs = new HashSet<>();
  private final ArrayDeque<FileInfo> ready = new ArrayDeque<>();
  private String cursor;
  private boolean scanDone;
  private boolean sawAnything;
  private boolean pendingAdded;

  DirectoryLister(BlobNamespace ns, FsPath dir, boolean recursive) throws IOException {
    this.ns = ns;
    this.dir = dir;
    this.prefix = ns.layout().dirPrefix(dir);
    this.recursive = recursive;
    fill();
    if (!sawAnything && !dir.isRoot()) {
      // Nothing under the prefix: the path is a file (listed as itself), a directory
      // only this instance made, or absent.
      Optional<VersionedRecord> file = ns.readRecord(ns.layout().recordKey(dir), false);
      if (file.isPresent()) {
        ready.add(FileInfo.file(dir, file.get().record()));
        pendingAdded = true; // a file has no remembered children to add
      } else if (!ns.pending().covers(dir)) {
        throw new FileNotFoundException("No such file or directory: " + dir);
      }
    }
  }

  @Override
  public boolean hasNext() throws IOException {
    fill();
    return !ready.isEmpty();
  }

  @Override
  public FileInfo next() throws IOException {
    if (!hasNext()) {
      throw new NoSuchElementException("listing of " + dir + " is exhausted");
    }
    return ready.poll();
  }

  private void fill() throws IOException {
    if (ready.isEmpty() && scanDone && !pendingAdded) {
      // Empty directories made by this instance, not in the store (paper mode).
      pendingAdded = true;
      if (!recursive) {
        for (String child : ns.pending().childNames(dir)) {
          if (seenDirs.add(child)) {
            ready.add(FileInfo.directory(dir.child(child), 0));
          }
        }
      }
    }
    while (ready.isEmpty() && !scanDone) {
      List<String> keys;
      Map<String, byte[]> heads = null;
      if (ns.calls().scansHeads()) {
        // Names and record headers from one committed state: each commit listed whole.
        HeadScanning.HeadPage page = ns.calls().scanWithHeads(prefix, cursor,
            ns.options().scanPageSize(), FileRecord.MAX_HEADER);
        keys = page.keys();
        heads = new HashMap<>();
        for (int i = 0; i < keys.size(); i++) {
          heads.put(keys.get(i), page.heads().get(i));
        }
        cursor = page.nextCursor();
      } else {
        ScanPage page = ns.calls().scan(prefix, cursor, ns.options().scanPageSize());
        keys = page.keys();
        cursor = page.nextCursor();
      }
      scanDone = cursor == null;
      List<String> fileKeys = new ArrayList<>();
      for (String key : keys) {
        sawAnything = true;
        String rest = key.substring(prefix.length());
        if (rest.isEmpty()) {
          continue; // the directory's own marker
        }
        int slash = rest.indexOf('/');
        if (recursive) {
          if (!KeyLayout.isMarker(key)) {
            fileKeys.add(key);
          }
        } else if (slash < 0) {
          fileKeys.add(key);
        } else {
          String child = rest.substring(0, slash);
          if (seenDirs.add(child)) {
            ready.add(FileInfo.directory(dir.child(child), 0));
          }
        }
      }
      List<Optional<FileRecord>> headers = heads == null ? ns.readHeaders(fileKeys)
          : decodeHeads(fileKeys, heads);
      for (int i = 0; i < fileKeys.size(); i++) {
        if (headers.get(i).isPresent()) {
          ready.add(FileInfo.file(ns.layout().pathOf(fileKeys.get(i)), headers.get(i).get()));
        }
      }
    }
  }

  /**
   * The records of a head scan's page, decoded from their heads. A head shorter than its
   * record's header (a long stripe map, BFS3) is never decoded in part: the record is
   * read whole, outside the page's state (absent if removed since: not listed).
   */
  private List<Optional<FileRecord>> decodeHeads(List<String> keys,
      Map<String, byte[]> heads) throws IOException {
    List<Optional<FileRecord>> out = new ArrayList<>(keys.size());
    for (String key : keys) {
      byte[] head = heads.get(key);
      if (head.length == 0) {
        throw new CorruptRecordException(key, "empty record");
      }
      if (FileRecord.storedHeaderSize(head, head.length) > head.length) {
        out.add(ns.readRecord(key, false).map(VersionedRecord::record));
        continue;
      }
      out.add(Optional.of(FileRecord.decode(key, head, head.length, false)));
    }
    return out;
  }
}
