package io.blobfs.store;

/**
 * Optional promise: {@link #write} has taken its own copy of the bytes of a heap buffer
 * by the time it returns, so the caller may reuse such a buffer at once even while the
 * write is in flight. Writers then send large application buffers straight to the store
 * instead of copying them into buffers of their own first. (A direct buffer may be used
 * in place until the write completes, as the SPI allows.)
 */
public interface CopiesOnWrite extends BlobStore {
}
