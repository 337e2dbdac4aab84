package io.blobfs.tyr.api;

/**
 * A committed transaction: its commit number, and one value per op in request order
 * (the new value for {@link TxOp.Add}, the offset written at for {@link TxOp.Append},
 * 1 for a {@link TxOp.Delete} that removed a blob, 0 otherwise).
 */
public record CommitResult(long version, long[] values) {
}
