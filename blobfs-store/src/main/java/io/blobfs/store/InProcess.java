package io.blobfs.store;

/**
 * Optional promise: every call is served in the caller's process at memory speed, with
 * no round trip to hide. Streams then neither gather writes into buffers nor read ahead:
 * each application read or write is one store call straight from or into the caller's
 * array, since any buffering would only add a copy of every byte.
 */
public interface InProcess extends CopiesOnWrite {
}
