package io.blobfs.tyr.server;

import io.blobfs.tyr.api.CommitResult;
import io.blobfs.tyr.api.ErrorCode;
import io.blobfs.tyr.api.TxOp;
import io.blobfs.tyr.api.TxRequest;
import io.blobfs.tyr.api.TyrException;
import io.blobfs.tyr.client.TyrClient;
import io.blobfs.tyr.engine.TyrEngine;
import io.blobfs.tyr.protocol.Request;
import io.blobfs.tyr.ring.Member;
import io.blobfs.tyr.ring.Ring;
import io.blobfs.tyr.ring.WrongEpochException;
import java.io.Closeable;
import java.nio.ByteBuffer;
import java.security.SecureRandom;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;

/**
 * Primary-backup replication of a cluster node's writes (R &gt; 1).
 *
 * <p><b>As primary</b>, the node commits a client's transaction locally, then sends each
 * backup of the keys it wrote the transaction's <em>physical</em> effect: appends, adds
 * and compare-and-sets resolved to the bytes they wrote, exclusive creates and checks
 * dropped (the primary decided them). The client's commit is acknowledged only when every
 * backup has applied its part: a write acknowledged is on all R replicas. A backup that
 * does not confirm fails the client's call with {@code UNAVAILABLE}; the write is then
 * on the primary (and maybe some backups) but not acknowledged, and a retry of the same
 * write makes the replicas equal again (puts and writes at an offset are idempotent).
 *
 * <p><b>Order.</b> Writes to one blob must reach a backup in the primary's commit order,
 * or two overlapping writes could end differently on the two replicas. The primary
 * numbers its commits per backup while its engine fixes their order ({@code seq}, taken
 * under one lock together with the engine's commit call). Each backup gets one stream:
 * at most one request in flight, carrying every commit ready in numbering order since
 * the last (a batch, like a group commit), and the backup hands them to its engine in
 * that order. One request at a time is what keeps the order whatever the transport and
 * the server's thread pool do, and it cannot wedge the backup's per-connection limits.
 * A commit that failed on the primary is still numbered and sent, empty, so the numbering
 * has no gap. A stream whose request fails starts a new numbering ({@code incarnation}):
 * the commits numbered in the old one and not yet sent fail, unacknowledged. A batch the
 * backup refuses (another epoch, a share it does not hold) fails alone: nothing of it was
 * applied, and the commits after it go on under a new name on the wire. A backup that has
 * fenced a key ({@link RefusedKeys}) refuses the commits of a batch that change it in part
 * ({@link FencedWrites}) and applies the others: its answer names the refused ones, which
 * fail as unconfirmed (their keys owed, repaired by a put), and the stream goes on; a
 * batch with a prepared share so refused is refused whole (a share travels alone, and such
 * a batch cannot say it reads the list): the share is not held and its prepare fails.
 * The primary says in each
 * batch that it reads that list ({@code Request.Replicate#readsRefusals}); a batch that
 * does not (a primary older than session 13, which took every commit of an answered batch
 * for confirmed) is refused whole instead, which every version fails and owes; the refusal
 * is typed {@code FENCED}, an answer this version's primary takes as a wrong epoch's (the
 * batch fails alone, the writes behind it go on), an older one as a broken stream.
 *
 * <p><b>Versions</b> stay each node's own commit numbers, so calls that see or check a
 * version (stat, versioned reads, conditional writes, transactions) go to the primary;
 * plain reads of bytes may go to any replica.
 *
 * <p>Node-to-node connections ({@link PeerAccess}) authenticate with the cluster's shared
 * secret exactly as clients do (mutual challenge-response), and where the cluster uses TLS
 * they use it too, trusting the certificates of {@code tls-peer-trust}: a TLS node refuses
 * plain text from a peer as from a client.
 */
final class Replicator implements Closeable {
  private static final SecureRandom RANDOM = new SecureRandom();
  private static final Duration TIMEOUT = Duration.ofSeconds(30);
  /** Runs the completions of replication batches, off every stream's lock (see sendNext). */
  private static final java.util.concurrent.Executor COMPLETIONS =
      java.util.concurrent.Executors.newCachedThreadPool(r -> {
        Thread t = new Thread(r, "tyr-replication-completions");
        t.setDaemon(true);
        return t;
      });

  private final Membership membership;
  private final TyrEngine engine;
  private final PeerAccess peers;
  private final int maxFrameBytes;
  /** As primary: one numbered stream per backup. Guarded by {@code this}. */
  private final Map<Member, Stream> streams = new HashMap<>();
  /** As backup: what each primary has sent, by its id. Guarded by {@code this}. */
  private final Map<String, Incoming> incoming = new HashMap<>();
  /**
   * The newest commit this node does not vouch for ({@link #confirm} answers NOT_HELD for a
   * version at or below it). One watermark for every way "nothing owed" stops meaning "held
   * by every backup" (review 3, P1): at the start, the engine's last commit (what this node
   * owed its backups of commits up to it was in the memory of the process before); raised
   * to the last commit when a ring leaves this node not UP or takes keys it was the UP
   * primary of away from it, and when a repair drops an owe as no longer needed because
   * this node is not the key's UP primary (that drop says nothing about the backup, and a
   * catch-up or a backup's write may give the key a newer version here with older bytes).
   * Not raised on a ring that keeps this node's keys (a plain epoch change): a write
   * waiting for its repair there is still confirmed, not made again. Only goes up.
   */
  private final java.util.concurrent.atomic.AtomicLong vouchFrom =
      new java.util.concurrent.atomic.AtomicLong();
  /** The ring before the one being installed (see {@link #stopVouchingOnRoleLoss}). */
  private Ring lastInstalled;
  /**
   * The epoch of the last ring whose install stopped this node vouching (lost UP, or lost
   * keys it was the UP primary of). A commit admitted under an older ring may append after
   * that install's raise (a slow disk is a likely reason the node was marked DOWN at all),
   * above the watermark: its owe then raises the watermark again before the client hears
   * of it (review 2 of the fix, P2: otherwise a repair from a caught-up copy clears the
   * owe and CONFIRM vouches for a write neither replica holds).
   */
  private volatile long lostRoleAt;
  /** As primary: keys applied here that a backup did not confirm, repaired meanwhile. */
  private final OwedKeys owedKeys = new OwedKeys(this::repair);
  /** As backup: keys of writes refused here, not served to plain reads meanwhile. */
  private final RefusedKeys refusedKeys = new RefusedKeys();

  /** One backup's stream. Guarded by itself. */
  private static final class Stream {
    final TyrClient client;
    /** This numbering: a commit numbered in another one fails (see {@link #offer}). */
    long incarnation = RANDOM.nextLong();
    /** The next number to give a commit; the next to send. */
    long next = 1;
    long sendFrom = 1;
    final TreeMap<Long, Item> ready = new TreeMap<>();
    boolean sending;
    /**
     * The incarnation the backup knows this stream by, and what is taken off a number to
     * send it: {@code incarnation} and 0, until a batch is refused whole (see
     * {@link #skipRefused}).
     */
    long wireIncarnation = incarnation;
    long wireBase;
    /**
     * The backup said it stages a repair's pieces ({@link #STAGES_PIECES} in an answer's
     * version): only then may a batch carry them (an older backup refuses the frame).
     */
    volatile boolean stagesPieces;
    /**
     * The backup said it rebases shares ({@link #REBASES} in its last answer's version):
     * only then may a batch carry rebases (issue 13, bug 3; an older backup refuses them).
     */
    volatile boolean rebases;
    /**
     * An answer came in this numbering, so {@link #rebases} says what the backup is. Until
     * then an item with rebases is held behind an empty probe batch, never sent stripped:
     * stripped, its write would move the behind shares' keys off their versions on the
     * backup, which then takes those shares for applied (bug 3 again; the s15 review's
     * MF1, a restarted primary's first batch). Guarded by the stream.
     */
    boolean answered;
    /**
     * The epoch of the last probe refused whole by a backup ahead of it (or without a
     * ring): items of that epoch are sent as they are, with their rebases (refused there
     * too, nothing applied), not probed for again, which would loop on the refusal. A
     * backup behind is probed again instead (it may install the ring). Guarded by the
     * stream.
     */
    long probeRefusedAt = Long.MIN_VALUE;
    /**
     * The epoch of the last probe refused by a backup whose ring was ahead of it and had
     * this node UP, or MIN_VALUE: items of that epoch or older go stripped of their
     * rebases while the stream is unanswered (see sendNext). Not reset by a renumbering:
     * a backup's epoch only goes forward. Guarded by the stream.
     */
    long refusedAheadAt = Long.MIN_VALUE;
    /**
     * When (System.nanoTime) a backup behind the held item's epoch first refused its probe,
     * or 0: the probe goes again only until {@link #PROBE_BEHIND_NANOS} after it. Why a
     * bound (second review of the rebase, MF1): a backup that stays UP but never loads the
     * ring (its watcher dead, its ring file unreadable) is never marked DOWN, and the held
     * item, with every later write of the keys it backs behind it, would wait for ever;
     * past the bound the item goes as to a backup ahead: with its rebases, refused there
     * by epoch and fenced, its writes failed UNAVAILABLE (keys owed), never stripped.
     * Guarded by the stream; reset by a renumbering or an answer.
     */
    long behindSince;

