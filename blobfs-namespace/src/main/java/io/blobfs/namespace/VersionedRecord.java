package io.blobfs.namespace;

/**
 * A record as read, with the store version of the blob it was read from: a mutation that
 * acts on what it read is made conditional on that version, so it never acts on a record
 * that was renamed away or replaced in between.
 */
record VersionedRecord(FileRecord record, long version) {
}
