package io.blobfs.store;

import java.util.List;

/** One page of a prefix scan; {@code nextCursor} is null after the last page. */
public record ScanPage(List<String> keys, String nextCursor) {

  public ScanPage {
    keys = List.copyOf(keys);
  }

  public boolean isLast() {
    return nextCursor == null;
  }
}
