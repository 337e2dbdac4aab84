package io.blobfs.tyr.engine;

/**
 * Bytes {@code [start, start+length)} of a chunk are stored in log segment
 * {@code segment} at file position {@code position}. Extents are immutable and never
 * move while referenced: segments are append-only.
 */
record Extent(int start, int length, long segment, long position) {

  int end() {
    return start + length;
  }

  /** The part of this extent within {@code [from, to)} of the chunk, or null if none. */
  Extent clip(int from, int to) {
    int s = Math.max(start, from);
    int e = Math.min(end(), to);
    if (s >= e) {
      return null;
    }
    return new Extent(s, e - s, segment, position + (s - start));
  }
}