    Stream(TyrClient client) {
      this.client = client;
    }

    /** Numbers afresh: whatever is numbered, sent or not, belongs to the old numbering. */
    void renumber() {
      incarnation = RANDOM.nextLong();
      wireIncarnation = incarnation;
      wireBase = 0;
      next = 1;
      sendFrom = 1;
      answered = false; // the backup may have restarted as another version: ask again
      behindSince = 0;
    }

    /**
     * After a batch the backup refused whole (it answered, having taken nothing of it in
     * its order; the batch is failed): the commits after it go on under a new name on the
     * wire, numbered from 1 there, so the backup follows them as a new stream whatever
     * place it had reached in the old one. Their own numbers stay: those reserved and not
     * yet offered still land in their place.
     */
    void skipRefused() {
      wireIncarnation = RANDOM.nextLong();
      wireBase = sendFrom - 1;
    }
  }

  /** A numbered commit's physical writes for one backup, and its confirmation. */
  /**
   * {@code rebase}: a prepared part's apply, the parts (transaction ids) that held the
   * listed keys behind it here, restricted to this backup's keys; empty otherwise.
   */
  private record Item(TxRequest tx, long epoch, CompletableFuture<Void> confirmed,
      Request.Prepare prepare, int piece, Map<String, List<String>> rebase) {
    Item(TxRequest tx, long epoch, CompletableFuture<Void> confirmed) {
      this(tx, epoch, confirmed, null, 0, Map.of());
    }
  }

  /**
   * In a backup's answer's version: it stages a repair's pieces (review M4). An older
   * backup answers 0, and an older primary reads nothing of the answer but its list.
   */
  static final long STAGES_PIECES = 1;
  /**
   * In a backup's answer's version: it reads a batch's rebases and applies them with
   * their commit (issue 13, bug 3). An older primary ignores the bit.
   */
  static final long REBASES = 2;
  /** The pause before a probe refused by a backup behind its epoch goes again. */
  static final long PROBE_AGAIN_MS = 20;
  /** How long a backup behind the held item's epoch is probed again: see Stream#behindSince. */
  static final long PROBE_BEHIND_NANOS = TIMEOUT.toNanos();
  /** A piece of a repair in pieces, at most (and half the frame's room, at most). */
  private static final int PIECE_BYTES = 4 << 20;

  /** As backup: a repair's pieces of one key, staged in a file until its last. */
  private static final class Staged {
    final String source;
    final java.nio.file.Path file;
    final java.nio.channels.FileChannel channel;
    long length;

    Staged(String source, java.nio.file.Path dir) throws java.io.IOException {
      this.source = source;
      java.nio.file.Files.createDirectories(dir);
      this.file = java.nio.file.Files.createTempFile(dir, "tyr-repair-", ".part");
      this.channel = java.nio.channels.FileChannel.open(file,
          java.nio.file.StandardOpenOption.READ, java.nio.file.StandardOpenOption.WRITE);
    }

    /**
     * Closed and deleted on another thread (review 2, S1): callers hold the Replicator's
     * monitor, which every commit's reservation on the node takes, or the install's lock
     * (restartStreamsToDown), and deleting up to 2 GiB of staged file stalled them all.
     * The last piece's mapping stays readable once the file is closed and deleted.
     */
    void drop() {
      COMPLETIONS.execute(() -> {
        try {
          channel.close();
          java.nio.file.Files.deleteIfExists(file);
        } catch (java.io.IOException e) {
          // left behind: deleted at the node's next start (cleanStaging)
        }
      });
    }
  }

  /**
   * As backup: where a repair's pieces are staged, in the node's data directory (review 2,
   * S2: not the system's temporary directory, which may be small or tmpfs, failing every
   * piece, and is never cleaned of a crashed node's files, up to 2 GiB each).
   */
  private final java.nio.file.Path stagingDir;

  /** Deletes what a node that stopped or crashed midway left staged (at start). */
  private static void cleanStaging(java.nio.file.Path dir) {
    if (!java.nio.file.Files.isDirectory(dir)) {
      return;
    }
    try (java.util.stream.Stream<java.nio.file.Path> files = java.nio.file.Files.list(dir)) {
      for (java.nio.file.Path f : (Iterable<java.nio.file.Path>) files::iterator) {
        java.nio.file.Files.deleteIfExists(f);
      }
    } catch (java.io.IOException e) {
      throw new java.io.UncheckedIOException("cannot clean the repair staging directory "
          + dir, e);
    }
  }

  /** As backup: the repairs in pieces under way, by key. Guarded by {@code this}. */
  private final Map<String, Staged> staged = new HashMap<>();

  /** As backup: where a replicated prepared part goes (durably) before the batch's answer. */
  interface PreparedSink {
    /** {@code epoch}: the ring the batch was checked under (refused if it moved since). */
    void hold(String source, long epoch, Request.Prepare part) throws java.io.IOException;
  }

  private volatile PreparedSink preparedSink;

  /**
   * As backup: a replicated write's rebase of the shares held behind its part on the
   * primary (issue 13, bug 3). {@link #run} is the write's commit hook (under the engine's
   * commit lock: it takes no monitor); {@link #rewrite}, once the write is forced, writes
   * the rebased shares' records again (same place) before the batch's answer.
   */
  interface Rebase extends Runnable {
    /** Before the write is handed to the engine: its intent, forced. */
    void intent() throws java.io.IOException;

    /** Once the write is forced (or failed): the records again, then the intent deleted. */
    void rewrite() throws java.io.IOException;
  }

  /** As backup: makes the {@link Rebase} of these parts' (transaction ids) keys. */
  interface ShareRebases {
    Rebase rebase(Map<String, List<String>> parts);
  }

  private volatile ShareRebases shareRebases;
  /**
   * Test seam: runs in a replicated write's commit hook, under the engine's commit lock,
   * after the write is logged and before its rebase (a test parks it there).
   */
  volatile Runnable inRebaseForTest;
  /** Test seam: runs before the rebased shares' records are written again (a crash there). */
  volatile Runnable beforeRewriteForTest;
  /** Test seam: sees each batch as it is sent. */
  volatile java.util.function.Consumer<Request.Replicate> sentForTest;
  /**
   * What this node, as backup, says it reads in its answers' version ({@link
   * #STAGES_PIECES}, {@link #REBASES}); a test makes it answer as an older one.
   */
  volatile long answers = STAGES_PIECES | REBASES;

  /**
   * As backup, before any check: a batch with a rebases section refused as an older node's
   * decoder refuses it (a malformed frame: BAD_REQUEST) when {@link #answers} makes this
   * node answer as one that does not read them. Only tests lower {@code answers}.
   */
  void decodeAsAnswered(Request.Replicate rep) throws TyrException {
    if ((answers & REBASES) == 0 && !rep.rebases().isEmpty()) {
      throw new TyrException(ErrorCode.BAD_REQUEST, "malformed frame: bytes past the batch's "
          + "end (as a backup without REBASES reads a rebases section)");
    }
  }

  void onRebase(ShareRebases rebases) {
    this.shareRebases = rebases;
  }

  /** What a backup has applied of one primary's stream. */
  private static final class Incoming {
    final long incarnation;
    long expected = 1;

    Incoming(long incarnation) {
      this.incarnation = incarnation;
    }
  }

  /** A numbered place in a stream, for a commit admitted under ring {@code epoch}. */
  private record Reserved(Stream stream, long incarnation, long seq, long epoch,
      List<Integer> ops) {}

  /**
   * Bytes in one replication request at most, but for a single commit (which fits the
   * backup's frame limit, as it fit the client's and a node's limit is far larger).
   */
  private static final long BATCH_BYTES = 32L << 20;
  private static final int BATCH_COMMITS = 512;

  Replicator(Membership membership, TyrEngine engine, PeerAccess peers, int maxFrameBytes) {
    this.membership = membership;
    this.engine = engine;
    this.peers = peers;
    this.maxFrameBytes = maxFrameBytes;
    this.stagingDir = engine.config().directory().resolve("repair-staging");
    stopVouching(); // what a process before owed is lost with it
    this.lastInstalled = membership.ring();
    cleanStaging(stagingDir); // nothing is staged yet: no primary has sent us a piece
    membership.onInstall(this::stopVouchingOnRoleLoss);
    membership.onInstall(this::restartStreamsToDown);
  }

  /** Vouches for no commit made here so far (see {@link #vouchFrom}). */
  private void stopVouching() {
    long last = engine.lastCommit();
    vouchFrom.accumulateAndGet(last, Math::max);
  }

  /**
   * Review 3, P1: under a ring that leaves this node not UP, or makes another member the
   * primary of keys this node was the UP primary of, its repairs drop what they owe of
   * those keys as no longer needed, and a catch-up may then copy older bytes over a key at
   * a newer version here: from then on "nothing owed and the key at V or later" no longer
   * proves that every backup holds V, so this node stops vouching for what it applied up
   * to now (the client's write is then "not held" and made again only if the key still
   * holds its bytes, as after a restart). Runs under the install's lock, so rings come in
   * order. A commit admitted under the ring before and applied after this is covered
   * twice: {@link #repair} raises the watermark before it drops an owe as not needed, and
   * the commit's own owe raises it when its ring is older than {@link #lostRoleAt} (the
   * repair alone was not enough: one from a caught-up copy clears the owe and raises
   * nothing; the second review's P2).
   */
  private void stopVouchingOnRoleLoss(Ring next) {
    Ring before = lastInstalled;
    lastInstalled = next;
    Member self = membership.self();
    if (next.state(self) != Ring.State.UP
        || (before.state(self) == Ring.State.UP
            && !before.primariesBefore(next, self).isEmpty())) {
      lostRoleAt = next.epoch();
      stopVouching();
    }
  }

