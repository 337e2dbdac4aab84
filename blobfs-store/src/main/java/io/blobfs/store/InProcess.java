package io.blobfs.store;

/**
 * Optional promise: every call is served in the caller's process at memory speed, with
 * no round trip to hide. Streams then do not read ahead, and a file's writer does not
 * buffer: each read, and each write once the file is too long to be inline, is one
 * store call straight from or into the caller's array, since any buffering would only
 * add a copy of every byte. The blob:// output stream above the writer still gathers
 * short application writes ({@code fs.blob.write.gather.size}): per call, the writer's
 * bookkeeping costs more than that copy.
 */
public interface InProcess extends CopiesOnWrite {
}
