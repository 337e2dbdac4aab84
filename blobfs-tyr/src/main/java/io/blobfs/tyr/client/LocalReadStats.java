package io.blobfs.tyr.client;

/**
 * What a client's local reads did.
 *
 * @param localReads reads served from the node's files
 * @param localBytes their bytes
 * @param fallbacks reads that tried the files, failed, and went over the connection
 * @param snapshotsRefused snapshots not opened because the client's budget of segment files
 *     (local-reads.max-fds) was spent: their reads take a grant each
 * @param on whether local reads are in use now (false: off by configuration, not asked
 *     yet, or turned off because this process cannot see or read the node's files)
 */
public record LocalReadStats(long localReads, long localBytes, long fallbacks,
    long snapshotsRefused, boolean on) {}
