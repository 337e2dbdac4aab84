package io.blobfs.tyr.server;

import io.blobfs.tyr.api.BlobStat;
import io.blobfs.tyr.api.ErrorCode;
import io.blobfs.tyr.api.ReadCheck;
import io.blobfs.tyr.api.ReadResult;
import io.blobfs.tyr.api.ScanResult;
import io.blobfs.tyr.api.TxOp;
import io.blobfs.tyr.api.TxRequest;
import io.blobfs.tyr.api.TyrException;
import io.blobfs.tyr.client.TyrClient;
import io.blobfs.tyr.engine.TyrEngine;
import io.blobfs.tyr.ring.Member;
import io.blobfs.tyr.ring.Ring;
import java.io.Closeable;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.time.Duration;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Catch-up of a node that comes back (anti-entropy by full copy of its ranges). It runs
 * whenever this node's ring names it {@link Ring.State#RECOVERING}. In that state the node
 * serves nothing, but every primary already sends it the writes of the keys it holds
 * (it is among their {@link Ring#backups}), so only what it missed before remains:
 *
 * <ol>
 *   <li><b>Barrier.</b> Every UP member is asked to confirm it is at this epoch and runs no
 *       commit (nor replicated batch) let in under an older ring ({@code
 *       Membership.settled}). After that, every write a primary makes is either already in
 *       its engine or will be sent to this node before it is acknowledged.
 *   <li><b>Local list.</b> The keys this node holds a replica of, with its own versions.
 *   <li><b>Copy.</b> Every UP member lists its keys; for each one whose primary it is and
 *       that this node holds a replica of, the blob is read from the primary and, if the
 *       bytes differ from ours, put here under a check of the local version taken before
 *       the read. A replicated write that lands in between fails the check, and the key
 *       is copied again (the primary had that write before it sent it).
 *   <li><b>Deletes.</b> A key of the local list that its primary did not list is deleted,
 *       under the same check (a write replicated since then keeps it).
 * </ol>
 *
 * <p>When done, it logs and writes {@code <data-dir>/caught-up}, holding the epoch: the
 * operator (or coordinator) then marks the node UP under a new epoch. While any range of
 * this node has no UP owner it does not catch up (it retries every second): the member
 * that took that range's last acknowledged writes is not UP, and a copy from any other
 * would be stale. Only UP members are copy sources; a member becomes UP only through a
 * finished catch-up (or by an operator's hand), so an UP member is taken to be current.
 *
 * <p>Cost: one scan of every UP member's keys, and a read over the network of every blob
 * this node holds a replica of (about R/N of the data), whatever it missed; only the blobs
 * that differ are written. A blob is read, compared and copied one piece (4 MiB) at a
 * time, so memory does not grow with blob size.
 */
final class Recovery implements Closeable {
  private static final Logger LOG = LoggerFactory.getLogger(Recovery.class);
  private static final int PAGE = 1000;
  private static final int PIECE = 4 << 20;
  /** Seconds a run waits, retrying only them, for keys held by prepared parts. */
  private static final int HELD_ROUNDS = 30;

  private final Membership membership;
  private final TyrEngine engine;
  private final PeerAccess peerAccess;
  private final int maxFrameBytes;
  /** Runs hand-overs (see {@link #handOver}), apart from the catch-ups. */
  private final java.util.concurrent.ExecutorService handOvers;
  private final Path marker;
  private final ScheduledExecutorService runner;
  /** The epoch whose wait for an UP owner was last logged (runs on the runner only). */
  private long waitingLogged;

  /** Thrown when the ring moved on during a run: the run for the new ring takes over. */
  private static final class Superseded extends Exception {
    Superseded() {
      super(null, null, false, false);
    }
  }

  Recovery(Membership membership, TyrEngine engine, PeerAccess peerAccess, int maxFrameBytes) {
    this.membership = membership;
    this.engine = engine;
    this.peerAccess = peerAccess;
    this.maxFrameBytes = maxFrameBytes;
    this.marker = engine.config().directory().resolve("caught-up");
    this.runner = Executors.newSingleThreadScheduledExecutor(r -> {
      Thread t = new Thread(r, "tyr-recovery");
      t.setDaemon(true);
      return t;
    });
    this.handOvers = Executors.newSingleThreadExecutor(r -> {
      Thread t = new Thread(r, "tyr-hand-over");
      t.setDaemon(true);
      return t;
    });
    membership.onInstall(this::ringChanged);
    ringChanged(membership.ring());
  }

  /** The epoch this node last caught up under, or 0 (read from its marker file). */
  static long caughtUpEpoch(Path dataDir) {
    try {
      return Long.parseLong(Files.readString(dataDir.resolve("caught-up")).strip());
    } catch (IOException | NumberFormatException e) {
      return 0;
    }
  }

  private void ringChanged(Ring r) {
    if (r.state(membership.self()) == Ring.State.RECOVERING) {
      runner.execute(() -> run(r.epoch()));
    }
    Membership.HandOver h = membership.handOver();
    if (h != null && h.epoch() == r.epoch()) {
      handOvers.execute(() -> handOver(h));
    }
  }

  /**
   * The longest a hand-over holds this node's keys back: after it the node serves them
   * whatever the stand-ins answered. What that risks: a stand-in that has not answered
   * within it (frozen or cut off while still UP in the ring, so the monitor marks it DOWN
   * soon) may still send a batch under the ring before, now refused here as before the
   * hand-over existed, and a write it applied (and may have served) is lost. Without a
   * bound, such a stand-in kept every read of these keys, and every listing (a scan asks
   * every node), failing for as long as it lasted. A stand-in that has the new ring answers
   * within about a second (it loads the ring file each second), so the bound is met only
   * by a member that is failing anyway.
   */
  static final Duration HAND_OVER_BOUND = Duration.ofSeconds(10);

  /** What one barrier call to a stand-in may take before the ring is looked at again. */
  private static final Duration HAND_OVER_CALL = Duration.ofSeconds(2);

  /**
   * Ends {@code h} (see {@link Membership#handOver}) once none of its stand-ins (the
   * members that were the primary, under the ring before, of keys this node takes back)
   * can still commit under that ring: each has answered {@code commitsSettled} at the new
   * epoch (it has the ring, and every commit it admitted under an older one has ended, so
   * every batch of those was answered here, applied or refused; a prepared part it holds
   * is not waited for: it is applied by a commit of its own, under the ring of the day),
   * or is not an UP member any more under this node's ring, and then no batch of it
   * checked here under an older ring still runs (this node is itself settled). The ring
   * is looked at again on every pass, each call is short, and after
   * {@link #HAND_OVER_BOUND} the node serves anyway. Abandoned when the node is not UP
   * any more. Runs on its own thread: the recovery thread is not held by it.
   */
  private void handOver(Membership.HandOver h) {
    Member self = membership.self();
    java.util.Set<Member> waiting =
        new java.util.LinkedHashSet<>(membership.ring().primariesBefore(h.from(), self));
    long start = System.nanoTime();
    Map<Member, TyrClient> clients = new HashMap<>();
    try {
      while (!waiting.isEmpty()) {
        if (membership.handOver() != h) {
          return; // not UP any more: it catches up again, and a later hand-over follows
        }
        if (System.nanoTime() - start > HAND_OVER_BOUND.toNanos()) {
          LOG.warn("node {}: hand-over under ring epoch {} ended after {} without the word "
              + "of {}: a batch they still send under the ring before is refused",
              self, h.epoch(), HAND_OVER_BOUND, waiting);
          break;
        }
        Ring now = membership.ring();
        // Every stand-in asked at once and the answers awaited together, up to one call's
        // time and never past the bound: asked one after another, 2 s each, a pass over a
        // few stand-ins that do not answer ran the bound over by seconds.
        Map<Member, java.util.concurrent.CompletableFuture<?>> calls =
            new java.util.LinkedHashMap<>();
        for (Member m : waiting) {
          try {
            if (now.members().contains(m) && now.state(m) == Ring.State.UP) {
              TyrClient c = clients.computeIfAbsent(m, x -> new TyrClient(peerAccess.client(x)
                  .withTimeouts(HAND_OVER_CALL, HAND_OVER_CALL)
                  .withConnections(1).withMaxFrameBytes(maxFrameBytes)));
              calls.put(m, c.commitsSettled(h.epoch()));
            } else {
              // Gone from the ring or not UP: it commits nothing more, and its batches
              // already checked here are counted as running on this node.
              calls.put(m, membership.settled(now.epoch(), true));
            }
          } catch (RuntimeException e) {
            // no client for it now: next pass
          }
        }
        long passEnd = Math.min(System.nanoTime() + HAND_OVER_CALL.toNanos(),
            start + HAND_OVER_BOUND.toNanos());
        for (Map.Entry<Member, java.util.concurrent.CompletableFuture<?>> call
            : calls.entrySet()) {
          try {
            call.getValue().get(Math.max(0, passEnd - System.nanoTime()), TimeUnit.NANOSECONDS);
            waiting.remove(call.getKey());
          } catch (RuntimeException | java.util.concurrent.ExecutionException
              | java.util.concurrent.TimeoutException e) {
            // behind (it loads the ring file within about a second), or busy: next pass
          }
        }
        if (!waiting.isEmpty()) {
          Thread.sleep(100);
        }
      }
      membership.handedOver(h.epoch());
      LOG.info("node {}: hand-over under ring epoch {} done in {} ms", self, h.epoch(),
          (System.nanoTime() - start) / 1_000_000);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    } finally {
      clients.values().forEach(TyrClient::close);
    }
  }

  private void run(long epoch) {
    Ring ring = membership.ring();
    if (ring.epoch() != epoch || ring.state(membership.self()) != Ring.State.RECOVERING) {
      return; // a newer ring came; its own run (if it needs one) is queued
    }
    long start = System.nanoTime();
    try {
      Stats s = catchUp(ring);
      Path tmp = marker.resolveSibling("caught-up.tmp");
      Files.writeString(tmp, epoch + "\n", StandardCharsets.UTF_8);
      Files.move(tmp, marker, StandardCopyOption.REPLACE_EXISTING,
          StandardCopyOption.ATOMIC_MOVE);
      membership.caughtUp(epoch);
      LOG.info("node {} caught up under ring epoch {} in {} ms: {} keys checked, {} copied "
          + "({} bytes), {} deleted, {} bytes read; it may now be marked UP",
          membership.self(), epoch, (System.nanoTime() - start) / 1_000_000, s.checked,
          s.copied, s.copiedBytes, s.deleted, s.bytes);
    } catch (Superseded e) {
      LOG.info("node {}: catch-up under epoch {} left for a newer ring", membership.self(),
          epoch);
    } catch (NoSource e) {
      if (waitingLogged != epoch) {
        waitingLogged = epoch;
        LOG.warn("node {}: not caught up: {}", membership.self(), e.getMessage());
      }
      runner.schedule(() -> run(epoch), 1, TimeUnit.SECONDS);
    } catch (Exception e) {
      LOG.warn("node {}: catch-up under epoch {} failed, again in 1 s: {}",
          membership.self(), epoch, e.toString());
      runner.schedule(() -> run(epoch), 1, TimeUnit.SECONDS);
    }
  }

  /** A key reserved here by a prepared cross-node part: parked (see {@link #retryHeld}). */
  private static final class Held extends IOException {
    Held(String key, TyrException cause) {
      super("'" + key + "' is held by a prepared transaction", cause);
    }
  }

  /** No UP owner to copy some range from: the run waits (see {@link #catchUp}). */
  private static final class NoSource extends IOException {
    NoSource(String message) {
      super(message);
    }
  }

  private static final class Stats {
    long checked;
    long copied;
    long copiedBytes;
    long deleted;
    long bytes;
  }

  private Stats catchUp(Ring ring) throws Exception {
    Member self = membership.self();
    Long unserved = ring.unservedRange(self);
    if (unserved != null) {
      // No UP owner to copy that range from: the one that holds its acknowledged writes
      // is not UP, and nothing says which member that is. Catching up from the others
      // would serve (and later copy back over) stale data, so wait for a ring that has one.
      throw new NoSource("the range ending at " + unserved + " has no UP owner under ring epoch "
          + ring.epoch() + " (" + ring.states() + "): waiting for one before catching up");
    }
    Map<Member, TyrClient> peers = new HashMap<>();
    try {
      for (Member m : ring.upMembers()) {
        peers.put(m, new TyrClient(peerAccess.client(m)
            .withTimeouts(Duration.ofSeconds(5), Duration.ofSeconds(30)).withConnections(1)
            .withMaxFrameBytes(maxFrameBytes)));
      }
      for (Map.Entry<Member, TyrClient> p : peers.entrySet()) {
        awaitSettled(ring, p.getKey(), p.getValue());
      }
      Map<String, Long> local = localKeys(ring);
      Stats stats = new Stats();
      Map<String, TyrClient> heldCopies = new LinkedHashMap<>();
      for (Map.Entry<Member, TyrClient> p : peers.entrySet()) {
        String cursor = null;
        do {
          current(ring);
          ScanResult page = TyrClient.await(p.getValue().scan("", cursor, PAGE));
          for (String key : page.keys()) {
            if (ring.isReplica(self, key) && ring.primary(key).equals(p.getKey())) {
              local.remove(key);
              try {
                copy(ring, key, p.getValue(), stats);
              } catch (Held h) {
                heldCopies.put(key, p.getValue()); // the others go on; it is tried again
              }
            }
          }
          cursor = page.nextCursor();
        } while (cursor != null);
      }
      Map<String, Long> heldDeletes = new LinkedHashMap<>();
      for (Map.Entry<String, Long> gone : local.entrySet()) {
        // Not on its primary when listed, after our version was taken: deleted meanwhile.
        try {
          deleteChecked(gone.getKey(), gone.getValue(), stats);
        } catch (Held h) {
          heldDeletes.put(gone.getKey(), gone.getValue());
        }
      }
      retryHeld(ring, heldCopies, heldDeletes, stats);
      return stats;
    } finally {
      peers.values().forEach(TyrClient::close);
    }
  }

  private void deleteChecked(String key, long version, Stats stats) throws IOException {
    if (commitChecked(key, version, List.of(new TxOp.Delete(key, false))) >= 0) {
      stats.deleted++;
    }
  }

  /**
   * Tries again, once a second for up to {@link #HELD_ROUNDS} rounds, only the keys a
   * prepared cross-node part held here (its decision releases them), instead of starting
   * the whole catch-up (a scan of every member) over for each. Still held after that: the
   * run fails, and the next one starts over.
   */
  private void retryHeld(Ring ring, Map<String, TyrClient> copies, Map<String, Long> deletes,
      Stats stats) throws Exception {
    for (int round = 1; !(copies.isEmpty() && deletes.isEmpty()); round++) {
      if (round > HELD_ROUNDS) {
        throw new IOException("keys held by prepared transactions for " + HELD_ROUNDS
            + " s, not caught up: " + copies.keySet() + " " + deletes.keySet());
      }
      if (round == 1) {
        LOG.info("node {}: catch-up under epoch {} waits for keys held by prepared "
            + "transactions: {} {}", membership.self(), ring.epoch(), copies.keySet(),
            deletes.keySet());
      }
      Thread.sleep(1000);
      for (var it = copies.entrySet().iterator(); it.hasNext(); ) {
        var e = it.next();
        try {
          copy(ring, e.getKey(), e.getValue(), stats);
          it.remove();
        } catch (Held h) {
          // still held
        }
      }
      for (var it = deletes.entrySet().iterator(); it.hasNext(); ) {
        var e = it.next();
        current(ring);
        try {
          deleteChecked(e.getKey(), e.getValue(), stats);
          it.remove();
        } catch (Held h) {
          // still held
        }
      }
    }
  }

  private void current(Ring ring) throws Superseded {
    if (membership.ring().epoch() != ring.epoch()) {
      throw new Superseded();
    }
  }

  /** Waits until {@code m} is at this epoch with no older commit running. */
  private void awaitSettled(Ring ring, Member m, TyrClient c) throws Exception {
    for (int attempt = 0; ; attempt++) {
      current(ring);
      try {
        TyrClient.await(c.settled(ring.epoch()));
        return;
      } catch (IOException e) {
        if (attempt >= 600) {
          throw new IOException("member " + m + " did not settle at epoch " + ring.epoch(), e);
        }
        Thread.sleep(100); // behind: it loads the ring file within about a second
      }
    }
  }

  /** This node's keys, with their local versions (every range has an UP primary here). */
  private Map<String, Long> localKeys(Ring ring) throws IOException {
    Map<String, Long> out = new HashMap<>();
    String cursor = null;
    do {
      ScanResult page = engine.scan("", cursor, PAGE);
      for (String key : page.keys()) {
        if (ring.isReplica(membership.self(), key)) {
          out.put(key, engine.stat(key).version());
        }
      }
      cursor = page.nextCursor();
    } while (cursor != null);
    return out;
  }

  /**
   * Makes {@code key} here equal the primary's copy (retrying if a replicated write races),
   * one piece at a time: no more than one piece of the blob is held in memory. The pieces
   * are gathered in a spool file in the data directory and the new version replaces the
   * local one in one checked commit, so a run that fails part way (the primary lost, the
   * ring moved on) leaves the old copy whole, never a prefix of the new one: an operator
   * who then marks this node UP by hand gets stale blobs, not truncated ones. A blob too
   * large for one commit ({@link #WHOLE_COMMIT}) is still copied in place, piece by piece
   * (see the README's "Not covered").
   */
  private void copy(Ring ring, String key, TyrClient primary, Stats stats) throws Exception {
    for (int attempt = 0; attempt < 100; attempt++) {
      current(ring);
      long localVersion = engine.stat(key).version();
      ReadResult first = readPiece(primary, key, 0);
      stats.checked++;
      if (first == null) {
        if (localVersion == 0
            || commitChecked(key, localVersion, List.of(new TxOp.Delete(key, false))) >= 0) {
          stats.deleted += localVersion == 0 ? 0 : 1;
          return;
        }
        continue;
      }
      stats.bytes += first.data().remaining();
      if (localVersion != 0) {
        Boolean same = sameAsLocal(primary, key, localVersion, first, stats);
        if (same == null) {
          continue; // the primary's blob changed between pieces: look again
        }
        if (same) {
          return;
        }
      }
      boolean done = first.size() <= WHOLE_COMMIT
          ? copyWhole(ring, key, primary, localVersion, first, stats)
          : copyInPlace(ring, key, primary, localVersion, first, stats);
      if (done) {
        stats.copied++;
        stats.copiedBytes += first.size();
        return;
      }
      // A replicated write came in between, or the primary's blob changed: copy again.
    }
    throw new IOException("could not copy '" + key + "': it kept changing");
  }

  /**
   * Largest blob copied through the spool in one commit: a transaction may log at most
   * 1 GiB (the engine's WriteAheadLog.MAX_RECORD_BYTES), less room for its record.
   */
  static final long WHOLE_COMMIT = (1L << 30) - (16L << 20);

  /** Called before each piece after the first is read (tests: a failure between pieces). */
  volatile Runnable betweenPieces = () -> { };

  /**
   * Gathers the primary's pieces in {@code <data-dir>/recovery-spool}, then puts the whole
   * blob from there (mapped, not on the heap) under the check of {@code localVersion}.
   * False if the primary's blob or the local one changed meanwhile.
   */
  private boolean copyWhole(Ring ring, String key, TyrClient primary, long localVersion,
      ReadResult first, Stats stats) throws Exception {
    Path spool = engine.config().directory().resolve("recovery-spool");
    try (java.nio.channels.FileChannel ch = java.nio.channels.FileChannel.open(spool,
        java.nio.file.StandardOpenOption.CREATE, java.nio.file.StandardOpenOption.READ,
        java.nio.file.StandardOpenOption.WRITE,
        java.nio.file.StandardOpenOption.TRUNCATE_EXISTING)) {
      long offset = writeFully(ch, first.data(), 0);
      while (offset < first.size()) {
        betweenPieces.run();
        current(ring);
        ReadResult p = readPiece(primary, key, offset);
        if (p == null || p.version() != first.version()) {
          return false;
        }
        int n = p.data().remaining();
        if (n == 0) {
          break;
        }
        stats.bytes += n;
        offset = writeFully(ch, p.data(), offset);
      }
      ByteBuffer whole = ch.map(java.nio.channels.FileChannel.MapMode.READ_ONLY, 0, offset);
      return commitChecked(key, localVersion, List.of(new TxOp.Put(key, whole, false))) >= 0;
    } finally {
      Files.deleteIfExists(spool);
    }
  }

  private static long writeFully(java.nio.channels.FileChannel ch, ByteBuffer data,
      long offset) throws IOException {
    while (data.hasRemaining()) {
      offset += ch.write(data, offset);
    }
    return offset;
  }

  /**
   * The in-place copy of a blob too large for one commit: the first piece replaces the
   * local copy, the others follow, each under the check of the version before it. A run
   * that fails part way leaves a prefix of the new version here until a later run.
   */
  private boolean copyInPlace(Ring ring, String key, TyrClient primary, long localVersion,
      ReadResult first, Stats stats) throws Exception {
    long offset = first.data().remaining();
    long v = commitChecked(key, localVersion, List.of(new TxOp.Put(key, first.data(), false)));
    while (v >= 0 && offset < first.size()) {
      betweenPieces.run();
      current(ring);
      ReadResult p = readPiece(primary, key, offset);
      if (p == null || p.version() != first.version()) {
        return false;
      }
      int n = p.data().remaining();
      if (n == 0) {
        break;
      }
      stats.bytes += n;
      v = commitChecked(key, v, List.of(new TxOp.Write(key, offset, p.data())));
      offset += n;
    }
    return v >= 0;
  }

  /** One piece of the primary's blob from {@code offset}, or null if it has none. */
  private ReadResult readPiece(TyrClient primary, String key, long offset) throws IOException {
    try {
      return TyrClient.await(primary.read(key, offset, Math.min(PIECE, maxFrameBytes / 2)));
    } catch (TyrException e) {
      if (e.code() == ErrorCode.NOT_FOUND) {
        return null;
      }
      throw e;
    }
  }

  /**
   * Whether the local copy at {@code localVersion} holds the primary's bytes, compared a
   * piece at a time; null if the primary's blob changed between pieces.
   */
  private Boolean sameAsLocal(TyrClient primary, String key, long localVersion,
      ReadResult first, Stats stats) throws IOException {
    BlobStat s = engine.stat(key);
    if (s.version() != localVersion || s.size() != first.size()) {
      return false;
    }
    ReadResult piece = first;
    long offset = 0;
    while (true) {
      ByteBuffer theirs = piece.data().duplicate();
      ByteBuffer mine = ByteBuffer.allocate(theirs.remaining());
      BlobStat read = engine.read(key, offset, mine);
      mine.flip();
      if (read.version() != localVersion || !mine.equals(theirs)) {
        return false;
      }
      offset += theirs.remaining();
      if (offset >= first.size() || theirs.remaining() == 0) {
        return true;
      }
      piece = readPiece(primary, key, offset);
      if (piece == null || piece.version() != first.version()) {
        return null;
      }
      stats.bytes += piece.data().remaining();
    }
  }

  /** Commits {@code ops} if {@code key} is still at {@code version}: the new version, or -1. */
  private long commitChecked(String key, long version, List<TxOp> ops) throws IOException {
    try {
      return TyrClient.await(engine.commit(new TxRequest(
          List.of(new ReadCheck(key, version)), ops))).version();
    } catch (TyrException e) {
      if (e.code() == ErrorCode.CONFLICT && TyrException.heldByPrepared(e)) {
        throw new Held(key, e); // not a race with a replicated write: copying again won't do
      }
      if (e.code() == ErrorCode.CONFLICT) {
        return -1;
      }
      throw e;
    }
  }

  @Override
  public void close() {
    runner.shutdownNow();
    handOvers.shutdownNow();
  }
}
