package io.blobfs.hadoop;

/** Path capabilities of BlobFS beyond Hadoop's common ones, for {@code hasPathCapability}. */
public final class BlobCapabilities {
  private BlobCapabilities() {}

  /** Renames of files and directories are single atomic store transactions. */
  public static final String ATOMIC_RENAME = "fs.blob.capability.atomic.rename";
  /** mkdirs leaves a marker, so empty directories are visible (markers = keep). */
  public static final String DIRECTORY_MARKERS_KEPT = "fs.blob.capability.directory.markers.kept";
}
