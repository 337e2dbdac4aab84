package io.blobfs.tyr.engine;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * One committed version of a fixed-size chunk of a blob: sorted, non-overlapping extents;
 * bytes that no extent covers read as zeros. Immutable, so a reader that holds a
 * {@link BlobState} reads one version however many writers commit meanwhile.
 */
final class Chunk {
  static final Chunk EMPTY = new Chunk(new Extent[0]);

  private final Extent[] extents;

  private Chunk(Extent[] extents) {
    this.extents = extents;
  }

  static Chunk of(Extent[] extents) {
    return extents.length == 0 ? EMPTY : new Chunk(extents);
  }

  int extentCount() {
    return extents.length;
  }

  Extent[] extents() {
    return extents;
  }

  /** This chunk with {@code [start, start+length)} now stored at the given place. */
  Chunk overwrite(int start, int length, long segment, long position) {
    int end = start + length;
    List<Extent> out = new ArrayList<>(extents.length + 2);
    boolean placed = false;
    for (Extent e : extents) {
      Extent before = e.clip(0, start);
      Extent after = e.clip(end, Integer.MAX_VALUE);
      if (before != null) {
        out.add(before);
      }
      if (!placed && e.end() > start) {
        out.add(new Extent(start, length, segment, position));
        placed = true;
      }
      if (after != null) {
        if (!placed) {
          out.add(new Extent(start, length, segment, position));
          placed = true;
        }
        out.add(after);
      }
    }
    if (!placed) {
      out.add(new Extent(start, length, segment, position));
    }
    return new Chunk(out.toArray(new Extent[0]));
  }

  /** This chunk with everything at or past {@code length} dropped (it reads as zeros). */
  Chunk cut(int length) {
    int keep = 0;
    Extent[] out = new Extent[extents.length];
    for (Extent e : extents) {
      Extent c = e.clip(0, length);
      if (c != null) {
        out[keep++] = c;
      }
    }
    return keep == 0 ? EMPTY : new Chunk(Arrays.copyOf(out, keep));
  }

  /** The extents that overlap {@code [from, to)}, clipped to it, in order. */
  List<Extent> covering(int from, int to) {
    List<Extent> out = new ArrayList<>();
    for (Extent e : extents) {
      if (e.start() >= to) {
        break;
      }
      Extent c = e.clip(from, to);
      if (c != null) {
        out.add(c);
      }
    }
    return out;
  }
}
