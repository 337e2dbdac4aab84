package io.blobfs.tyr.engine;

import io.blobfs.tyr.api.CommitResult;
import io.blobfs.tyr.api.TyrException;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Reclaims the disk held by old versions, and holds what decides which log segments may
 * go: the two checkpoints kept on disk and where replay resumes. Compaction moves the
 * live bytes of mostly dead sealed segments to the head of the log (the blobs keep their
 * versions), writes a checkpoint, and deletes the segments nothing refers to any more;
 * its thread does so periodically and checkpoints a busy log so that recovery replays
 * little.
 *
 * <p><b>Invariant.</b> A segment is deleted only if no visible state, no staged state and
 * neither kept checkpoint names it, and replay from either checkpoint starts after it. The
 * two checkpoints kept on disk are the two this class knows: two distinct versions, both
 * loadable (a file that failed to load is not one of them and goes at the next write).
 *
 * <p><b>Locks.</b> {@link #compactionMonitor} serialises compactions and checkpoints (this
 * thread's, callers' of {@link TyrEngine#compact} and {@link TyrEngine#checkpoint}, and
 * close's) and guards the checkpoint fields; it is the outermost of the engine's locks.
 * Under it, each for one call and released when the call returns, this class takes the
 * engine's commit lock through {@link Engine} (to log moved bytes, and to cut a checkpoint
 * between commits), {@link BlobVersions}' publish lock (to see visible and staged states
 * as one), and the engine's segment lock exclusively through {@link Engine} (to delete
 * segments while no read is in progress). {@link #reclaimWait} is only this thread's
 * wake-up and is held while taking nothing else. The order of all the engine's locks is in
 * {@link TyrEngine}.
 */
final class LogReclaimer {
  private static final Logger LOG = LoggerFactory.getLogger(LogReclaimer.class);
  private static final long RELOCATION_BATCH_BYTES = 16L << 20;

  /** What reclaiming needs of the engine, which owns the states and the locks. */
  interface Engine {
    /** Where the log ends, its last commit and every newest state, under the commit lock. */
    Cut cutBetweenCommits();

    /**
     * Logs and settles one record of moved bytes, planned by {@code body} under the
     * commit lock; null if it moved nothing (then nothing was logged).
     */
    CompletableFuture<CommitResult> logRelocation(CommitPlanner.Body body) throws IOException;

    /**
     * Deletes segments under the segment lock held exclusively (no read is in progress),
     * except those a local reader's grant pins; returns those deleted.
     */
    Set<Long> deleteWithoutReaders(Set<Long> segments) throws IOException;

    void checkOpen() throws TyrException;

    boolean closed();
  }

  /** A consistent point for a checkpoint: no commit is half logged or half published. */
  record Cut(WriteAheadLog.Position at, long version, Collection<BlobState> states) {}

  private final EngineConfig config;
  private final WriteAheadLog log;
  private final BlobVersions versions;
  private final Engine engine;
  private final Thread thread;
  private final Object compactionMonitor = new Object();
  private final Object reclaimWait = new Object();
  /** Where recovery from the newest checkpoint starts replaying. */
  private volatile WriteAheadLog.Position resumePoint;
  /**
   * The two checkpoints kept on disk (the older one is recovery's fallback): segments their
   * states name, or that their replay would start before, are never deleted.
   */
  private Collection<BlobState> lastCheckpointStates = List.of();
  private long lastCheckpointVersion = -1; // -1: no checkpoint yet
  private Collection<BlobState> olderCheckpointStates = List.of();
  private long olderResumeSegment = Long.MAX_VALUE; // no older checkpoint: no constraint

  /**
   * {@code checkpoints}: those recovery found, newest first; {@code resumePoint}: where it
   * started replaying. The thread is made (unless compaction is only on demand) but not
   * started.
   */
  LogReclaimer(EngineConfig config, WriteAheadLog log, BlobVersions versions, Engine engine,
      List<Checkpoint.Loaded> checkpoints, WriteAheadLog.Position resumePoint) {
    this.config = config;
    this.log = log;
    this.versions = versions;
    this.engine = engine;
    this.resumePoint = resumePoint;
    if (!checkpoints.isEmpty()) {
      lastCheckpointStates = checkpoints.get(0).blobs();
      lastCheckpointVersion = checkpoints.get(0).version();
      if (checkpoints.size() > 1) {
        Checkpoint.Loaded older = checkpoints.get(1);
        olderCheckpointStates = older.blobs();
        olderResumeSegment = older.segment();
      }
    }
    thread = config.compactInterval().isZero() ? null
        : Daemons.create("reclaim", config, this::run);
  }

  void start() {
    if (thread != null) {
      thread.start();
    }
  }

  /** Wakes the thread and waits for it to end; the engine has closed first. */
  void stop() {
    Daemons.stop(thread, reclaimWait);
  }

  /** See {@link TyrEngine#compact}. */
  TyrEngine.Compaction compact() throws IOException {
    synchronized (compactionMonitor) {
      engine.checkOpen();
      Map<Long, Long> sealed = log.sealedSegments();
      Map<Long, Long> live = liveBytes();
      Set<Long> victims = new TreeSet<>();
      for (Map.Entry<Long, Long> e : sealed.entrySet()) {
        if (live.getOrDefault(e.getKey(), 0L) < config.compactBelow() * e.getValue()) {
          victims.add(e.getKey());
        }
      }
      if (victims.isEmpty()) {
        return new TyrEngine.Compaction(0, 0, 0);
      }
      long moved = relocate(victims);
      Collection<BlobState> checkpointed = checkpoint();
      Map<Long, Long> stillLive = referencedBytes(checkpointed);
      Set<Long> unreferenced = new TreeSet<>();
      long reclaimed = 0;
      for (long id : victims) {
        if (stillLive.getOrDefault(id, 0L) == 0 && id < resumePoint.segment()
            && id < olderResumeSegment) {
          unreferenced.add(id);
          reclaimed += sealed.get(id);
        }
      }
      // Reads in progress finish first; new ones are given no state naming a victim.
      Set<Long> gone = engine.deleteWithoutReaders(unreferenced);
      for (long id : unreferenced) {
        if (!gone.contains(id)) {
          reclaimed -= sealed.get(id); // pinned by a local reader: kept until the next one
        }
      }
      int deleted = gone.size();
      if (deleted > 0) {
        LOG.info("Týr compaction at {}: deleted {} segments ({} MiB), moved {} MiB",
            config.directory(), deleted, reclaimed >> 20, moved >> 20);
      }
      return new TyrEngine.Compaction(deleted, reclaimed, moved);
    }
  }

  /**
   * Bytes per segment referred to by any state that a reader may still be given (visible),
   * that a commit will publish (staged), or that recovery would load (either checkpoint
   * kept): a segment none of them names can go.
   */
  private Map<Long, Long> referencedBytes(Collection<BlobState> checkpointed) {
    Map<Long, Long> live = new HashMap<>();
    versions.addReadableBytes(live);
    for (BlobState s : checkpointed) {
      s.addLiveBytes(live);
    }
    for (BlobState s : olderCheckpointStates) {
      s.addLiveBytes(live);
    }
    return live;
  }

  /** Live bytes per segment over every current state (visible and staged). */
  private Map<Long, Long> liveBytes() {
    Map<Long, Long> live = new HashMap<>();
    for (BlobState s : versions.latestStates()) {
      s.addLiveBytes(live);
    }
    return live;
  }

  private record Move(String key, long chunkStart, Extent extent) {}

  /** Moves every extent in {@code victims} to the head of the log; returns bytes moved. */
  private long relocate(Set<Long> victims) throws IOException {
    List<Move> moves = new ArrayList<>();
    for (BlobState s : versions.latestStates()) {
      for (int i = 0; i < s.chunkCount(); i++) {
        for (Extent e : s.chunk(i).extents()) {
          if (victims.contains(e.segment())) {
            moves.add(new Move(s.key, (long) i * s.chunkBytes(), e));
          }
        }
      }
    }
    Relocation relocation = new Relocation(moves);
    List<CompletableFuture<CommitResult>> records = new ArrayList<>();
    while (relocation.next < moves.size()) {
      CompletableFuture<CommitResult> done = engine.logRelocation(relocation::planBatch);
      if (done != null) {
        records.add(done);
      }
    }
    for (CompletableFuture<CommitResult> f : records) {
      try {
        f.join(); // published: no visible state refers to the victims any more
      } catch (CompletionException e) {
        throw new IOException("moving live bytes failed", e.getCause());
      }
    }
    return relocation.moved;
  }

  /** The moves still to log, a record of at most {@link #RELOCATION_BATCH_BYTES} at a time. */
  private final class Relocation {
    final List<Move> moves;
    int next;
    long moved;

    Relocation(List<Move> moves) {
      this.moves = moves;
    }

    /** Under the commit lock: plans the next batch into {@code plan}. */
    void planBatch(CommitPlanner plan) throws IOException {
      for (long bytes = 0; next < moves.size() && bytes < RELOCATION_BATCH_BYTES; next++) {
        Move m = moves.get(next);
        BlobState s = plan.current(m.key());
        // Changed since the list was made: its bytes are elsewhere now, or will be
        // moved by a later compaction.
        if (s == null || s.chunkBytes() * (long) s.chunkIndex(m.chunkStart()) != m.chunkStart()
            || !Arrays.asList(s.chunk(s.chunkIndex(m.chunkStart())).extents())
                .contains(m.extent())) {
          continue;
        }
        ByteBuffer b = ByteBuffer.allocate(m.extent().length());
        log.read(m.extent().segment(), m.extent().position(), b);
        plan.relocate(m.key(), m.chunkStart() + m.extent().start(), b.flip());
        bytes += m.extent().length();
        moved += m.extent().length();
      }
    }
  }

  /** See {@link TyrEngine#checkpoint}; returns the states it recorded. */
  Collection<BlobState> checkpoint() throws IOException {
    synchronized (compactionMonitor) {
      Cut cut = engine.cutBetweenCommits();
      if (cut.version() == lastCheckpointVersion) {
        // Nothing committed since (moving bytes commits too): the newest checkpoint is
        // this state. Writing it again would replace its file and make the fallback
        // the same state, leaving the real fallback's segments unprotected.
        return lastCheckpointStates;
      }
      log.force(); // every commit the checkpoint includes is on disk before it is
      Checkpoint.write(config.directory(), cut.version(), cut.at().segment(),
          cut.at().offset(), cut.states(), lastCheckpointVersion);
      olderCheckpointStates = lastCheckpointStates;
      // Without an older checkpoint, recovery's fallback is the whole log, and a missing
      // first segment makes it refuse to open: clean, so it constrains nothing here.
      olderResumeSegment = lastCheckpointVersion >= 0 ? resumePoint.segment() : Long.MAX_VALUE;
      lastCheckpointStates = cut.states();
      lastCheckpointVersion = cut.version();
      resumePoint = cut.at();
      return cut.states();
    }
  }

  /** Bytes of log a restart would replay now (a whole segment's worth if it rolled). */
  private long logSinceCheckpoint() {
    WriteAheadLog.Position at = log.positionNow();
    WriteAheadLog.Position from = resumePoint;
    return at.segment() == from.segment() ? at.offset() - from.offset() : config.segmentBytes();
  }

  private void run() {
    // The first look comes soon after opening: what earlier runs left is reclaimed even
    // by a short-lived embedded node.
    long wait = Math.min(config.compactInterval().toMillis(), 5_000);
    while (!engine.closed()) {
      synchronized (reclaimWait) {
        if (engine.closed()) {
          return; // checked under the monitor stop() notifies, so no wake-up is lost
        }
        try {
          reclaimWait.wait(wait);
          wait = config.compactInterval().toMillis();
        } catch (InterruptedException e) {
          return;
        }
      }
      if (engine.closed()) {
        return;
      }
      try {
        if (compact().segmentsDeleted() == 0 && logSinceCheckpoint() > config.segmentBytes() / 4) {
          checkpoint(); // bounds what a crash makes recovery replay
        }
      } catch (IOException | RuntimeException e) {
        LOG.warn("Týr compaction at {} failed: {}", config.directory(), e.toString());
      }
    }
  }
}
