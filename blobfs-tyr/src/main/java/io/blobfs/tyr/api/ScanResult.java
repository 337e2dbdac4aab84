package io.blobfs.tyr.api;

import java.util.List;

/** One page of a prefix scan, in key order; {@code nextCursor} is null after the last. */
public record ScanResult(List<String> keys, String nextCursor) {
  public ScanResult {
    keys = List.copyOf(keys);
  }
}