  /**
   * A backup marked DOWN gets no writes; when it is back it starts from nothing (it may
   * have restarted, forgetting where our stream was), so its stream is numbered afresh
   * now, and what was waiting to be sent to it fails (it was to a backup that is DOWN).
   */
  private void restartStreamsToDown(Ring ring) {
    if (ring.state(membership.self()) != Ring.State.UP) {
      refusedKeys.clear(); // it catches up from the primaries before it serves again
      synchronized (this) {
        staged.values().forEach(Staged::drop);
        staged.clear();
      }
    } else {
      refusedKeys.forget(key -> ring.primary(key).equals(membership.self())); // its copy rules
    }
    List<Stream> down = new ArrayList<>();
    synchronized (this) {
      streams.forEach((m, s) -> {
        if (ring.state(m) == Ring.State.DOWN) {
          down.add(s);
        }
      });
    }
    for (Stream s : down) {
      synchronized (s) {
        s.renumber();
        for (Item it : s.ready.values()) {
          it.confirmed().completeExceptionally(new TyrException(ErrorCode.UNAVAILABLE,
              "the backup was marked DOWN before this write was sent"));
        }
        s.ready.clear();
      }
    }
  }

  // ------------------------------------------------------------------ primary

  /**
   * Where a client's commit goes whose written keys do not all have the same owners (the
   * two-phase path, {@code Transactions.commitWhole}); null until it is set.
   */
  private volatile java.util.function.Function<TxRequest, CompletableFuture<CommitResult>>
      splitCommits;

  void onSplitOwners(
      java.util.function.Function<TxRequest, CompletableFuture<CommitResult>> whole) {
    this.splitCommits = whole;
  }

  /**
   * A client's commit: local, then on every backup of the keys it writes; or, if those
   * keys do not all have the same owners, by the two-phase path (see {@link #sameOwners}).
   */
  CompletableFuture<CommitResult> commit(TxRequest tx) {
    return commitOrSplit(tx, engine::commit, splitCommits, Map.of());
  }

  /**
   * As {@link #commit(TxRequest)}, the local commit made by {@code local} (a prepared
   * cross-node part is applied through the engine's {@code commitPrepared}), always in
   * one batch per backup.
   */
  CompletableFuture<CommitResult> commit(TxRequest tx,
      java.util.function.Function<TxRequest, CompletableFuture<CommitResult>> local) {
    return commitOrSplit(tx, local, null, Map.of());
  }

  /**
   * As above for a prepared part's apply: {@code behind} is filled by {@code local}, in
   * the engine's lock hold that logs the part (TyrEngine.commitPrepared), with the parts
   * holding each key behind it (engine names: a transaction id, or a share's name
   * {@code txId-s...}). Each backup's item carries them for its keys as rebases (issue 13,
   * bug 3): the backup moves its shares of those parts, for those keys, to the versions
   * this write gives them, in the same critical section as the write.
   */
  CompletableFuture<CommitResult> commit(TxRequest tx,
      java.util.function.Function<TxRequest, CompletableFuture<CommitResult>> local,
      Map<String, List<String>> behind) {
    return commitOrSplit(tx, local, null, behind);
  }

  private CompletableFuture<CommitResult> commitOrSplit(TxRequest tx,
      java.util.function.Function<TxRequest, CompletableFuture<CommitResult>> local,
      java.util.function.Function<TxRequest, CompletableFuture<CommitResult>> split,
      Map<String, List<String>> behind) {
    if (membership.ring().replication() == 1) {
      return local.apply(tx); // no backups, and no catch-up to wait for this commit
    }
    // Counted until done, so that a recovering peer can wait until every commit that
    // might have skipped it (admitted under an older ring) is over (Membership.settled).
    Ring ring = membership.admit();
    if (split != null && !sameOwners(ring, tx)) {
      // Decided under the ring this commit would replicate by: one that a join changed
      // since the request's check cannot send it down the one-batch path split.
      membership.release(ring);
      return split.apply(tx);
    }
    CompletableFuture<CommitResult> done;
    try {
      done = commit(tx, local, ring, 0, behind);
    } catch (RuntimeException e) {
      membership.release(ring);
      throw e;
    }
    return done.whenComplete((x, e) -> membership.release(ring));
  }

  private CompletableFuture<CommitResult> commit(TxRequest tx,
      java.util.function.Function<TxRequest, CompletableFuture<CommitResult>> local,
      Ring ring) {
    return commit(tx, local, ring, 0);
  }

  /** As above; {@code piece}: 0, or the kind of a repair's piece it is (Replicate). */
  private CompletableFuture<CommitResult> commit(TxRequest tx,
      java.util.function.Function<TxRequest, CompletableFuture<CommitResult>> local,
      Ring ring, int piece) {
    return commit(tx, local, ring, piece, Map.of());
  }

  /** As above; {@code behind}: see {@link #commit(TxRequest, java.util.function.Function, Map)}. */
  private CompletableFuture<CommitResult> commit(TxRequest tx,
      java.util.function.Function<TxRequest, CompletableFuture<CommitResult>> local,
      Ring ring, int piece, Map<String, List<String>> behind) {
    WrongEpochException notPrimary = notPrimary(tx, ring);
    if (notPrimary != null) {
      return CompletableFuture.failedFuture(notPrimary);
    }
    Map<Member, List<Integer>> perBackup = new LinkedHashMap<>();
    for (int i = 0; i < tx.ops().size(); i++) {
      // The owners not DOWN: a RECOVERING one gets new writes while it copies the old.
      for (Member b : ring.backups(tx.ops().get(i).key())) {
        perBackup.computeIfAbsent(b, k -> new ArrayList<>()).add(i);
      }
    }
    if (perBackup.isEmpty()) {
      return local.apply(tx); // the UP primary of its keys, and every backup down
    }
    CompletableFuture<CommitResult> committed;
    List<Reserved> reserved = new ArrayList<>();
    synchronized (this) {
      // Every stream before the local commit: a peer client that cannot be made (its
      // tls-peer-trust became unreadable) then fails the commit with nothing applied
      // here and no number reserved on another stream that would never be filled.
      Map<Member, Stream> to = new HashMap<>();
      try {
        for (Member b : perBackup.keySet()) {
          to.put(b, stream(b));
        }
      } catch (RuntimeException e) {
        return CompletableFuture.failedFuture(new TyrException(ErrorCode.UNAVAILABLE,
            "cannot connect to a backup, nothing was written: " + e.getMessage(), e));
      }
      committed = local.apply(tx); // fixes this commit's place in the engine's order
      for (Map.Entry<Member, List<Integer>> e : perBackup.entrySet()) {
        Stream s = to.get(e.getKey());
        synchronized (s) {
          reserved.add(new Reserved(s, s.incarnation, s.next++, ring.epoch(), e.getValue()));
        }
      }
    }
    List<Member> backups = new ArrayList<>(perBackup.keySet()); // in the order of reserved
    return committed.handle((result, err) -> {
      List<CompletableFuture<Void>> confirmed = new ArrayList<>();
      for (int i = 0; i < reserved.size(); i++) {
        Reserved r = reserved.get(i);
        TxRequest physical = err == null ? physical(tx, result, r.ops())
            : new TxRequest(List.of(), List.of());
        // Read once the local commit completed: filled in its lock hold, before.
        Map<String, List<String>> rebase = err == null ? rebaseFor(physical, behind)
            : Map.of();
        CompletableFuture<Void> c = offer(r, physical, null, err == null ? piece : 0,
            rebase);
        if (err == null) {
          Member b = backups.get(i);
          // Applied here and not confirmed there: the backup owes this write (OwedKeys).
          // Owed before the client hears it (chained, not a side branch): its confirm
          // (session 14) reads "not owed" as "every backup holds it", so the owe must be
          // in before the client can ask.
          c = c.whenComplete((x, failed) -> {
            if (failed != null) {
              if (lostRoleAt > ring.epoch()) {
                stopVouching();
              }
              owedKeys.owe(b, keysOf(physical));
            }
          });
        }
        confirmed.add(c);
      }
      if (err != null) {
        return CompletableFuture.<CommitResult>failedFuture(unwrap(err));
      }
      return CompletableFuture.allOf(confirmed.toArray(new CompletableFuture<?>[0]))
          .handle((x, failed) -> {
            if (failed != null) {
              throw new CompletionException(backupFailed(unwrap(failed), result.version()));
            }
            return result;
          });
    }).thenCompose(f -> f);
  }

  /**
   * Whether every key {@code tx} writes has the same owners, in the same order, under
   * {@code ring}: then its one batch per backup is all or nothing there (one transaction
   * of the backup's engine, under one epoch check), and whatever states later rings give
   * the members, every key of it has the same primary, which holds all of it or none. Keys with different
   * owners take the two-phase path instead: a backup at another ring may refuse its batch
   * while another applies its own, and after a failover each new primary would hold its
   * keys' side only (the history IT's "fourth point").
   */
  static boolean sameOwners(Ring ring, TxRequest tx) {
    List<Member> first = null;
    for (TxOp op : tx.ops()) {
      List<Member> owners = ring.owners(op.key());
      if (first == null) {
        first = owners;
      } else if (!first.equals(owners)) {
        return false;
      }
    }
    return true;
  }

