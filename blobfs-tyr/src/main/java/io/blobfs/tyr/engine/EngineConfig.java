package io.blobfs.tyr.engine;

import java.nio.file.Path;
import java.time.Duration;
import java.util.Objects;

/**
 * Settings of one storage engine.
 *
 * @param directory where the log segments live (created if missing)
 * @param chunkBytes blobs are versioned in chunks of this size: a write copies no data,
 *     but the chunk's extent list, so smaller chunks make small writes cheaper
 * @param segmentBytes a log segment is closed and a new one begun past this size
 * @param syncPolicy when the log is forced to disk
 * @param syncInterval the period of {@link SyncPolicy#INTERVAL}
 * @param maxKeyBytes longest key, in UTF-8 bytes
 * @param maxBlobBytes largest blob
 * @param maxExtentsPerChunk a chunk fragmented past this by small writes is rewritten
 *     whole in the same commit, so reads stay a few large file reads
 * @param compactInterval how often the engine looks for segments to reclaim (zero: only
 *     when {@link TyrEngine#compact} is called)
 * @param compactBelow a sealed segment whose live bytes are below this fraction of its size
 *     has them moved to the head of the log, and is then deleted
 */
public record EngineConfig(Path directory, int chunkBytes, long segmentBytes,
    SyncPolicy syncPolicy, Duration syncInterval, int maxKeyBytes, long maxBlobBytes,
    int maxExtentsPerChunk, Duration compactInterval, double compactBelow) {

  public EngineConfig {
    Objects.requireNonNull(directory, "directory");
    Objects.requireNonNull(syncPolicy, "syncPolicy");
    Objects.requireNonNull(syncInterval, "syncInterval");
    if (chunkBytes < 4096 || Integer.bitCount(chunkBytes) != 1) {
      throw new IllegalArgumentException("chunk size must be a power of two >= 4096: "
          + chunkBytes);
    }
    if (segmentBytes < chunkBytes) {
      throw new IllegalArgumentException("segment size " + segmentBytes
          + " is smaller than the chunk size " + chunkBytes);
    }
    if (maxKeyBytes < 1 || maxKeyBytes > 65535) {
      throw new IllegalArgumentException("max key bytes must be 1..65535: " + maxKeyBytes);
    }
    Objects.requireNonNull(compactInterval, "compactInterval");
    if (compactBelow < 0 || compactBelow > 1) {
      throw new IllegalArgumentException("compactBelow must be within 0..1: " + compactBelow);
    }
    if (maxBlobBytes < 1 || maxExtentsPerChunk < 2) {
      throw new IllegalArgumentException("bad limits: " + maxBlobBytes + ", "
          + maxExtentsPerChunk);
    }
  }

  public static EngineConfig defaults(Path directory) {
    return new EngineConfig(directory, 1 << 20, 1L << 30, SyncPolicy.ALWAYS,
        Duration.ofMillis(100), 1024, 1L << 40, 64, Duration.ofSeconds(30), 0.5);
  }

  public EngineConfig withSyncPolicy(SyncPolicy policy) {
    return new EngineConfig(directory, chunkBytes, segmentBytes, policy, syncInterval,
        maxKeyBytes, maxBlobBytes, maxExtentsPerChunk, compactInterval, compactBelow);
  }

  public EngineConfig withChunkBytes(int bytes) {
    return new EngineConfig(directory, bytes, segmentBytes, syncPolicy, syncInterval,
        maxKeyBytes, maxBlobBytes, maxExtentsPerChunk, compactInterval, compactBelow);
  }

  public EngineConfig withCompaction(Duration interval, double below) {
    return new EngineConfig(directory, chunkBytes, segmentBytes, syncPolicy, syncInterval,
        maxKeyBytes, maxBlobBytes, maxExtentsPerChunk, interval, below);
  }
}
