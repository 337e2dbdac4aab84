package io.blobfs.store;

/** Whether a whole-blob put may replace an existing blob. */
public enum PutMode {
  /** Fail with {@link BlobAlreadyExistsException} if the key exists. */
  CREATE,
  /** Create or replace. */
  OVERWRITE
}