  /**
   * Why {@code tx} is refused, or null: it is unless this node is UP and the primary of
   * every key it writes or checks under {@code ring}, the ring it was admitted under. The
   * request was checked under the ring of its arrival; a ring installed since (this node marked DOWN while
   * cut off from the monitor, or frozen between check and admit) may make another owner
   * the primary, and this node would then commit, and with R = 2 and no backup left
   * acknowledge alone, a write that the new primary does not order.
   */
  private WrongEpochException notPrimary(TxRequest tx, Ring ring) {
    Member self = membership.self();
    if (ring.state(self) != Ring.State.UP) {
      return new WrongEpochException("node " + self + " is " + ring.state(self)
          + " under ring epoch " + ring.epoch() + ", admitted after the request's check", ring);
    }
    List<String> keys = new ArrayList<>();
    tx.ops().forEach(op -> keys.add(op.key()));
    tx.reads().forEach(c -> keys.add(c.key()));
    for (String key : keys) {
      if (!ring.primary(key).equals(self)) {
        return new WrongEpochException("node " + self + " is not the primary of '" + key
            + "' under ring epoch " + ring.epoch() + ", admitted after the request's check",
            ring);
      }
    }
    return null;
  }

  /**
   * A cross-node part just prepared here (its keys reserved, its record durable): sent to
   * every backup of the keys it writes, each getting the ops on its own keys, at this
   * place of its stream (after every write this node committed before). Completes once
   * every backup holds its share durably: then the part survives this node's loss, the
   * backup that becomes primary applying it once the decision is known. Fails with
   * UNAVAILABLE if a backup does not confirm (the part must not be acknowledged).
   */
  CompletableFuture<Void> replicatePrepare(Request.Prepare part) {
    if (membership.ring().replication() == 1) {
      return CompletableFuture.completedFuture(null);
    }
    Ring ring = membership.admit();
    try {
      WrongEpochException notPrimary = notPrimary(part.tx(), ring);
      if (notPrimary != null) {
        membership.release(ring); // else a recovering peer's barrier waits for ever
        return CompletableFuture.failedFuture(notPrimary);
      }
      Map<Member, List<Integer>> perBackup = new LinkedHashMap<>();
      for (int i = 0; i < part.tx().ops().size(); i++) {
        for (Member b : ring.backups(part.tx().ops().get(i).key())) {
          perBackup.computeIfAbsent(b, k -> new ArrayList<>()).add(i);
        }
      }
      List<CompletableFuture<Void>> confirmed = new ArrayList<>();
      RuntimeException noClient = null;
      synchronized (this) {
        // Every backup's stream first, as for a commit: a client that cannot be made (an
        // unusable trust file) refuses the prepare before any stream number is reserved,
        // so no stream waits for ever on a number nothing will fill.
        Map<Member, Stream> toBackup = new LinkedHashMap<>();
        try {
          perBackup.keySet().forEach(b -> toBackup.put(b, stream(b)));
        } catch (RuntimeException e) {
          noClient = e;
          perBackup.clear(); // nothing reserved: refused below
        }
        for (Map.Entry<Member, List<Integer>> e : perBackup.entrySet()) {
          List<TxOp> ops = new ArrayList<>();
          e.getValue().forEach(i -> ops.add(part.tx().ops().get(i)));
          // Its checks stay with the primary, which validated them (versions are its own).
          Request.Prepare share = new Request.Prepare(part.txId(), part.coordinator(),
              part.participants(), new TxRequest(List.of(), ops));
          Stream s = toBackup.get(e.getKey());
          Reserved r;
          synchronized (s) {
            r = new Reserved(s, s.incarnation, s.next++, ring.epoch(), e.getValue());
          }
          confirmed.add(offer(r, new TxRequest(List.of(), List.of()), share, 0, Map.of()));
        }
      }
      if (noClient != null) {
        // Released outside this object's monitor: an install (a takeover's hand-on) takes
        // the membership's lock, then this one.
        membership.release(ring);
        return CompletableFuture.failedFuture(new TyrException(ErrorCode.UNAVAILABLE,
            "transaction " + part.txId() + ": cannot connect to a backup, its prepared "
                + "part is not replicated: " + noClient.getMessage(), noClient));
      }
      return CompletableFuture.allOf(confirmed.toArray(new CompletableFuture<?>[0]))
          .handle((x, failed) -> {
            if (failed != null) {
              throw new CompletionException(new TyrException(ErrorCode.UNAVAILABLE,
                  "transaction " + part.txId() + ": a backup did not confirm its share of "
                      + "the prepared part: " + unwrap(failed).getMessage(), unwrap(failed)));
            }
            return (Void) null;
          })
          .whenComplete((x, e) -> membership.release(ring));
    } catch (RuntimeException e) {
      membership.release(ring);
      throw e;
    }
  }

  /** The stream numbers given so far on the stream to {@code backup} (for tests). */
  synchronized long numbered(Member backup) {
    Stream s = streams.get(backup);
    if (s == null) {
      return 0;
    }
    synchronized (s) {
      return s.next - 1;
    }
  }

  void onPrepared(PreparedSink sink) {
    this.preparedSink = sink;
  }

  /** Queues a numbered commit on its stream; completes once the backup has applied it. */
  private CompletableFuture<Void> offer(Reserved r, TxRequest physical,
      Request.Prepare prepare, int piece, Map<String, List<String>> rebase) {
    Stream s = r.stream();
    CompletableFuture<Void> confirmed = new CompletableFuture<>();
    synchronized (s) {
      if (s.incarnation != r.incarnation()) {
        confirmed.completeExceptionally(new TyrException(ErrorCode.UNAVAILABLE,
            "the replication stream broke before this write was sent"));
        return confirmed;
      }
      s.ready.put(r.seq(), new Item(physical, r.epoch(), confirmed, prepare, piece, rebase));
      sendNext(s);
    }
    return confirmed;
  }

  /**
   * The rebases of one backup's item: for each key its {@code physical} writes that parts
   * held behind the applied part here ({@code behind}, engine names), those parts'
   * transaction ids with the keys, in holder order. Every holder behind, not only the next:
   * with X, Y, Z on a key, Z's share is as stale as Y's after X's write.
   */
  static Map<String, List<String>> rebaseFor(TxRequest physical,
      Map<String, List<String>> behind) {
    if (behind.isEmpty()) {
      return Map.of();
    }
    Map<String, List<String>> out = new java.util.LinkedHashMap<>();
    for (String key : new java.util.LinkedHashSet<>(keysOf(physical))) {
      for (String holder : behind.getOrDefault(key, List.of())) {
        out.computeIfAbsent(Transactions.txIdOf(holder), x -> new ArrayList<>()).add(key);
      }
    }
    return out;
  }

