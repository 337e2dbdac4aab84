package io.blobfs.store;

/** The first bytes of a blob and the {@link BlobInfo#version() version} they belong to. */
public record VersionedBytes(byte[] bytes, long version) {
}
