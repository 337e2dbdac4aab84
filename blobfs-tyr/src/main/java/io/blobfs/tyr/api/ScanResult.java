package io.blobfs.tyr.api;

import java.util.List;

/**
 * One page of a prefix scan, in key order; {@code nextCursor} is null after the last.
 * {@code heads} holds the first bytes of each key's blob when they were asked for (all
 * from the same committed state as the keys), else it is empty.
 */
public record ScanResult(List<String> keys, List<byte[]> heads, String nextCursor) {
  public ScanResult {
    keys = List.copyOf(keys);
    heads = List.copyOf(heads);
    if (!heads.isEmpty() && heads.size() != keys.size()) {
      throw new IllegalArgumentException(keys.size() + " keys, " + heads.size() + " heads");
    }
  }

  public ScanResult(List<String> keys, String nextCursor) {
    this(keys, List.of(), nextCursor);
  }
}