  /** Under the stream's lock: sends the ready commits that follow the last sent, if idle. */
  private void sendNext(Stream s) {
    if (s.sending || !s.ready.containsKey(s.sendFrom)) {
      return;
    }
    long first = s.sendFrom;
    // One batch, one epoch: the ring each commit was admitted (and checked) under, which
    // is what its backup must be at; a newer ring does not vouch for an older check.
    long epoch = s.ready.get(first).epoch();
    List<TxRequest> txs = new ArrayList<>();
    Map<Integer, Request.Prepare> prepares = new HashMap<>();
    Map<Integer, Integer> pieces = new HashMap<>();
    Map<Integer, Map<String, List<String>>> rebases = new HashMap<>();
    List<CompletableFuture<Void>> confirms = new ArrayList<>();
    // Within a frame too (a node's max-frame may be set under BATCH_BYTES): a batch over
    // it fails at once, with every write in it. One commit alone fits, as it fit the
    // client's frame; 1 MiB is left for the batch's headers and keys.
    long limit = Math.min(BATCH_BYTES, maxFrameBytes - (1L << 20));
    long bytes = 0;
    for (Item it = s.ready.get(s.sendFrom); it != null && txs.size() < BATCH_COMMITS
        && it.epoch() == epoch && joinsBatch(it.prepare() != null, itemBytes(it), txs.size(),
            !prepares.isEmpty(), bytes, limit);
        it = s.ready.get(s.sendFrom)) {
      if (!it.rebase().isEmpty() && !s.answered && it.epoch() > s.probeRefusedAt) {
        // Issue 13, bug 3: held, never sent stripped, until the backup said whether it
        // rebases (see Stream#answered): the batch goes without it (its answer tells), or,
        // if it comes first, an empty probe batch goes (below) and it waits for the answer.
        break;
      }
      s.ready.remove(s.sendFrom++);
      if (it.prepare() != null) {
        prepares.put(txs.size(), it.prepare());
      }
      if (it.piece() != 0) {
        pieces.put(txs.size(), it.piece());
      }
      if (!it.rebase().isEmpty() && !s.answered && it.epoch() <= s.refusedAheadAt) {
        // Past a probe refused by a backup AHEAD of the item's epoch, with this node UP in
        // its ring (review 1 of the rebase, should-fix): sent stripped. The backup never
        // answered, so it may be older than the REBASES section: such a backup read the
        // section as a malformed frame (BAD_REQUEST), which is no refusal, so the stream
        // numbered afresh and failed every write queued behind the item unsent (unfenced
        // there), also those of the newer epoch the backup would have taken. Stripped is
        // safe here: the backup refuses the item by epoch whatever it carries, and no
        // hand-over can take it (one from this epoch would have taken the probe, and never
        // opens again once the backup has passed it), so nothing of it is applied there
        // (its keys owed and fenced as for any refusal). One item per refused probe: a
        // backup's epoch went back if it restarted on an older ring file, and such a
        // backup would apply a later stripped item without its rebases (bug 3 again;
        // the review of tyr-shoulds, M1), so the next item with rebases is probed again.
        // Nodes now refuse a ring older than the newest they installed
        // (Membership.recordEpochs); the probe stays as a second guard.
        s.refusedAheadAt = Long.MIN_VALUE;
        s.probeRefusedAt = Long.MIN_VALUE;
      } else if (!it.rebase().isEmpty() && (s.rebases || !s.answered)) {
        // Unanswered here only past a probe refused without a ring ahead (FENCED,
        // HANDING_OVER at the same epoch) or by a backup behind past PROBE_BEHIND_NANOS
        // (probeRefusedAt): sent as it is, with its rebases, never stripped: a backup
        // behind may install the ring before it gets there and apply it. It is refused
        // there as the probe was, nothing of it applied (its keys owed and fenced).
        rebases.put(txs.size(), it.rebase());
      } // else the backup answered without REBASES: older, main's behaviour there
      txs.add(it.tx());
      confirms.add(it.confirmed());
      bytes += itemBytes(it);
      if (!it.rebase().isEmpty()) {
        // The last item of its batch (ALTERNATIVE.md section 4): the next write of its keys
        // (a behind part's own apply, which this release may number at once) goes only
        // after this batch's answer, so a backup that crashes before answering has applied
        // no later write of them, and recover() may rebase from the intent to the key's
        // current versions.
        break;
      }
    }
    s.sending = true;
    long incarnation = s.incarnation;
    long wireIncarnation = s.wireIncarnation;
    // No item taken (one with rebases first, the stream unanswered): an empty probe batch
    // at the same place; the backup numbers nothing and answers with its bits.
    Request.Replicate rep = new Request.Replicate(epoch, membership.self().id(),
        wireIncarnation, first - s.wireBase, txs, prepares, true, pieces, rebases);
    // Always on another thread: replicate() can fail at once (a closed client, a frame
    // too large), and its callback would then run here, under the stream's lock, and
    // complete commits whose callbacks take the membership's lock, which an install holds
    // while it takes this one (a deadlock that stops every admission on the node).
    java.util.function.Consumer<Request.Replicate> seen = sentForTest;
    if (seen != null) {
      seen.accept(rep);
    }
    s.client.replicate(rep).whenCompleteAsync((ok, failed) -> {
      // The commits the backup refused as fenced (FencedWrites): nothing of them applied
      // there, the rest of the batch applied and the stream going on in its order. Each
      // fails like any write its backup did not confirm: its keys are owed to the backup,
      // whose repair (a put of the key's bytes, a whole write) is applied there and lifts
      // the fence, and its client hears UNAVAILABLE, not acknowledged (backupFailed).
      java.util.Set<Long> fencedThere = new java.util.HashSet<>();
      if (failed == null && ok != null) {
        java.util.Arrays.stream(ok.values()).forEach(fencedThere::add);
        // From each answer, not only set once (review 2, S4): a backup rolled back to an
        // older version answers 0, and is then sent no more pieces (it refuses the frame,
        // which failed the stream and what was queued on it at every repair pass).
        s.stagesPieces = (ok.version() & STAGES_PIECES) != 0;
        s.rebases = (ok.version() & REBASES) != 0;
      }
      for (int i = 0; i < confirms.size(); i++) {
        CompletableFuture<Void> c = confirms.get(i);
        if (failed != null) {
          c.completeExceptionally(unwrap(failed));
        } else if (fencedThere.contains((long) i)) {
          c.completeExceptionally(new TyrException(ErrorCode.UNAVAILABLE,
              "the backup refused this write: it lacks an "
              + "earlier write of a key it changes in part (the key is fenced there until "
              + "written whole; this node's repair puts it whole, so made again it may "
              + "succeed)"));
        } else {
          c.complete(null);
        }
      }
      List<Item> unsent = new ArrayList<>();
      boolean probeAgain = false;
      synchronized (s) {
        s.sending = false;
        if (failed == null && ok != null && s.incarnation == incarnation) {
          s.answered = true;
          s.behindSince = 0;
        } else if (failed != null && txs.isEmpty() && s.incarnation == incarnation
            && refusedWhole(unwrap(failed))) {
          // A refused probe (issue 13, bug 3; review of b3af1b1, MF1). The refusal's ring
          // says where the backup is. Behind the item's epoch: it may install that ring
          // before the item gets there and apply it, so the item stays held and the probe
          // goes again (after a pause, not in a loop on the refusal); stripped, its write
          // would move the behind shares' keys off their versions there, which then takes
          // those shares for applied. Ahead (or no ring: FENCED, HANDING_OVER at the same
          // epoch): the item goes as it is, with its rebases; it is refused there too,
          // nothing of it applied, and fenced there like any refused write. Failing it
          // unsent would leave the backup unfenced for its keys.
          Throwable why = unwrap(failed);
          long now = System.nanoTime();
          if (why instanceof WrongEpochException w && w.ring() != null
              && w.ring().epoch() < epoch && s.behindSince == 0) {
            s.behindSince = now;
          }
          if (why instanceof WrongEpochException w && w.ring() != null
              && w.ring().epoch() < epoch && now - s.behindSince < PROBE_BEHIND_NANOS) {
            probeAgain = true;
            s.sending = true; // nothing goes on this stream until the probe goes again
          } else {
            s.probeRefusedAt = epoch;
            s.behindSince = 0;
            if (why instanceof WrongEpochException w && w.ring() != null
                && w.ring().epoch() > epoch
                && w.ring().state(membership.self()) == Ring.State.UP) {
              s.refusedAheadAt = Math.max(s.refusedAheadAt, epoch); // see sendNext
            }
          }
        }
        if (failed != null && s.incarnation == incarnation
            && refusedWhole(unwrap(failed))
            && s.wireIncarnation == wireIncarnation) {
          // Refused (WRONG_EPOCH, HANDING_OVER): an answer, so nothing of the batch is
          // still to be applied there, and nothing of it was (refused at its check; or a
          // share, which travels alone, not held). Only this batch fails; what waits goes
          // on in its order. Failing it too lost writes applied and read here: an owner
          // handing over refuses a stand-in's share (Membership.checkReplicate), and once
          // the stand-in has the owner's ring it owes the failed writes' keys nothing
          // (QueuedBehindRefusedShareTest). FENCED too (review 2, N3): a fenced backup
          // refused the batch whole and applied nothing of it; renumbering failed the
          // writes behind it unsent and unfenced there (FencedShareBatchTest).
          s.skipRefused();
        } else if (failed != null && s.incarnation == incarnation) {
          // The backup may have applied part of it: number afresh, fail what waits.
          s.renumber();
          unsent.addAll(s.ready.values());
          s.ready.clear();
        }
        sendNext(s);
      }
      if (probeAgain) {
        // A pause for the ring to reach the backup (an install there, or its own probe).
        CompletableFuture.runAsync(() -> {
          synchronized (s) {
            s.sending = false;
            sendNext(s);
          }
        }, CompletableFuture.delayedExecutor(PROBE_AGAIN_MS,
            java.util.concurrent.TimeUnit.MILLISECONDS, COMPLETIONS));
      }
      // Failed outside the stream's lock: their callbacks release admissions (the
      // membership's lock), and an install holds that lock while it takes this one (a
      // taken-over share's hand-on, a stream restarted for a backup marked DOWN).
      for (Item it : unsent) {
        it.confirmed().completeExceptionally(new TyrException(ErrorCode.UNAVAILABLE,
            "the replication stream broke before this write was sent"));
      }
    }, COMPLETIONS);
  }

  /**
   * Whether {@code e} is a backup's answer that it refused a batch whole, having applied
   * nothing of it: another epoch, handing over, or a key it fenced ({@code FENCED}).
   */
  private static boolean refusedWhole(Throwable e) {
    return e instanceof WrongEpochException
        || (e instanceof TyrException t && t.code() == ErrorCode.FENCED);
  }

  /**
   * Whether an item ({@code prepares}: it carries a prepared share; {@code itemBytes}) joins
   * a batch of {@code batched} items ({@code batchPrepares}: one of them carries a share;
   * {@code bytes} in all) within {@code limit}. A prepared share goes in a batch of its
   * own: a backup handing over takes a stand-in's batch under the ring before only without
   * shares (Membership.checkReplicate) and refuses the batch whole otherwise, so a plain
   * write gathered with a share was refused with it, though applied and read on the
   * stand-in, and lost once the stand-in moved on. Alone, only the share is refused and
   * its transaction aborts.
   */
  static boolean joinsBatch(boolean prepares, long itemBytes, int batched,
      boolean batchPrepares, long bytes, long limit) {
    if (batched == 0) {
      return true; // one item alone fits, as it fit the client's frame
    }
    return !prepares && !batchPrepares && bytes + itemBytes <= limit;
  }

