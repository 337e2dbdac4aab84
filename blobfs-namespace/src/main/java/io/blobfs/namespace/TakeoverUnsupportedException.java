package io.blobfs.namespace;

/**
 * {@link BlobNamespace#createVersion} on a store without transactions (RADOS): the
 * takeover commit there needs the seven conditional steps of
 * {@code wip/shared-stripes/DESIGN.md} §2.3 (adopt under the base's lock, commit with a
 * cleanup due, cleanup, drop the due), which are not built yet, so a new version cannot
 * name its base's stripes there. Thrown before anything is written; the caller writes the
 * file whole ({@link BlobNamespace#create}), as every version was written before.
 * {@link BlobNamespace#takesOverStripes} says beforehand whether it would be.
 */
public final class TakeoverUnsupportedException extends UnsupportedOperationException {
  private static final long serialVersionUID = 1L;

  public TakeoverUnsupportedException(String message) {
    super(message);
  }
}
