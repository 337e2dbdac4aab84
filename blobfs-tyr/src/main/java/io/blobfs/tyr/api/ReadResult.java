package io.blobfs.tyr.api;

import java.nio.ByteBuffer;

/**
 * Bytes of one committed version of a blob: {@code data} holds what was asked, less only
 * past the end ({@code size}); empty when the offset is at or past the end.
 */
public record ReadResult(long version, long size, ByteBuffer data) {
}