  /** About what an item takes in a frame: its writes and its prepared share, if any. */
  private static long itemBytes(Item it) {
    return dataBytes(it.tx()) + (it.prepare() == null ? 0 : dataBytes(it.prepare().tx()));
  }

  /** About what a transaction takes in a frame: its data, keys and each op's fields. */
  private static long dataBytes(TxRequest tx) {
    long n = 0;
    for (TxOp op : tx.ops()) {
      n += 3L * op.key().length() + 32;
      if (op instanceof TxOp.Put p) {
        n += p.data().remaining();
      } else if (op instanceof TxOp.Write w) {
        n += w.data().remaining();
      }
    }
    return n;
  }

  /**
   * What the client hears when a backup did not confirm a write the primary has applied:
   * always {@code UNAVAILABLE}, an outcome the client may not take as "nothing done". Not
   * the backup's own {@code WRONG_EPOCH} (a client takes that for a refusal made before
   * anything was done, and made a transaction again, whose check then failed on this
   * very write: a conflict reported for an applied transaction, {@code TyrBackupAheadTest}),
   * nor a {@link io.blobfs.tyr.api.NotSentException} (this node's link to the backup
   * failed, not the client's: the client would make the call again elsewhere). Typed, with
   * the version applied here, which a client's conditional second attempt checks.
   * A client that needs the backup's newer ring finds it by asking the members.
   */
  private static TyrException backupFailed(Throwable e, long appliedVersion) {
    String why = String.valueOf(e.getMessage()).replace(TyrException.NOT_CONNECTED,
        "(nothing was sent to the backup)");
    return new io.blobfs.tyr.api.BackupUnconfirmedException("the write was applied on the "
        + "primary but " + TyrException.BACKUP_UNCONFIRMED + " (version " + appliedVersion
        + " here), so it is not acknowledged (this node repairs the backup): " + why,
        appliedVersion, e);
  }

  private static List<String> keysOf(TxRequest tx) {
    List<String> keys = new ArrayList<>();
    tx.ops().forEach(op -> keys.add(op.key()));
    return keys;
  }

  /**
   * Makes {@code key}'s current state here a write again, on the replicated path, so that
   * {@code backup} (and any other backup of the key) gets it after every earlier write of
   * the key: a put of its bytes, or a delete if it is absent, under a check of the version
   * read, so that a write landing in between fails it (and the next pass reads again).
   * True once confirmed, or if the key needs it no more: this node is not its UP primary
   * (the new primary's copy rules, and this node catches up if it serves again), or
   * {@code backup} is not among its backups (it catches up from the primary before it
   * serves). Costs one version of the key on this node. The blob's bytes are read only if
   * {@code hold} lets it hold them (OwedKeys bounds what its repairs hold): false if not.
   */
  CompletableFuture<Boolean> repair(Member backup, String key,
      java.util.function.LongPredicate hold) {
    Ring ring = membership.ring();
    if (ring.state(membership.self()) != Ring.State.UP
        || !ring.primary(key).equals(membership.self())) {
      // Dropped without the backup's word: stop vouching before the owe goes, so that a
      // CONFIRM reading "nothing owed" (it reads the owes first, then the watermark)
      // answers NOT_HELD for this write (review 3, P1), also for a commit admitted under
      // the ring before and applied after the install raised the watermark.
      stopVouching();
      return CompletableFuture.completedFuture(true);
    }
    if (!ring.backups(key).contains(backup)) {
      return CompletableFuture.completedFuture(true); // DOWN: it catches up from us
    }
    TxRequest tx;
    try {
      io.blobfs.tyr.api.BlobStat stat = engine.stat(key);
      if (!stat.exists()) {
        tx = new TxRequest(List.of(new io.blobfs.tyr.api.ReadCheck(key, 0)),
            List.of(new TxOp.Delete(key, false)));
      } else if (stat.size() > maxFrameBytes - (1 << 20)) {
        // A put of it could not travel in one frame: sent, it would fail the stream and
        // every write queued on it, each pass. Repaired in pieces (review M4: before, it
        // stayed owed and fenced, and took no write in part, until written whole) if every
        // backup of it stages them; else it stays owed (a stat a pass), and the backup
        // keeps refusing plain reads of it until the key is written whole again or the
        // backup catches up (README, replication limits).
        int piece = pieceBytes(maxFrameBytes);
        if (piece == 0 || !stagePieces(ring, key) || !hold.test(piece)) {
          return CompletableFuture.completedFuture(false);
        }
        return repairPiece(key, stat.size(), stat.version(), 0, piece);
      } else if (!hold.test(stat.size())) {
        return CompletableFuture.completedFuture(false); // other repairs hold enough now
      } else {
        byte[] bytes = new byte[Math.toIntExact(stat.size())];
        io.blobfs.tyr.api.BlobStat read = engine.read(key, 0, ByteBuffer.wrap(bytes));
        if (read.version() != stat.version()) {
          return CompletableFuture.completedFuture(false); // written meanwhile: next pass
        }
        tx = new TxRequest(List.of(new io.blobfs.tyr.api.ReadCheck(key, read.version())),
            List.of(new TxOp.Put(key, ByteBuffer.wrap(bytes), false)));
      }
    } catch (java.io.IOException | RuntimeException e) {
      return CompletableFuture.failedFuture(e);
    }
    return commit(tx).thenApply(r -> true);
  }

  /**
   * The bytes of a repair's piece under frames of {@code maxFrameBytes}: at most 4 MiB and
   * half the frame's room past the 1 MiB kept for headers; 0 (no repair in pieces: the key
   * stays owed, as before review M4) if that is under {@link #MIN_PIECE_BYTES}. Review 2's
   * S5: a max-frame of 1m (the minimum is 4096 bytes) made pieces of 0 bytes, and the
   * repair committed empty writes for ever.
   */
  static int pieceBytes(int maxFrameBytes) {
    long piece = Math.min(PIECE_BYTES, (maxFrameBytes - (1L << 20)) / 2);
    return piece < MIN_PIECE_BYTES ? 0 : (int) piece;
  }

  /** The smallest piece a repair in pieces is made of (see {@link #pieceBytes}). */
  static final int MIN_PIECE_BYTES = 64 << 10;

  /** Whether every backup of {@code key} under {@code ring} said it stages pieces. */
  private synchronized boolean stagePieces(Ring ring, String key) {
    for (Member b : ring.backups(key)) {
      Stream s = streams.get(b);
      if (s == null || !s.stagesPieces) {
        return false;
      }
    }
    return true;
  }

  /**
   * The piece of {@code key} at {@code offset} (of {@code size} bytes in all, at most
   * {@code piece}), then the next ones: each a commit of [ReadCheck(version), Write of the
   * same bytes] here, so a write landing between two pieces fails the next one and the
   * repair is made again from the first at a later pass (the key's version moves on with
   * each piece: one version per piece here). Each travels on the replicated path marked
   * as a piece (Replicate.pieces): the backup stages them, and at the last applies the
   * whole as one put in the stream's order, which lifts its fence. One piece is held at a
   * time (the next is read once the last is confirmed).
   */
  private CompletableFuture<Boolean> repairPiece(String key, long size, long version,
      long offset, int piece) {
    int n = (int) Math.min(piece, size - offset);
    boolean last = offset + n == size;
    TxRequest tx;
    try {
      ByteBuffer bytes = ByteBuffer.allocate(n);
      io.blobfs.tyr.api.BlobStat read = engine.read(key, offset, bytes);
      if (read.version() != version || bytes.hasRemaining()) {
        return CompletableFuture.completedFuture(false); // written meanwhile: next pass
      }
      tx = new TxRequest(List.of(new io.blobfs.tyr.api.ReadCheck(key, version)),
          List.of(new TxOp.Write(key, offset, bytes.flip())));
    } catch (java.io.IOException | RuntimeException e) {
      return CompletableFuture.failedFuture(e);
    }
    int kind = offset == 0 ? Request.Replicate.PIECE_FIRST
        : last ? Request.Replicate.PIECE_LAST : Request.Replicate.PIECE_NEXT;
    Ring ring = membership.admit();
    CompletableFuture<CommitResult> done;
    try {
      done = commit(tx, engine::commit, ring, kind);
    } catch (RuntimeException e) {
      membership.release(ring);
      throw e;
    }
    return done.whenComplete((x, e) -> membership.release(ring))
        .thenCompose(r -> last ? CompletableFuture.completedFuture(true)
            : repairPiece(key, size, r.version(), offset + n, piece));
  }

