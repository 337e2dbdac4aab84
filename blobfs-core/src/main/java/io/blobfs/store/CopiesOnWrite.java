package io.blobfs.store;

/**
 * Optional promise: {@link #write} has taken its own copy of the bytes by the time it
 * returns, so the caller may reuse its buffer at once even while the write is in flight.
 * Writers then send large application buffers straight to the store instead of copying
 * them into buffers of their own first.
 */
public interface CopiesOnWrite extends BlobStore {
}
