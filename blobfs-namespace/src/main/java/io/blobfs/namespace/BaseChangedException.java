package io.blobfs.namespace;

import java.io.IOException;

/**
 * A new version ({@link BlobNamespace#createVersion}) found, at its commit, that its name
 * no longer holds the version it was made from (its base: replaced, renamed away or
 * deleted meanwhile). Nothing was applied: the name holds what another client put there,
 * and this writer's own data blobs were removed. The caller writes the file whole again
 * (a plain {@link BlobNamespace#create}) or gives up; it never takes stripes over from a
 * version that is no longer the name's, since those keys belong to another file now (or
 * are deleted).
 */
public final class BaseChangedException extends IOException {
  private static final long serialVersionUID = 1L;

  public BaseChangedException(String message) {
    super(message);
  }
}