  /**
   * A client's question (Request.Confirm, session 14, review 2's N1): is the write of
   * {@code key} that this primary applied unconfirmed at {@code version} held by every
   * backup now? Before, the client made such a write again, and each try was a write of the
   * key, which voids a repair in pieces under way (a write between two pieces fails the
   * next piece's check, and the backup drops its staging): a key too large for one frame
   * was never repaired while its writer tried, and the write failed at its op timeout.
   * Asking writes nothing, so it voids nothing.
   *
   * <p>Answers, as a commit's reply (the key's version here, one value):
   * {@code NOT_HELD} if the key is not at {@code version} or later here (deleted, or a
   * restart lost it), or {@code version} is at or below {@link #vouchFrom}: applied before
   * this node started (what was owed of it was lost with the process), or before a ring
   * took keys from this node or left it not UP (review 3, P1: its owes were then dropped
   * as not needed, and a catch-up may since have put older bytes at a newer version): the
   * client makes its write again as before, only if the key still holds its bytes;
   * {@code REPAIRING} while
   * a backup owes the key (OwedKeys: the failure that made the write unconfirmed owes it
   * before the client hears it, and only a repair confirmed after the last failure clears
   * it; the repair, which reads the key after that failure, holds our write or what later
   * writes made of it), made due now if it waits; else {@code CONFIRMED}: every backup
   * confirmed the key's state at {@code version} or later, by the stream or by a repair
   * (or left the key's write set, DOWN, and catches up before it serves, as for any write
   * acknowledged while a backup is down). The membership checked that this node is the
   * key's UP primary under the client's ring.
   *
   * <p>What {@code CONFIRMED} proves: this node has been the key's UP primary without a
   * break since {@code version} was applied, and every backup it had meanwhile confirmed
   * a state of the key at {@code version} or later read here after the write (or was
   * DOWN). What it does not prove: that the key's bytes still hold this write (a later
   * write may have overwritten it; the version is this node's commit number, not the
   * write's identity), nor anything of a backup that a later ring adds.
   */
  CommitResult confirm(String key, long version) throws java.io.IOException {
    io.blobfs.tyr.api.BlobStat stat = engine.stat(key);
    if (!stat.exists() || stat.version() < version) {
      return new CommitResult(stat.version(), new long[] {Request.Confirm.NOT_HELD});
    }
    boolean owed = owedKeys.owes(key, true);
    // The watermark is read after the owes: an owe dropped without the backup's word
    // (a role loss) raised it before it went, so "not owed" here is seen with it
    // (review 3, P1; and a restart: the owes of the process before were lost with it).
    if (version <= vouchFrom.get()) {
      return new CommitResult(stat.version(), new long[] {Request.Confirm.NOT_HELD});
    }
    return new CommitResult(stat.version(),
        new long[] {owed ? Request.Confirm.REPAIRING : Request.Confirm.CONFIRMED});
  }

  /** {@link #repair(Member, String, java.util.function.LongPredicate)}, unbounded (tests). */
  CompletableFuture<Boolean> repair(Member backup, String key) {
    return repair(backup, key, bytes -> true);
  }

  /** The keys owed to {@code backup}: written here, not yet confirmed there (tests). */
  List<String> owedTo(Member backup) {
    return owedKeys.owedTo(backup);
  }

  private Stream stream(Member backup) {
    return streams.computeIfAbsent(backup, b -> new Stream(new TyrClient(
        peers.client(b).withTimeouts(Duration.ofSeconds(10), TIMEOUT).withConnections(1)
            .withMaxFrameBytes(maxFrameBytes))));
  }

  /**
   * Ops {@code which} of {@code tx} as the bytes they wrote on the primary: what a backup
   * applies, with nothing left to decide.
   */
  static TxRequest physical(TxRequest tx, CommitResult result, List<Integer> which) {
    List<TxOp> ops = new ArrayList<>(which.size());
    for (int i : which) {
      TxOp op = tx.ops().get(i);
      long value = result.values()[i];
      if (op instanceof TxOp.Create c) {
        ops.add(new TxOp.Put(c.key(), ByteBuffer.allocate(0), false));
      } else if (op instanceof TxOp.Put p) {
        ops.add(new TxOp.Put(p.key(), p.data(), false));
      } else if (op instanceof TxOp.Append a) {
        ops.add(new TxOp.Write(a.key(), value, a.data()));
      } else if (op instanceof TxOp.Add a) {
        ops.add(new TxOp.Write(a.key(), a.offset(), ByteBuffer.allocate(8).putLong(0, value)));
      } else if (op instanceof TxOp.Cas c) {
        ops.add(new TxOp.Write(c.key(), c.offset(),
            ByteBuffer.allocate(8).putLong(0, c.update())));
      } else if (op instanceof TxOp.Delete d) {
        ops.add(new TxOp.Delete(d.key(), false));
      } else {
        ops.add(op); // write at an offset, truncate: already physical
      }
    }
    return new TxRequest(List.of(), ops);
  }

  // ------------------------------------------------------------------ backup

