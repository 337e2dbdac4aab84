package io.blobfs.tyr.api;

import java.util.List;

/**
 * Leave for a reader on this node's host to read one committed version of a blob from
 * the log segment files itself. Until the node releases it (or the lease runs out),
 * compaction deletes none of the segments named here, so a reader that opens them in time
 * reads exactly this version: segments are append-only, and a segment's number is never
 * given to another file.
 *
 * @param id what to release
 * @param stat the version granted (its size is the blob's, not the range's)
 * @param pieces the range asked for, in order, as pieces to read or to zero-fill
 */
public record LocalGrant(long id, BlobStat stat, List<Piece> pieces) {

  /**
   * {@code length} bytes at {@code position} of the segment file {@code file} (a name in
   * the node's directory); {@code file} null: that many zeros (a hole).
   */
  public record Piece(String file, long position, int length) {
    public boolean isHole() {
      return file == null;
    }
  }

  /** The bytes the pieces cover. */
  public long length() {
    long n = 0;
    for (Piece p : pieces) {
      n += p.length();
    }
    return n;
  }
}
