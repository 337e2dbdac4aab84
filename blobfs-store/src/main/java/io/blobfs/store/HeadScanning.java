package io.blobfs.store;

import java.io.IOException;
import java.util.List;

/**
 * Optional power: a scan page that also carries the first bytes of each blob it names,
 * all taken from one committed state of the store. A listing built from it shows every
 * transaction whole (a directory renamed meanwhile is listed under the old name or the
 * new one, never in part), and costs one call per page instead of one read per entry.
 */
public interface HeadScanning extends BlobStore {

  /** As {@link #scan}, plus up to {@code headBytes} of each key's content. */
  HeadPage scanWithHeads(String prefix, String cursor, int limit, int headBytes)
      throws IOException;

  /** {@code heads.get(i)} is the start of the content of {@code keys.get(i)}. */
  record HeadPage(List<String> keys, List<byte[]> heads, String nextCursor) {
    public HeadPage {
      keys = List.copyOf(keys);
      heads = List.copyOf(heads);
      if (keys.size() != heads.size()) {
        throw new IllegalArgumentException(keys.size() + " keys but " + heads.size()
            + " heads");
      }
    }
  }
}