  /**
   * A batch of a primary's numbered writes: handed to the engine in their order (the
   * engine's commit call fixes it), answered once all are applied. A batch that does not
   * follow the last one applied from that primary is refused: the primary then numbers
   * afresh.
   */
  CompletableFuture<Object> apply(Request.Replicate rep) {
    List<CompletableFuture<CommitResult>> applied = new ArrayList<>();
    List<Rebase> rebased = new ArrayList<>();
    List<Long> piecesRefused = new ArrayList<>();
    TyrException refusal = null;
    FencedWrites fenced = new FencedWrites(refusedKeys);
    synchronized (this) {
      Incoming in = incoming.get(rep.source());
      if (in == null) {
        // Nothing of this primary since we started: we restarted while its stream went
        // on. Every batch it sent before was answered (a refused one moves the stream to
        // a new wire incarnation from 1, a failed one renumbers it), so we follow the
        // stream from here rather than refuse it, which would fail a write for nothing.
        in = new Incoming(rep.incarnation());
        in.expected = rep.firstSeq();
        incoming.put(rep.source(), in);
      } else if (in.incarnation != rep.incarnation()) {
        in = new Incoming(rep.incarnation());
        incoming.put(rep.source(), in);
      }
      if (rep.firstSeq() != in.expected) {
        refusal = new TyrException(ErrorCode.BAD_REQUEST, "replication from " + rep.source()
            + " resumes at " + rep.firstSeq() + ", expected " + in.expected);
      }
      List<TxRequest> txs = refusal == null ? rep.txs() : List.of();
      // A primary that does not read the answer's list gets the batch refused whole
      // (below), decided before anything of it is applied; on a probe, so that the
      // in-order decisions below start from the fences as they were before the batch.
      // A batch with a prepared share is decided so too (review 2, S7): on the wire it
      // cannot say it reads the list (Request.Replicate), and a share refused in part of
      // a batch would have to be left unheld while the batch is answered; refused whole,
      // its prepare fails and nothing of its batch (which holds only it) is applied.
      boolean whole = !rep.readsRefusals() || !rep.prepares().isEmpty();
      FencedWrites probe = new FencedWrites(refusedKeys);
      for (int t = 0; t < txs.size() && whole; t++) {
        Request.Prepare share = rep.prepares().get(t);
        // A repair's piece is not checked: it is staged, not applied (and only a primary
        // that reads the list sends pieces).
        if (!rep.pieces().containsKey(t)) {
          probe.refuses(t, txs.get(t));
        }
        if (share != null) {
          probe.refusesShare(t, share.tx());
        }
      }
      if (probe.any()) {
        // The primary (older than session 13, or a batch with a share, which cannot say
        // it reads the list: Request.Replicate) would take a commit refused in part of
        // the batch for confirmed, and a write it acknowledged would be missing here
        // (review M2). Refused whole: nothing of it applied, every key of it fenced
        // (recorded below), and every primary version fails the batch's commits
        // unconfirmed and owes their keys. Typed FENCED, not UNAVAILABLE (review 2, N3):
        // this version's primary takes it for an answer (as WRONG_EPOCH) and fails this
        // batch alone, the writes queued behind it going on under a new wire incarnation
        // (skipRefused). As UNAVAILABLE it renumbered the stream and failed those writes
        // unsent: never acknowledged, but their keys not fenced here either, so a later
        // write in part of one of them was applied on a copy that lacks the dropped write,
        // and a promotion before its repair served the skip state. A primary older than
        // session 14 reads FENCED as SERVER_ERROR and still renumbers (README).
        refusal = new TyrException(ErrorCode.FENCED, "node " + membership.self()
            + " refused a batch from " + rep.source() + " whole: it changes in part a key "
            + "whose earlier write this node refused (fenced until it is written whole)"
            + (rep.prepares().isEmpty() ? ", and its primary does not read a refusal of "
                + "part of a batch" : ": a prepared share is not held"));
        txs = List.of();
      }
      for (int t = 0; t < txs.size(); t++) {
        TxRequest tx = txs.get(t);
        in.expected++;
        Integer piece = rep.pieces().get(t);
        if (piece == null) {
          for (TxOp op : staged.isEmpty() ? List.<TxOp>of() : tx.ops()) {
            Staged st = staged.remove(op.key()); // written between two pieces: void
            if (st != null) {
              st.drop();
            }
          }
        } else {
          try {
            tx = stage(rep.source(), piece, tx);
          } catch (java.io.IOException | RuntimeException e) {
            piecesRefused.add((long) t); // not confirmed: the key stays owed and fenced
            continue;
          }
          if (tx == null) {
            continue; // staged; nothing applied yet
          }
        }
        // Decided here, in the batch's order, not before the loop (review 2, N2): the last
        // piece, staged in full, is applied as a put that replaces its key whole, so the
        // commits after it in this batch must meet the key unfenced, as they meet it on
        // the primary (a write batched right after the last piece was refused, the key
        // fenced again and repaired again from the first piece). A last piece whose
        // staging failed is not applied (above) and leaves the key fenced.
        if (fenced.refuses(t, tx)) {
          continue; // nothing of it applied; its number is taken, the stream goes on
        }
        if (!tx.ops().isEmpty()) {
          // Only a write that replaces a key whole lifts its fence (RefusedKeys).
          List<String> keys = new ArrayList<>(RefusedKeys.replacedWhole(tx));
          long[] stamps = keys.stream().mapToLong(refusedKeys::stamp).toArray();
          Map<String, List<String>> parts = piece == null ? rep.rebases().get(t) : null;
          ShareRebases rebases = shareRebases;
          Rebase rebase = parts == null || rebases == null ? null : rebases.rebase(parts);
          if (rebase != null) {
            try {
              // Forced before the commit (an fsync under this monitor: only items with
              // rebases, after takeovers, rare): a crash after the write's log and before
              // the records' rewrite leaves it for recover() to finish the rebase.
              rebase.intent();
            } catch (java.io.IOException | RuntimeException e) {
              // Not applied (nothing of it logged) and not confirmed: the key stays owed,
              // and fenced here as any write refused in part of a batch.
              fenced.refuse(t, tx);
              continue;
            }
            rebased.add(rebase);
          }
          Runnable seam = inRebaseForTest;
          Runnable hook = rebase == null || seam == null ? rebase : () -> {
            seam.run();
            rebase.run();
          };
          // With a rebase, the shares held behind the writing part move to the versions
          // this write gives their keys in the same commit-lock hold (the hook), so no
          // judge sees the write without the rebase (which reads it as their apply). Not
          // run if the commit is refused: a refused item's rebase is not applied (a later
          // write of its keys that this node applies moves every share ahead of it).
          applied.add(engine.commit(tx, hook).whenComplete((x, e) -> {
            if (e == null) {
              for (int i = 0; i < keys.size(); i++) {
                refusedKeys.applied(keys.get(i), stamps[i]);
              }
            }
          }));
        }
      }
    }
    if (refusal != null) {
      // Recorded only now, out of this object's lock: refused() takes the membership's
      // lock, and an install holds that one while it takes ours (restartStreamsToDown, a
      // takeover's hand-on), so taking it in here could deadlock. Nothing is lost by the
      // delay: the primary sends the next batch only once it has this answer, sent after
      // the refusal is recorded, and refused() reads the ring in force when it runs.
      refused(rep);
      return CompletableFuture.failedFuture(refusal);
    }
    // The keys of the commits refused as fenced, recorded as a refusal is: out of this
    // object's lock (refused() takes the membership's), before the answer, so the
    // primary's next batch (sent once it has the answer) meets the fence.
    fenced.record(this::refused);
    long[] refusedHere = java.util.stream.LongStream.concat(
        java.util.Arrays.stream(fenced.refusedIndexes()),
        piecesRefused.stream().mapToLong(Long::longValue)).sorted().toArray();
    CompletableFuture<Void> writes = CompletableFuture.allOf(
        applied.toArray(new CompletableFuture<?>[0]));
    if (!rebased.isEmpty()) {
      // The rebased shares' records written again before the answer, after the log is
      // forced (a record must not say a version its write could still lose in a crash:
      // the share would then read as applied). A rebase whose write failed is rewritten
      // as it is (its hook did not run: nothing to write, or its versions unchanged).
      writes = writes.handle((x, e) -> {
        try {
          Runnable seam = beforeRewriteForTest;
          if (seam != null) {
            seam.run();
          }
          engine.force();
          for (Rebase r : rebased) {
            r.rewrite();
          }
        } catch (java.io.IOException | RuntimeException err) {
          // Issue 13, bug 3 (review of b3af1b1, MF2): the intent stays on disk, and
          // recover() reads it at the next restart as the last, unanswered batch's, moving
          // its shares to their keys' versions then. A later write of those keys applied
          // before that restart (a share's own apply, a repair) would be taken into those
          // versions and the share read as applied. So the store fails here, as LogSyncer
          // fails it on a log error: nothing applies until the restart that consumes the
          // intent (this batch's answer is an error: the primary renumbers the stream).
          engine.fail(err);
          throw new CompletionException(err);
        }
        if (e != null) {
          throw e instanceof CompletionException c ? c : new CompletionException(e);
        }
        return null;
      });
    }
    if (rep.prepares().isEmpty()) {
      long bits = answers;
      return writes.thenApply(x -> new CommitResult(bits, refusedHere));
    }
    // Held once every write before them is applied here, so that the versions each
    // records are the ones its keys have at its place in the primary's order (its own
    // apply comes in a later batch: the primary applies it only after this answer).
    // A share refused as fenced (FencedWrites.refusesShare) never gets here: its batch
    // is refused whole (above), and its primary fails the prepare.
    return writes.thenApply(x -> {
      PreparedSink sink = preparedSink;
      for (Request.Prepare p : new java.util.TreeMap<>(rep.prepares()).values()) {
        try {
          if (sink == null) {
            throw new TyrException(ErrorCode.BAD_REQUEST, "this node holds no prepared parts");
          }
          sink.hold(rep.source(), rep.epoch(), p);
        } catch (java.io.IOException e) {
          throw new CompletionException(e);
        }
      }
      return new CommitResult(answers, refusedHere);
    });
  }

  /**
   * As backup, under this object's lock: piece {@code kind} of a repair in pieces from
   * {@code source}, {@code tx} its one write at an offset, staged in a file; null, or at
   * the last piece the whole key staged as one put, applied in the batch's order in its
   * place (it lifts the key's fence as any whole write does). Staged, not applied: if the
   * primary is lost midway, this node's copy is the one before the repair (it lacks only
   * unacknowledged writes), never a mix of old bytes and pieces. Fails if the pieces do
   * not follow one another from the first (a piece lost with a broken stream, a write of
   * the key between two: those void the staging) or the key is over 2 GiB (one mapped
   * buffer): the piece is then refused, and the primary repairs the key again later.
   */
  private TxRequest stage(String source, int kind, TxRequest tx) throws java.io.IOException {
    if (tx.ops().size() != 1 || !(tx.ops().get(0) instanceof TxOp.Write w)) {
      throw new java.io.IOException("a repair's piece is one write at an offset: " + tx);
    }
    String key = w.key();
    if (kind == Request.Replicate.PIECE_FIRST) {
      Staged old = staged.remove(key);
      if (old != null) {
        old.drop();
      }
      staged.put(key, new Staged(source, stagingDir));
    }
    Staged st = staged.get(key);
    if (st == null || !st.source.equals(source) || st.length != w.offset()) {
      if (st != null) {
        staged.remove(key).drop();
      }
      throw new java.io.IOException("a repair's piece of '" + key + "' at " + w.offset()
          + " does not follow the pieces staged here");
    }
    try {
      ByteBuffer data = w.data().duplicate();
      while (data.hasRemaining()) {
        st.length += st.channel.write(data, st.length);
      }
      if (kind != Request.Replicate.PIECE_LAST) {
        return null;
      }
      staged.remove(key);
      // Mapped, the bytes stay readable once the file is closed and deleted.
      ByteBuffer whole = st.channel.map(java.nio.channels.FileChannel.MapMode.READ_ONLY, 0,
          st.length);
      st.drop();
      return new TxRequest(List.of(), List.of(new TxOp.Put(key, whole, false)));
    } catch (java.io.IOException | RuntimeException e) {
      staged.remove(key, st);
      st.drop();
      throw e;
    }
  }

  /** As backup: {@code rep} is refused here, its writes applied on its primary only. */
  void refused(Request.Replicate rep) {
    refused(rep.txs());
  }

  /** As backup: {@code txs} are refused here, their writes applied on their primary only. */
  private void refused(List<TxRequest> txs) {
    if (txs.isEmpty()) {
      return;
    }
    // Under the install's lock: a ring that makes this node a key's primary drops the
    // key's fence (restartStreamsToDown), so the refusal must not be recorded after it
    // under the ring before.
    membership.withRing(ring -> refusedKeys.refused(txs,
        key -> ring.state(membership.self()) == Ring.State.UP
            && ring.primary(key).equals(membership.self())));
  }

  /**
   * As backup: why a plain read of {@code key} (bytes, stat or local grant) is not served
   * here, or null: a write of it that its primary applied was refused here and nothing
   * has replaced it since, so this copy may be older than what readers saw from the
   * primary (unless this node is the key's primary now: then its copy is the key's).
   */
  TyrException staleHere(String key) {
    if (!refusedKeys.lacks(key) || membership.ring().primary(key).equals(membership.self())) {
      return null;
    }
    return new TyrException(ErrorCode.UNAVAILABLE, "node " + membership.self() + " refused "
        + "a write of '" + key + "' that its primary applied, and has not had it since: "
        + "read it from another replica");
  }

  private static Throwable unwrap(Throwable e) {
    while (e instanceof CompletionException && e.getCause() != null) {
      e = e.getCause();
    }
    return e;
  }

  @Override
  public void close() {
    owedKeys.close();
    List<Stream> open;
    synchronized (this) {
      open = new ArrayList<>(streams.values());
      streams.clear();
    }
    // Outside the lock: closing fails pending sends, whose callbacks take it (restart).
    for (Stream s : open) {
      s.client.close();
    }
  }
}
