package io.blobfs.fuse;

/**
 * Whether an open of one node may keep the kernel's cached pages of it (FOPEN_KEEP_CACHE)
 * instead of dropping them, as every open did before. Close-to-open consistency asks that an
 * open sees the version published last; the pages may be kept only when they can hold no
 * bytes but that version's: the open reads the file's record (the version) afresh, and the
 * pages are kept when that version is the one they were filled from since the last drop.
 *
 * <p>Who fills the pages is every handle of the node, so the version is known only while
 * every handle open reads one version: a drop while other handles are open (they may read
 * another version, or the staged copy, and fill pages after the drop) leaves it unknown,
 * and so does any open on a staged copy (its bytes are not published yet). Unknown makes
 * the next open drop again; a drop with no other handle open makes it known.
 */
final class KeptPages {
  /** The published version the pages hold; null: unknown. */
  private String version;
  /** This node's open handles. */
  private int open;

  /**
   * An open of the published version {@code version} (null: a version that cannot be told
   * apart from others); true: the pages may be kept.
   */
  synchronized boolean openPublished(String version) {
    boolean keep = version != null && version.equals(this.version);
    if (!keep) {
      this.version = open == 0 ? version : null;
    }
    open++;
    return keep;
  }

  /** An open served by the node's staged copy: its pages are dropped, the version unknown. */
  synchronized void openStaged() {
    version = null;
    open++;
  }

  synchronized void released() {
    open--;
  }

  /**
   * What tells one published version from another: a publication writes a new file id,
   * and length and time also tell an append to the same id apart. Inline files (the bytes
   * in the record) are not told apart: their pages are always dropped.
   */
  static String versionOf(io.blobfs.namespace.FileRecord r) {
    return r.isInline() || r.fileId() == null ? null
        : r.fileId() + '/' + r.length() + '/' + r.modificationTime();
  }
}
