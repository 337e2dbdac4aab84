package io.blobfs.tyr.server;

import io.blobfs.tyr.api.CommitResult;
import io.blobfs.tyr.api.ErrorCode;
import io.blobfs.tyr.api.TxRequest;
import io.blobfs.tyr.api.TyrException;
import io.blobfs.tyr.client.TyrClient;
import io.blobfs.tyr.engine.SyncPolicy;
import io.blobfs.tyr.engine.TyrEngine;
import io.blobfs.tyr.protocol.Request;
import io.blobfs.tyr.protocol.TxDecision;
import io.blobfs.tyr.ring.Member;
import java.io.Closeable;
import java.io.IOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A cluster node's side of cross-node transactions: two-phase commit, driven by the
 * client, with the decision recorded in one place (Percolator's "primary").
 *
 * <ol>
 *   <li><b>Prepare</b> ({@link #prepare}): the client sends each participant (the primary
 *       of some of the transaction's keys) its part. The participant validates it as a
 *       commit would and reserves its keys in the engine (a commit that meets them gets a
 *       retryable CONFLICT until the decision), forces its log, and writes the part to a
 *       durable record ({@link TxRecords}) before it answers.
 *   <li><b>Decision</b>: if every participant prepared, the client asks the coordinator
 *       (the participant of the transaction's first key in key order) to decide commit;
 *       otherwise, abort. The coordinator records the decision durably, the first one
 *       taken standing, then applies its own part; the decision is the transaction's
 *       outcome from that moment.
 *   <li><b>Apply</b>: the client tells the other participants the decision; each applies
 *       its part under its own commit numbers (through the {@link Replicator} with
 *       R &gt; 1, so the backups get the effect before the answer) or drops it.
 * </ol>
 *
 * <p><b>Recovery.</b> A part prepared for longer than the timeout is resolved by its
 * participant: one that is not the coordinator asks the coordinator ({@code QUERY}); the
 * coordinator answers with its decision, or, if it has none and its own part is past the
 * timeout or it never prepared the transaction, decides abort then (the client is gone;
 * the recorded abort also refuses a prepare that arrives late). The coordinator resolves
 * its own part the same way. At restart a node reads its prepared records back: a part
 * with a key off the version it recorded (a deleted key reads 0) was applied before the
 * crash (only its transaction could change them) and is forgotten; every other part is
 * reserved again and resolved as above, at once rather than after a timeout. Nothing is
 * applied until the decision is commit, and then every part is; a point read may see
 * the parts applied so far until the last one is.
 *
 * <p>While the coordinator cannot be reached, a participant keeps its part prepared and
 * its keys reserved (the blocking of two-phase commit): it cannot know the decision.
 * Decisions are kept, as small files, for participants that ask late.
 */
final class Transactions implements Closeable {
  private static final Logger LOG = LoggerFactory.getLogger(Transactions.class);

  private final TyrEngine engine;
  private final Membership membership;
  private final Replicator replicator;
  private final TxRecords records;
  private final PeerAccess peerAccess;
  private final int maxFrameBytes;
  /**
   * The parts prepared here, by local name: the transaction id for this node's own part,
   * the id and a suffix for a share taken over from a lost primary. Guarded by
   * {@code this}.
   */
  private final Map<String, Part> parts = new HashMap<>();
  /** Shares of other nodes' prepared parts held here as backup, by local name. */
  /**
   * The shares held here as a backup, by local name. Changed under this object's monitor
   * only; concurrent so that a replicated write's commit hook (under the engine's commit
   * lock, which must take no monitor) finds the shares it rebases (issue 13, bug 3).
   */
  private final Map<String, Replica> replicas = new java.util.concurrent.ConcurrentHashMap<>();
  /**
   * The next part's or share's place ({@link Part#seq}, {@link Replica#seq}), under this
   * object's monitor; recorded with each, and restarted past the highest recorded.
   */
  private long nextSeq;
  /** How many times a share held here was asked about (for tests). Guarded by this. */
  private long replicaAsks;
  /** Applies of decided parts that failed and wait to be tried again. Guarded by this. */
  private long retries;
  /**
   * The transactions whose part was dropped here for a ring that gave its keys to another
   * node (the newest few thousand): an APPLY_COMMIT of one is answered UNAVAILABLE (the
   * new primary applies it when it resolves it), never "committed" as if applied here.
   */
  private final java.util.Set<String> handedOver = java.util.Collections.newSetFromMap(
      new java.util.LinkedHashMap<>() {
        @Override
        protected boolean removeEldestEntry(Map.Entry<String, Boolean> eldest) {
          return size() > 4096;
        }
      });
  private final Map<Member, TyrClient> peers = new HashMap<>();
  private final ScheduledExecutorService resolver;

  /** A share of another node's prepared part, held as its backup (not reserved here). */
  private static final class Replica {
    final Request.Prepare request;
    /**
     * This node's versions of its keys at its place in the primary's order. Volatile, an
     * immutable map: a replicated write of a part held ahead of this one on the primary
     * sets the keys it writes to the versions it gives them, in its commit hook under the
     * engine's commit lock (issue 13, bug 3: a rebase), so judges read it under that lock.
     */
    volatile Map<String, Long> versions;
    /** When it was held, or last asked about: asked again a timeout later at the soonest. */
    long since;
    boolean asking;
    /**
     * Its place in the order this node held shares in, which for the shares of one key is
     * their primary's prepare order (one stream, and a key is prepared there by one part at
     * a time): shares of one key taken over are reserved, and so applied, in this order.
     */
    final long seq;

    Replica(Request.Prepare request, Map<String, Long> versions, long since, long seq) {
      this.request = request;
      this.versions = Map.copyOf(versions);
      this.since = since;
      this.seq = seq;
    }
  }

  /** A prepared part. {@code applying} once its decision is being applied. */
  private static final class Part {
    /** Its key in {@link #parts} and its reservations' name in the engine. */
    String localId;
    final Request.Prepare request;
    final long since;
    /** Read back from its record at restart (it may have been applied before the crash). */
    final boolean recovered;
    /**
     * Its place in the order this node prepared or took over parts in (a share taken over
     * keeps the share's): recorded, so that a restart reserves its parts' keys in it.
     */
    long seq;
    /**
     * Its record's versions are {@link TxRecords#UNKNOWN_VERSION}s (reserved behind another
     * part of a key): rewritten with its keys' versions at its turn, before it applies.
     */
    boolean behind;
    CompletableFuture<Integer> applying;
    boolean asking;
    /** After a failed apply: the resolver tries again no sooner (System.nanoTime). */
    long retryAt;
    /** Whether {@link #retryAt} is set (nanoTime may be negative: no "unset" value). */
    boolean retrying;
    /** The pause after the next failed apply; doubles up to {@link #MAX_RETRY_NANOS}. */
    long retryNanos;
    /**
     * The epoch it is counted as held under in {@link Membership} (its parts) until it is applied,
     * aborted or dropped ({@link #uncount}); null once no longer counted. Guarded by
     * {@code this}.
     */
    Long counted;
    /** The local apply's result, once applied here (a whole commit answers with it). */
    CompletableFuture<CommitResult> result = new CompletableFuture<>();
    /**
     * Narrowed at a give-back (on the part replaced and on its replacement): its apply
     * here is not the whole commit's, whose given-back ops their new primary applies.
     */
    volatile boolean narrowed;

    Part(Request.Prepare request, long since, boolean recovered) {
      this.localId = request.txId();
      this.request = request;
      this.since = since;
      this.recovered = recovered;
    }
  }

  /** The longest pause between two attempts to apply a decided part that failed. */
  private static final long MAX_RETRY_NANOS = TimeUnit.SECONDS.toNanos(30);
  /** The first pause after a failed apply, if set (tests); else from the timeout. */
  private volatile long firstRetryNanos;

  Transactions(TyrEngine engine, Membership membership, Replicator replicator,
      PeerAccess peerAccess, int maxFrameBytes) throws IOException {
    this.engine = engine;
    this.membership = membership;
    this.replicator = replicator;
    this.peerAccess = peerAccess;
    this.maxFrameBytes = maxFrameBytes;
    this.records = new TxRecords(engine.config().directory());
    recover();
    if (replicator != null) {
      replicator.onPrepared(this::holdReplica);
      replicator.onRebase(this::rebase);
      replicator.onSplitOwners(this::commitWhole);
    }
    // Synchronously, under the install: a share is reserved before any commit is admitted
    // under the ring that makes this node its primary (admission takes the same lock).
    membership.onInstall(this::follow);
    membership.onHandedOver(this::follow); // the takeovers a hand-over put off (follow)
    long every = Math.max(50, membership.txTimeout().toMillis() / 4);
    this.resolver = Executors.newSingleThreadScheduledExecutor(r -> {
      Thread t = new Thread(r, "tyr-tx-resolver");
      t.setDaemon(true);
      return t;
    });
    // Back under a ring where another node serves its keys (it was marked DOWN): its parts
    // are dropped and its shares taken over as that ring says.
    membership.withRing(this::follow);
    resolver.scheduleWithFixedDelay(this::resolveExpired, every, every, TimeUnit.MILLISECONDS);
  }

  private String self() {
    return membership.self().id();
  }

  // ------------------------------------------------------------------ prepare

  CompletableFuture<Object> prepare(Request.Prepare p) throws IOException {
    String id = p.txId();
    if (!TxRecords.ID.matcher(id).matches()) {
      throw new TyrException(ErrorCode.BAD_REQUEST, "bad transaction id " + id);
    }
    if (id.contains(SHARE_MARK)) {
      // Refused at admission, before anything is held (review 1 of the rebase, should-fix):
      // a share taken over is named txId + SHARE_MARK + hash, and txIdOf reads a name up
      // to its first SHARE_MARK. An id holding one was admitted (the wire takes any id
      // TxRecords.ID matches; our clients send UUIDs, which never hold it), and then a
      // primary's rebases named the wrong transaction for its shares, so a backup
      // rebased none of them: issue 13's bug 3 for that transaction.
      throw new TyrException(ErrorCode.BAD_REQUEST, "bad transaction id " + id + ": it must "
          + "not hold \"" + SHARE_MARK + "\" (this node names a share taken over "
          + "txId" + SHARE_MARK + "<hash>); a UUID never does");
    }
    if (!p.participants().contains(self()) || !p.participants().contains(p.coordinator())) {
      throw new TyrException(ErrorCode.BAD_REQUEST, "transaction " + id + ": participants "
          + p.participants() + " must hold this node, " + self() + ", and the coordinator");
    }
    // Admitted as a commit is: a ring installed since the request's check has run its
    // takeovers (under the install, which admission waits for), so a share taken over
    // here is reserved before this prepare meets its keys; and the ring it is admitted
    // under must still make this node their UP primary. Taken before this object's
    // monitor: an install's listener holds the membership's lock, then takes this one.
    // The admission goes on as the part's, counted as held until it is resolved (see
    // follow): a node coming back to its keys cannot catch up past it.
    io.blobfs.tyr.ring.Ring admitted = membership.admit();
    if (!primaryOfAll(admitted, p.tx())) {
      membership.release(admitted);
      throw new io.blobfs.tyr.ring.WrongEpochException("node " + self() + " is not the UP "
          + "primary of every key of transaction " + id + "'s part under ring epoch "
          + admitted.epoch() + ", admitted after the request's check", admitted);
    }
    // Counted as a held part from here (Membership.held), before the part exists, so a
    // resolver's uncount never meets a count not yet moved.
    membership.held(admitted);
    boolean kept = false;
    try {
      prepareHere(p, admitted.epoch());
      kept = true;
    } finally {
      if (!kept) {
        membership.release(admitted.epoch());
      }
    }
    CommitResult prepared = new CommitResult(0, new long[0]);
    if (replicator == null) {
      return CompletableFuture.completedFuture(prepared);
    }
    // Acknowledged only once the key's backups hold it, like a write: the part must
    // survive this node's loss after the decision (the backup that takes over applies it).
    return replicator.replicatePrepare(p).handle((x, err) -> {
      if (err == null) {
        return prepared;
      }
      // Not acknowledged: the client aborts, so the part is dropped (unless the decision
      // already reached it: then it is being applied and stays).
      boolean drop;
      synchronized (this) {
        Part own = parts.get(id);
        drop = own != null && own.applying == null;
        if (drop) {
          own.applying = CompletableFuture.completedFuture(TxDecision.ABORTED);
        }
      }
      if (drop) {
        engine.releasePrepared(id);
        forget(id);
      }
      Throwable cause = err instanceof java.util.concurrent.CompletionException
          && err.getCause() != null ? err.getCause() : err;
      throw new java.util.concurrent.CompletionException(cause);
    });
  }

  /**
   * Validates, reserves and records the part here (see {@link #prepare}); the part keeps
   * the admission under {@code epoch}.
   */
  private void prepareHere(Request.Prepare p, long epoch) throws IOException {
    String id = p.txId();
    // One at a time with decisions, so that a coordinator's presumed abort (QUERY of a
    // transaction it never prepared) and a late prepare of it cannot cross.
    synchronized (this) {
      if (parts.containsKey(id) || (p.coordinator().equals(self())
          && records.decision(id) != null)) {
        throw new TyrException(ErrorCode.CONFLICT, "transaction " + id
            + " is already prepared or decided here; retry it under a new id");
      }
      Map<String, Long> versions = engine.prepare(id, p.tx());
      long seq = nextSeq++;
      try {
        // What the prepare validated against is on disk before its record, whatever the
        // sync policy: recovery compares the keys' versions with the record's, and a
        // record resting on commits a power loss took would read as applied.
        engine.force();
        byte[] record = TxRecords.encode(p, versions, seq);
        records.writePrepared(id, record);
        // The copy kept until the decision: heap bytes, not the request frame's buffers.
        Part part = new Part(TxRecords.decode(record).request(), System.nanoTime(), false);
        part.seq = seq;
        part.counted = epoch;
        parts.put(id, part);
      } catch (IOException | RuntimeException e) {
        engine.releasePrepared(id);
        throw e instanceof TyrException t ? t : new TyrException(ErrorCode.SERVER_ERROR,
            "transaction " + id + " could not be prepared durably: " + e, e);
      }
    }
  }

  // ------------------------------------------------------------------ whole commits

  /** Threads taking whole commits' decisions (each forces a record) at most at once. */
  static final int DECISION_THREADS = 4;

  /**
   * Takes a whole commit's decision off the replication stream's completion thread: this
   * server's own few threads (a decision forces a record, so more threads than disks
   * would only queue in the kernel), idle ones ended, shut down with the server. A
   * decision handed in after the close runs on the thread that hands it in, so that its
   * client still hears an answer (the engine, closed, refuses it).
   */
  private final java.util.concurrent.ThreadPoolExecutor decisions = decisionPool();

  private static java.util.concurrent.ThreadPoolExecutor decisionPool() {
    java.util.concurrent.ThreadPoolExecutor pool = new java.util.concurrent.ThreadPoolExecutor(
        DECISION_THREADS, DECISION_THREADS, 30, TimeUnit.SECONDS,
        new java.util.concurrent.LinkedBlockingQueue<>(), r -> {
          Thread t = new Thread(r, "tyr-whole-commit");
          t.setDaemon(true);
          return t;
        }, (task, closed) -> task.run());
    pool.allowCoreThreadTimeOut(true);
    return pool;
  }

  /**
   * A client's commit on this node whose written keys do not all have the same owners
   * ({@link Replicator#sameOwners}): made all or nothing across its backups by the
   * two-phase path of cross-node transactions, with this node the only participant and
   * the coordinator. Its part is prepared here (validated, keys reserved, recorded) and
   * replicated to every backup of its keys, each holding its share durably; only if every
   * backup holds its share is commit decided (recorded) and the part applied, through the
   * replicator like any write. So:
   * <ul>
   *   <li>a backup that refuses its share (a ring it moved to first) or does not answer
   *       aborts the commit with nothing applied anywhere: abort is recorded, and a share
   *       another backup holds is dropped when it asks (or, if it took the keys over in a
   *       failover, when it resolves the part with this node);
   *   <li>a backup that holds its share and then misses the apply (refused, or this node
   *       lost) applies it from the share once the decision reaches it: when it takes the
   *       keys over, or by this node's repair of what it did not confirm;
   * </ul>
   * rather than the one batch per backup of {@link Replicator#commit(TxRequest)}, which
   * one backup may confirm and another refuse, leaving each of the keys' next primaries
   * with its own side. Costs one more round trip to the backups (the shares), the prepare's
   * forced log and record, the decision's record, and a share record on each backup; the
   * keys are reserved from the prepare to the apply (a commit that meets them gets a
   * retryable conflict, as with a cross-node part).
   *
   * <p>Answers with the local apply's result; a refusal with nothing applied as the
   * refusal ({@code WRONG_EPOCH} with the refusing backup's ring: the client makes the
   * commit again under it), a conflict if it was aborted before its decision (its prepare
   * outlasted the timeout, or a ring took its keys); {@code UNAVAILABLE} if it is decided
   * commit and not confirmed applied everywhere (outcome unknown to the client, as for
   * any unconfirmed write).
   */
  CompletableFuture<CommitResult> commitWhole(TxRequest tx) {
    String id = java.util.UUID.randomUUID().toString();
    Request.Prepare part = new Request.Prepare(id, self(), List.of(self()), tx);
    CompletableFuture<Object> prepared;
    try {
      prepared = prepare(part);
    } catch (IOException | RuntimeException e) {
      // Refused here before any share was sent (validation, the ring): nothing to undo,
      // unless a part was left prepared by a failure after its record.
      boolean left;
      synchronized (this) {
        left = parts.containsKey(id);
      }
      if (left) {
        abortWhole(id);
      }
      return CompletableFuture.failedFuture(e);
    }
    return prepared.handleAsync((x, err) -> {
      if (err != null) {
        abortWhole(id); // a backup may hold its share: it learns abort when it asks
        throw new java.util.concurrent.CompletionException(notApplied(id, err));
      }
      Part own;
      synchronized (this) {
        own = parts.get(id);
      }
      CompletableFuture<CommitResult> applied = own == null ? null : own.result;
      CompletableFuture<Integer> outcome;
      try {
        outcome = coordinate(id, true, false);
      } catch (IOException | RuntimeException e) {
        // Commit not recorded: the part is resolved by its timeout (abort, as nothing
        // decided commit), but the client cannot know that now.
        throw new java.util.concurrent.CompletionException(new TyrException(
            ErrorCode.UNAVAILABLE, "commit " + id + ": its decision could not be recorded, "
                + "so its outcome is unknown: " + e.getMessage(), e));
      }
      return outcome.thenApply(o -> {
        if (o == TxDecision.COMMITTED && applied != null && applied.isDone()
            && !applied.isCompletedExceptionally() && !own.narrowed) {
          return applied.join();
        }
        if (o == TxDecision.COMMITTED && own != null && own.narrowed) {
          // Narrowed by a give-back before or after the lookup above (the replaced part
          // is flagged too): the result here covers only the ops of the keys this node
          // kept; the others are applied by their new primary, unconfirmed here, so the
          // outcome is not known here (the review of tyr-bug1, S2).
          throw new java.util.concurrent.CompletionException(new TyrException(
              ErrorCode.UNAVAILABLE, "commit " + id + " is decided commit; a new ring gave "
                  + "some of its keys back to their owner, which applies their ops from its "
                  + "share, unconfirmed here: not acknowledged"));
        }
        if (o == TxDecision.ABORTED) {
          throw new java.util.concurrent.CompletionException(new TyrException(
              ErrorCode.CONFLICT, "commit " + id + " was aborted before its decision (its "
                  + "prepare outlasted the transaction timeout, or a new ring gave its keys "
                  + "to another node); nothing was applied; retry"));
        }
        throw new java.util.concurrent.CompletionException(new TyrException(
            ErrorCode.UNAVAILABLE, "commit " + id + " is decided commit here but not "
                + "confirmed applied on every replica (this node's log or a backup): it is "
                + "applied from its recorded part, so it is not acknowledged"));
      });
    }, decisions).thenCompose(f -> f);
  }

  /** Records abort for a whole commit not prepared everywhere, and drops its part here. */
  private void abortWhole(String id) {
    try {
      coordinate(id, false, false);
    } catch (IOException | RuntimeException e) {
      // Presumed abort all the same: its part is dropped, and a query finds none here.
      LOG.warn("node {}: commit {}: abort not recorded: {}", self(), id, e.toString());
    }
  }

  /**
   * What a client hears of a whole commit whose part a backup did not hold: a refusal
   * with nothing applied. A backup's refusal for its ring goes back as one, with that
   * ring, so that the client takes it for what it is (not done) and makes the commit
   * again under a newer ring.
   */
  private static Throwable notApplied(String id, Throwable err) {
    Throwable e = err;
    while (e instanceof java.util.concurrent.CompletionException && e.getCause() != null) {
      e = e.getCause();
    }
    for (Throwable c = e; c != null; c = c.getCause()) {
      if (c instanceof io.blobfs.tyr.ring.WrongEpochException w && w.ring() != null) {
        return new io.blobfs.tyr.ring.WrongEpochException("commit " + id + " aborted with "
            + "nothing applied, a backup refused it for its ring: " + w.getMessage(),
            w.ring());
      }
    }
    // Not applied for certain, but a client takes UNAVAILABLE for "unknown": safe.
    return new TyrException(ErrorCode.UNAVAILABLE, "commit " + id + " aborted with nothing "
        + "applied: a backup did not hold its share: " + e.getMessage(), e);
  }

  // ------------------------------------------------------------------ decisions

  CompletableFuture<Object> decide(Request.Decide d) throws IOException {
    String id = d.txId();
    if (!TxRecords.ID.matcher(id).matches()) {
      throw new TyrException(ErrorCode.BAD_REQUEST, "bad transaction id " + id);
    }
    CompletableFuture<Integer> outcome = switch (d.action()) {
      case TxDecision.DECIDE_COMMIT -> coordinate(id, true, false);
      case TxDecision.DECIDE_ABORT -> coordinate(id, false, false);
      case TxDecision.QUERY -> coordinate(id, false, true);
      case TxDecision.APPLY_COMMIT -> apply(id, true);
      case TxDecision.APPLY_ABORT -> apply(id, false);
      default -> throw new TyrException(ErrorCode.BAD_REQUEST, "unknown decision action "
          + d.action());
    };
    return outcome.thenApply(o -> new CommitResult(o, new long[0]));
  }

  /**
   * As the coordinator: takes the decision {@code commit} unless one stands (a query
   * takes abort only if this node's own part has timed out or was never prepared here),
   * then applies it to this node's part. Completes with the outcome.
   */
  private CompletableFuture<Integer> coordinate(String id, boolean commit, boolean query)
      throws IOException {
    Boolean decided;
    synchronized (this) {
      decided = records.decision(id);
      if (decided == null) {
        Part own = parts.get(id);
        if (query && own != null && !expired(own)) {
          return CompletableFuture.completedFuture(TxDecision.PENDING);
        }
        if (own != null && !own.request.coordinator().equals(self())) {
          throw new TyrException(ErrorCode.BAD_REQUEST, "transaction " + id + " has "
              + own.request.coordinator() + " as coordinator, not this node");
        }
        // Commit only what is prepared here: a part this node never prepared, or already
        // dropped, cannot be applied, so the transaction aborts.
        decided = commit && own != null;
        records.writeDecision(id, decided);
        LOG.info("node {}: transaction {} {}", self(), id, decided ? "committed"
            : query ? "aborted (a participant's prepare timed out)" : "aborted");
      }
    }
    if (!decided) {
      return apply(id, false).thenApply(x -> TxDecision.ABORTED);
    }
    // The answer is the recorded decision. A failure of this node's own apply (its log, a
    // backup) changes nothing decided: the part is retried here, and the client is told
    // apart (COMMITTED_NOT_APPLIED) so that it still tells the other participants.
    return apply(id, true).handle((x, e) -> {
      if (e == null || query) {
        return TxDecision.COMMITTED;
      }
      LOG.warn("node {}: transaction {} is committed, but this node's part is not confirmed "
          + "applied: {}", self(), id, e.toString());
      return TxDecision.COMMITTED_NOT_APPLIED;
    });
  }

  /**
   * Applies the decision to this node's part, once, however many ask (the client, the
   * resolver); nothing if no part of {@code id} is prepared here (already applied, or
   * never prepared).
   */
  private CompletableFuture<Integer> apply(String id, boolean commit) {
    Part part;
    synchronized (this) {
      part = parts.get(id);
      if (part == null && commit && handedOver.contains(id)) {
        return CompletableFuture.failedFuture(new TyrException(ErrorCode.UNAVAILABLE,
            "transaction " + id + ": this node's part was handed to the new primary of its "
                + "keys (this node no longer serves them), which applies it when it "
                + "resolves it with the coordinator"));
      }
      if (part == null) {
        return CompletableFuture.completedFuture(commit ? TxDecision.COMMITTED
            : TxDecision.ABORTED);
      }
      if (part.applying != null) {
        return part.applying;
      }
      part.applying = new CompletableFuture<>();
    }
    CompletableFuture<Integer> done = part.applying;
    if (!commit) {
      engine.releasePrepared(id);
      forget(id);
      done.complete(TxDecision.ABORTED);
      return done;
    }
    TxRequest tx = part.request.tx();
    Throwable notYet = recordTurn(part);
    if (notYet != null) {
      retryLater(part, notYet);
      done.completeExceptionally(notYet);
      return done;
    }
    CompletableFuture<CommitResult> local = new CompletableFuture<>();
    // Filled by the engine in the lock hold that logs the part: the parts holding its keys
    // behind it here, which its backups rebase with its write (issue 13, bug 3).
    Map<String, List<String>> behind = new java.util.concurrent.ConcurrentHashMap<>();
    java.util.function.Function<TxRequest, CompletableFuture<CommitResult>> commitHere =
        t -> engine.commitPrepared(id, t, behind).whenComplete((r, e) -> {
          if (e == null) {
            part.result.complete(r);
            local.complete(r);
          } else {
            local.completeExceptionally(e);
          }
        });
    CompletableFuture<CommitResult> all;
    try {
      all = replicator != null ? replicator.commit(tx, commitHere, behind)
          : commitHere.apply(tx);
    } catch (RuntimeException e) {
      all = CompletableFuture.failedFuture(e); // retried below, never left applying
    }
    all.whenComplete((r, err) -> {
      if (local.isDone() && !local.isCompletedExceptionally()) {
        // Applied here; a backup that missed it fails only this answer.
        forgetOnceDurable(id, () -> {
          if (err == null) {
            done.complete(TxDecision.COMMITTED);
          } else {
            done.completeExceptionally(err);
          }
        });
        return;
      } else if (appliedBeforeTheCrash(part, local)) {
        engine.releasePrepared(id);
        forget(id);
        done.complete(TxDecision.COMMITTED);
        return;
      } else {
        retryLater(part, local.isDone() ? causeOf(local) : err);
      }
      if (err == null) {
        done.complete(TxDecision.COMMITTED);
      } else {
        done.completeExceptionally(err);
      }
    });
    return done;
  }

  /**
   * For a part recorded behind another ({@link Part#behind}): once it holds every key
   * first, rewrites its record with its keys' versions, which no commit but its own can
   * change from then on, so that a restart tells its apply from the versions again. Null
   * when the part may apply; else why not yet (another part holds a key ahead of it: the
   * retry comes after that one is released, or its record could not be written).
   */
  private Throwable recordTurn(Part part) {
    if (!part.behind) {
      return null;
    }
    Map<String, Long> versions = engine.versionsIfFirst(part.localId, part.request.tx());
    if (versions == null) {
      return new TyrException(ErrorCode.CONFLICT, "transaction " + part.request.txId()
          + ": part " + part.localId + ": a key " + TyrException.HELD + " ahead of it "
          + "not yet applied; retry");
    }
    try {
      // The versions read include commits staged but not yet forced (the part ahead's
      // apply): forced first, as prepareHere does, or a power loss would leave this record
      // naming a version the log lost, and the restart would take this part for applied.
      engine.force();
      records.writePrepared(part.localId, TxRecords.encode(part.request, versions,
          part.seq));
    } catch (IOException e) {
      return e;
    }
    synchronized (this) {
      part.behind = false;
    }
    return null;
  }

  /**
   * Whether a part whose decision is commit and that the engine refused on validation
   * (not for a server error) was read back at restart: then the refusal means its own
   * apply changed what it checked, before the crash took the record's deletion with it.
   * Recovery finds that from the versions; this is the net under it, since a part that can
   * never validate again would otherwise hold its keys for good.
   */
  private boolean appliedBeforeTheCrash(Part part, CompletableFuture<CommitResult> local) {
    Throwable cause = local.isDone() ? causeOf(local) : null;
    if (!part.recovered || !(cause instanceof TyrException t)
        || t.code() == ErrorCode.SERVER_ERROR || TyrException.heldByPrepared(t)) {
      // Held by another part is no proof of an earlier apply: a backup that took over two
      // shares of one key (one of them an aborted, not yet resolved transaction's) must
      // wait for the other's decision, not forget a decided commit (history IT, session 9).
      return false;
    }
    LOG.error("node {}: transaction {} is decided commit, but its part read back at restart "
        + "no longer validates ({}); taking it as applied before the crash and releasing its "
        + "keys {}", self(), part.request.txId(), t.getMessage(),
        engine.versionsOf(part.request.tx()).keySet());
    return true;
  }

  /**
   * After a failed apply of a decided part: says why, and lets the resolver try again
   * after a pause that doubles (from a quarter of the timeout up to 30 s), not at its next
   * run. The keys stay reserved: the decision stands and must be applied.
   */
  private void retryLater(Part part, Throwable cause) {
    long pause;
    synchronized (this) {
      retries++;
      long first = firstRetryNanos != 0 ? firstRetryNanos
          : Math.max(TimeUnit.MILLISECONDS.toNanos(50), membership.txTimeout().toNanos() / 4);
      part.retryNanos = part.retryNanos == 0 ? first
          : Math.min(MAX_RETRY_NANOS, part.retryNanos * 2);
      pause = part.retryNanos;
      part.retryAt = System.nanoTime() + pause;
      part.retrying = true;
      part.applying = null;
    }
    LOG.warn("node {}: transaction {} is decided commit, but its part could not be applied "
        + "here; trying again in {} ms", self(), part.request.txId(),
        TimeUnit.NANOSECONDS.toMillis(pause), cause);
  }

  private static Throwable causeOf(CompletableFuture<?> failed) {
    try {
      failed.join();
      return null;
    } catch (java.util.concurrent.CompletionException
        | java.util.concurrent.CancellationException e) {
      return e.getCause() != null ? e.getCause() : e;
    }
  }

  /**
   * Forgets an applied part once its commit is on disk, then runs {@code then}. With
   * sync=always the commit completes only then; otherwise the log is forced first, since a
   * power loss could take the applied part with its record already gone (the transaction
   * half-applied). The force runs on the resolver's thread, not the one that completed the
   * commit (it may hold the engine's commit lock).
   */
  private void forgetOnceDurable(String id, Runnable then) {
    if (engine.config().syncPolicy() == SyncPolicy.ALWAYS) {
      forget(id);
      then.run();
      return;
    }
    try {
      resolver.execute(() -> {
        try {
          engine.force();
          forget(id);
        } catch (IOException | RuntimeException e) {
          // The record stays: at restart the part is found applied, or applied again.
          Part gone;
          synchronized (this) {
            gone = parts.remove(id);
          }
          uncount(gone);
          LOG.warn("node {}: transaction {} applied, but the log could not be forced; its "
              + "prepared record is kept", self(), id, e);
        }
        then.run();
      });
    } catch (java.util.concurrent.RejectedExecutionException closing) {
      then.run(); // closing: the record stays, and recovery finds the part applied
    }
  }

  private void forget(String id) {
    Part gone;
    synchronized (this) {
      gone = parts.remove(id);
    }
    uncount(gone);
    wakeNext(gone);
    try {
      records.deletePrepared(id);
    } catch (IOException e) {
      // Harmless: at restart the part is found applied, or resolved again, as the case is.
      LOG.warn("node {}: the prepared record of {} could not be deleted: {}", self(), id,
          e.toString());
    }
  }

  /**
   * After {@code gone} released its keys (applied, aborted or dropped): a part waiting to
   * retry its apply behind it (a decided share taken over behind another, its apply
   * refused while that one held a key) is due at once, and the resolver runs now, rather
   * than after its pause (up to 30 s: MAX_RETRY_NANOS) while its keys stay reserved
   * (issue 13, PLAN step 7). The state under this object's monitor only; the resolver is
   * its own thread, so nothing runs here under a caller's lock.
   */
  private void wakeNext(Part gone) {
    if (gone == null) {
      return;
    }
    java.util.Set<String> keys = namedKeys(gone.request.tx());
    boolean any = false;
    synchronized (this) {
      long now = System.nanoTime();
      for (Part p : parts.values()) {
        if (p.retrying && p.applying == null
            && !java.util.Collections.disjoint(namedKeys(p.request.tx()), keys)) {
          p.retryAt = now;
          any = true;
        }
      }
    }
    if (any && resolver != null) { // null: a ring installed while this is being built
      try {
        resolver.execute(this::resolveExpired);
      } catch (java.util.concurrent.RejectedExecutionException closing) {
        // closed: nothing to resolve
      }
    }
  }

  /** The keys {@code tx} checks or changes, read from the request alone (no engine). */
  private static java.util.Set<String> namedKeys(TxRequest tx) {
    java.util.Set<String> keys = new java.util.HashSet<>();
    tx.ops().forEach(op -> keys.add(op.key()));
    tx.reads().forEach(c -> keys.add(c.key()));
    return keys;
  }

  /** The first pause after a failed apply of a decided part (tests: a long one). */
  void firstRetryPause(Duration pause) {
    firstRetryNanos = pause.toNanos();
  }

  /**
   * Ends {@code p}'s count as held (once). Takes the membership's lock: never called
   * holding this object's monitor, but by {@link #follow}, which holds the membership's.
   */
  private void uncount(Part p) {
    if (p == null) {
      return;
    }
    Long epoch;
    synchronized (this) {
      epoch = p.counted;
      p.counted = null;
    }
    if (epoch != null) {
      membership.release(epoch);
    }
  }

  private boolean expired(Part p) {
    return System.nanoTime() - p.since > membership.txTimeout().toNanos();
  }

  // ------------------------------------------------------------------ recovery

  /** At start: every part prepared before a crash is reserved again, or found applied. */
  private void recover() throws IOException {
    // Reserved in the order they were recorded in, never the directory's: two parts of one
    // key (shares taken over from one primary) apply in the order they reserved it, which
    // must stay their old primary's (the review of tyr-bug1's fix, M1b). A record from
    // before places were recorded sorts first, in the directory's order as before.
    List<Map.Entry<String, TxRecords.Prepared>> prepared = decodeInOrder(
        records.readAllPrepared());
    List<Map.Entry<String, TxRecords.Prepared>> shares = decodeInOrder(
        records.readAllReplicas());
    for (List<Map.Entry<String, TxRecords.Prepared>> recs : List.of(prepared, shares)) {
      for (Map.Entry<String, TxRecords.Prepared> e : recs) {
        nextSeq = Math.max(nextSeq, e.getValue().seq() + 1);
      }
    }
    for (Map.Entry<String, TxRecords.Prepared> file : prepared) {
      TxRecords.Prepared rec = file.getValue();
      String id = file.getKey(); // the transaction's id, or a share's name
      // While the part was prepared no commit but its own could touch its keys, and a
      // version is the number of the commit that wrote it (0: absent), never reused: any
      // key off its recorded version means the part was applied. A key it deleted reads 0,
      // below its record, so "changed", not "newer", is the test.
      // A part recorded behind another on its keys has not applied: it records its
      // versions at its turn, before it applies (the review of tyr-bug1's fix, M1a: the
      // versions from before the parts ahead applied would read as its own apply).
      boolean behind = !TxRecords.known(rec.versions());
      Map<String, Long> now = engine.versionsOf(rec.request().tx());
      boolean applied = false;
      for (Map.Entry<String, Long> e : behind ? Map.<String, Long>of().entrySet()
          : rec.versions().entrySet()) {
        applied |= now.getOrDefault(e.getKey(), 0L).longValue() != e.getValue();
      }
      if (applied) {
        LOG.info("node {}: transaction {} was applied here before the restart", self(), id);
        records.deletePrepared(id);
        continue;
      }
      engine.reservePrepared(id, rec.request().tx());
      // Due at once: the client that prepared it lost its connection to this node with the
      // crash, so the first resolver run settles it with the coordinator (or, here, decides).
      Part part = new Part(rec.request(),
          System.nanoTime() - membership.txTimeout().toNanos() - 1, true);
      part.localId = id;
      part.seq = rec.seq();
      part.behind = behind;
      part.counted = membership.admitPart();
      parts.put(id, part);
      LOG.info("node {}: transaction {} is prepared here since before the restart; it will "
          + "be resolved with its coordinator {}", self(), id, rec.request().coordinator());
    }
    long legacy = TxRecords.NO_SEQ; // shares recorded without a place: first, as listed
    for (Map.Entry<String, TxRecords.Prepared> file : shares) {
      TxRecords.Prepared rec = file.getValue();
      long seq = rec.seq() == TxRecords.NO_SEQ ? legacy++ : rec.seq();
      replicas.put(file.getKey(), new Replica(rec.request(), rec.versions(),
          System.nanoTime(), seq));
    }
    // Issue 13, bug 3: a rebase left half done by a crash (its intent written, the write
    // perhaps logged, the shares' records not yet written again). Finished here: each
    // listed share takes its listed keys' current versions. Sound because the write's item
    // was the last of its batch and the batch unanswered: no later stream write of those
    // keys was applied here (the primary sends the next batch after the answer; after a
    // restart this node follows a renumbered stream). Had the write not reached the log,
    // the current versions are the recorded ones: nothing changes.
    for (Map.Entry<String, Map<String, List<String>>> intent
        : records.readRebaseIntents().entrySet()) {
      for (Map.Entry<String, Replica> e : replicas.entrySet()) {
        Replica r = e.getValue();
        if (!rebaseNow(r, intent.getValue().get(r.request.txId()))) {
          continue;
        }
        records.writeReplica(e.getKey(), TxRecords.encode(r.request, r.versions, r.seq));
        LOG.info("node {}: share {} rebased at restart (a crash left its rebase half done)",
            self(), e.getKey());
      }
      records.deleteRebaseIntent(intent.getKey());
    }
  }

  /** The records decoded, by name, in the order of their places (a stable sort). */
  private static List<Map.Entry<String, TxRecords.Prepared>> decodeInOrder(
      Map<String, byte[]> files) throws IOException {
    List<Map.Entry<String, TxRecords.Prepared>> out = new ArrayList<>();
    for (Map.Entry<String, byte[]> f : files.entrySet()) {
      out.add(Map.entry(f.getKey(), TxRecords.decode(f.getValue())));
    }
    out.sort(java.util.Comparator.comparingLong(e -> e.getValue().seq()));
    return out;
  }

  /** Resolves the parts prepared longer than the timeout. */
  private void resolveExpired() {
    List<Part> due = new ArrayList<>();
    long now = System.nanoTime();
    synchronized (this) {
      for (Part p : parts.values()) {
        if (expired(p) && p.applying == null && !p.asking
            && (!p.retrying || now - p.retryAt >= 0)) {
          due.add(p);
        }
      }
    }
    for (Part p : due) {
      String id = p.request.txId();
      io.blobfs.tyr.ring.Ring seen = membership.ring();
      if (seen.replication() > 1 && !primaryOfAll(seen, p.request.tx())) {
        refollow(seen); // no longer its primary: dropped there
        continue;
      }
      synchronized (this) {
        p.asking = true;
      }
      ask(p.request).whenComplete((o, err) -> {
        synchronized (this) {
          p.asking = false;
        }
        if (err != null) {
          LOG.warn("node {}: transaction {} stays prepared: its coordinator {} did not "
              + "answer: {}", self(), id, p.request.coordinator(), err.toString());
        } else if (o == TxDecision.COMMITTED || o == TxDecision.ABORTED) {
          LOG.info("node {}: transaction {} ({}) resolved with its coordinator: {}", self(),
              id, p.localId, TxDecision.name(o));
          apply(p.localId, o == TxDecision.COMMITTED); // a failure is retried there
        }
      });
    }
    resolveReplicas();
  }

  /**
   * The decision of {@code p}'s transaction: asked of its coordinator (here, taken as a
   * query: abort if none stands and this node's own part timed out or is gone).
   */
  private CompletableFuture<Integer> ask(Request.Prepare p) {
    try {
      if (p.coordinator().equals(self())) {
        return coordinate(p.txId(), false, true);
      }
      return peer(Member.parse(p.coordinator())).decide(p.txId(), TxDecision.QUERY);
    } catch (IOException | RuntimeException e) {
      return CompletableFuture.failedFuture(e);
    }
  }

  // ------------------------------------------------------------------ replicated parts

  /** Whether this node is UP and the primary of every key {@code tx} names. */
  private boolean primaryOfAll(io.blobfs.tyr.ring.Ring ring, TxRequest tx) {
    if (ring.state(membership.self()) != io.blobfs.tyr.ring.Ring.State.UP) {
      return false;
    }
    for (String k : keysOf(tx)) {
      if (!ring.primary(k).equals(membership.self())) {
        return false;
      }
    }
    return true;
  }

  /** Every key {@code tx} names, checked or changed. */
  private java.util.Set<String> keysOf(TxRequest tx) {
    return engine.versionsOf(tx).keySet();
  }

  /** What separates a share's transaction id from its hash in its name ({@link #shareName}). */
  static final String SHARE_MARK = "-s";

  /**
   * The transaction id of a part's engine name: the id itself, or a share taken over,
   * named {@code txId-s<hash>} ({@link #shareName}). Unambiguous because prepare refuses
   * an id holding "-s" (a UUID's hex digits and dashes never make it).
   */
  static String txIdOf(String name) {
    int at = name.indexOf(SHARE_MARK);
    return at < 0 ? name : name.substring(0, at);
  }

  /** A share's local name: its keys tell apart the shares of one transaction here. */
  private String shareName(Request.Prepare p) {
    List<String> keys = new ArrayList<>(keysOf(p.tx()));
    keys.sort(null);
    return p.txId() + SHARE_MARK + Integer.toHexString(keys.hashCode());
  }

  /**
   * As backup: holds a share of {@code source}'s part, durably, before the answer; refused
   * unless the ring is still the one its batch was checked under ({@code epoch}). The share
   * is held after the batch's writes apply, so a ring installed since the check has run its
   * takeovers without it: if that ring made this node the share's primary, nothing would
   * take it over (follow runs at installs), while the old primary drops its part. The
   * check is under this object's monitor, which an install's follow takes after setting
   * the ring: either this sees the new ring, or that follow sees the share.
   */
  private void holdReplica(String source, long epoch, Request.Prepare share)
      throws IOException {
    String name = shareName(share);
    Map<String, Long> versions = engine.versionsOf(share.tx());
    synchronized (this) {
      io.blobfs.tyr.ring.Ring now = membership.ring();
      if (now.epoch() != epoch) {
        throw new io.blobfs.tyr.ring.WrongEpochException("node " + self() + ": a share of "
            + "transaction " + share.txId() + " from " + source + " came under ring epoch "
            + epoch + ", and this node moved to epoch " + now.epoch() + " before holding it",
            now);
      }
      long seq = nextSeq++;
      byte[] record = TxRecords.encode(share, versions, seq);
      records.writeReplica(name, record);
      replicas.put(name, new Replica(TxRecords.decode(record).request(), versions,
          System.nanoTime(), seq));
    }
    LOG.debug("node {}: holds a share of transaction {} prepared on {}", self(),
        share.txId(), source);
  }

  /**
   * Sets share {@code r}'s versions of {@code keys} (those it holds; null: none) to their
   * current ones here; whether any changed. Under the commit lock (a write's hook) or
   * before the node serves (recover).
   */
  private boolean rebaseNow(Replica r, List<String> keys) {
    if (keys == null) {
      return false;
    }
    Map<String, Long> now = engine.versionsOf(r.request.tx());
    Map<String, Long> v = new java.util.HashMap<>(r.versions);
    boolean changed = false;
    for (String k : keys) {
      if (v.containsKey(k)) {
        changed |= !now.get(k).equals(v.put(k, now.get(k)));
      }
    }
    if (changed) {
      r.versions = Map.copyOf(v);
    }
    return changed;
  }

  /**
   * As backup (issue 13, bug 3): the rebase a replicated write carries, of the shares of
   * {@code parts} (transaction ids; any share of one, also one held from an older primary)
   * for the listed keys they hold. Its hook runs under the engine's commit lock, in the
   * hold that logs the write: each such share takes the versions the write gave the keys
   * (versionsOf reads staged over visible, so the logged write), a volatile write, no
   * monitor (lock order: Replicator, then the commit lock, then nothing). Found through
   * the concurrent {@link #replicas}: a share removed meanwhile (taken over, dropped) was
   * removed under the commit lock too (follow) or was judged applied for good.
   */
  private Replicator.Rebase rebase(Map<String, List<String>> parts) {
    List<Map.Entry<String, Replica>> moved = new java.util.concurrent.CopyOnWriteArrayList<>();
    String[] intent = new String[1];
    return new Replicator.Rebase() {
      @Override
      public void intent() throws IOException {
        intent[0] = records.writeRebaseIntent(parts);
      }

      @Override
      public void run() {
        for (Map.Entry<String, Replica> e : replicas.entrySet()) {
          Replica r = e.getValue();
          if (rebaseNow(r, parts.get(r.request.txId()))) {
            moved.add(Map.entry(e.getKey(), r));
          }
        }
      }

      @Override
      public void rewrite() throws IOException {
        // Under this monitor, so that a share taken over or dropped meanwhile (its record
        // deleted or made a part's) is not written back. Same seq: its place among the
        // holders of its keys is unchanged by the rebase.
        synchronized (Transactions.this) {
          for (Map.Entry<String, Replica> e : moved) {
            Replica r = e.getValue();
            if (replicas.get(e.getKey()) == r) {
              records.writeReplica(e.getKey(), TxRecords.encode(r.request, r.versions,
                  r.seq));
            }
          }
        }
        if (intent[0] != null) {
          records.deleteRebaseIntent(intent[0]);
        }
      }
    };
  }

  /**
   * On every ring (and at start): a part prepared here whose keys this node no longer
   * serves as UP primary is dropped, unless being applied (its backups hold it, and the
   * one now primary resolves it: a node marked DOWN must not block its catch-up on it);
   * a share held here whose keys this node now serves as UP primary is taken over: found
   * applied if a key is off the version recorded (the old primary applied and replicated
   * it), else reserved and resolved with the coordinator at once, and handed on to this
   * node's own backups.
   *
   * <p>Always under the membership's lock (an install's listener, or {@link
   * Membership#withRing}), with the ring in force. So no commit is admitted meanwhile, and
   * a part is never dropped for a ring older than the one in force (a stale ring could
   * drop a share the newer one's install just took over).
   *
   * <p>A part counts as held in {@link Membership} until it is resolved, so that a
   * node coming back to its keys cannot catch up (and be marked UP) while it is
   * unresolved: a part prepared while that node was DOWN has no other copy, and one
   * taken over from it is on this node only; once it is UP this method would drop them.
   * A share taken over counts under the epoch before this ring (it was held under an
   * older one): the old primary, RECOVERING under this very ring, must wait for it too.
   */
  private void follow(io.blobfs.tyr.ring.Ring ring) {
    if (!Thread.holdsLock(membership)) {
      throw new IllegalStateException("follow runs under the membership's lock");
    }
    List<Request.Prepare> handOn = new ArrayList<>();
    synchronized (this) {
      for (Part p : new ArrayList<>(parts.values())) {
        // With one replica no other node holds it: it stays for this node's return.
        if (ring.replication() > 1 && p.applying == null
            && !primaryOfAll(ring, p.request.tx())) {
          Request.Prepare kept = restrict(p.request, k -> primaryHere(ring, k));
          if (kept != null && narrow(p, kept, ring)) {
            continue; // the keys it still serves stay here; the others' new primary holds
          }
          engine.releasePrepared(p.localId);
          parts.remove(p.localId);
          uncount(p); // reentrant: this thread holds the membership's lock
          wakeNext(p);
          handedOver.add(p.localId);
          deleteQuietly(p.localId, false);
          LOG.info("node {}: transaction {}: part {} dropped here, no longer this node's "
              + "keys under ring epoch {} (their new primary holds it)", self(),
              p.request.txId(), p.localId, ring.epoch());
        }
      }
      List<Map.Entry<String, Replica>> byOrder = new ArrayList<>(replicas.entrySet());
      // In the old primary's order, never the map's: two shares of one key apply in the
      // order they were prepared there (the review of tyr-bug1, M1).
      byOrder.sort(java.util.Comparator.comparingLong(x -> x.getValue().seq));
      for (Map.Entry<String, Replica> e : byOrder) {
        Replica held = e.getValue();
        // The keys of the share this node is now the UP primary of: all of them when its
        // primary was lost, some when this node is given back the keys it was the first
        // owner of (it was RECOVERING) and the share's keys have different owners.
        Request.Prepare mine = restrict(held.request, k -> primaryHere(ring, k));
        if (mine == null || membership.handOver() != null) {
          // Not while this node hands over: its stand-ins, primaries under the ring
          // before, still resolve and write these keys and send it those writes. A
          // takeover would reserve the keys (their batches refused, CONFLICT: writes read
          // there and lost) or apply the part beside them (overwritten by a later batch,
          // or applied twice). Once the hand-over ends (onHandedOver runs this again) no
          // stand-in batch comes, every one taken is applied, so the version check below
          // sees the part applied if its primary applied it (issue 13, M2).
          continue;
        }
        String heldName = e.getKey();
        if (parts.containsKey(heldName)) {
          replicas.remove(heldName);
          // Taken over already (same transaction, same keys): a crash came between the
          // part's record and the share's deletion, and both were read back. Taking it
          // again would replace the live part (its count as held leaked, its keys
          // reserved twice under one name): the part applies it, the share goes.
          deleteQuietly(heldName, true);
          LOG.info("node {}: transaction {}: share {} is already taken over here", self(),
              held.request.txId(), heldName);
          continue;
        }
        Request.Prepare rest = restrict(held.request, k -> !primaryHere(ring, k));
        String name = rest == null ? heldName : shareName(mine);
        if (rest != null && parts.containsKey(name)) {
          replicas.remove(heldName);
          // Taken over in part already: a crash came between that part's record and this
          // share's deletion (its other keys' share was kept before the part's record).
          deleteQuietly(heldName, true);
          LOG.info("node {}: transaction {}: share {} is already taken over here as {}",
              self(), held.request.txId(), heldName, name);
          continue;
        }
        // Its ops were applied here in one batch or not at all: any key tells. Judged and,
        // if not applied, reserved in one hold of the engine's commit lock, the share
        // leaving the index a rebase reads in that hold too (issue 13, bug 3): a
        // replicated write and its rebase of this share land wholly before (both seen) or
        // after (the write meets the reservation, CONFLICT, and is not applied here). Two
        // steps, a write logged between the judge and the reservation was applied here and
        // then again by the taken-over part. Lock order: this monitor, then the commit lock.
        Map<String, Long> judged = engine.underCommitLock(() -> {
          replicas.remove(heldName);
          Map<String, Long> v = held.versions;
          if (!v.equals(engine.versionsOf(held.request.tx()))) {
            return null;
          }
          engine.reservePrepared(name, (rest == null ? held.request : mine).tx());
          return v;
        });
        if (judged == null) {
          deleteQuietly(heldName, true);
          LOG.info("node {}: transaction {}: share {} was applied before the takeover",
              self(), held.request.txId(), heldName);
          continue;
        }
        Replica r = rest == null ? held : new Replica(mine, versionsOf(judged, mine),
            System.nanoTime(), held.seq);
        if (rest != null) {
          // The other keys' primary is still the share's: their ops stay a share here.
          keepShare(rest, versionsOf(judged, rest), held.since, held.seq);
        }
        boolean behind = false;
        try {
          // Behind another part of one of its keys (an earlier share taken over): the
          // versions of its turn are not known yet (see TxRecords.UNKNOWN_VERSION).
          behind = engine.versionsIfFirst(name, r.request.tx()) == null;
          records.writePrepared(name, TxRecords.encode(r.request, behind
              ? TxRecords.unknownVersions(judged.keySet()) : versionsOf(judged, r.request),
              held.seq));
          records.deleteReplica(heldName);
        } catch (IOException | RuntimeException err) {
          // Kept as a reserved part all the same: its record is the replica's.
          LOG.warn("node {}: share {} taken over, its record not moved: {}", self(), name,
              err.toString());
        }
        Part taken = new Part(r.request, System.nanoTime() - membership.txTimeout().toNanos()
            - 1, true);
        taken.localId = name;
        taken.seq = held.seq;
        taken.behind = behind;
        taken.counted = ring.epoch() - 1;
        membership.admit(taken.counted);
        parts.put(name, taken);
        handOn.add(r.request);
        LOG.info("node {}: transaction {}: share {} taken over under ring epoch {}; "
            + "resolving it with its coordinator {}", self(), r.request.txId(), name,
            ring.epoch(), r.request.coordinator());
      }
    }
    if (replicator != null) {
      for (Request.Prepare p : handOn) {
        // Numbered on this node's streams now, still under the install: the part is due
        // at once, and its apply (admitted only after this install) must reach the
        // backups after the share, which they then hold with their versions from before
        // the apply (a share arriving after it would look unapplied there, and a node
        // taking it over later would apply an Add or Append again). Best effort: a
        // second loss before it is resolved and handed on loses the share (logged).
        replicator.replicatePrepare(p).whenComplete((x, err) -> {
          if (err != null) {
            LOG.warn("node {}: transaction {}: a share taken over is not on this node's "
                + "backups: {}", self(), p.txId(), err.toString());
          }
        });
      }
    }
  }

  /** Whether this node is UP and {@code key}'s primary under {@code ring}. */
  private boolean primaryHere(io.blobfs.tyr.ring.Ring ring, String key) {
    return ring.state(membership.self()) == io.blobfs.tyr.ring.Ring.State.UP
        && ring.primary(key).equals(membership.self());
  }

  /** {@code p} with only the ops and checks of the keys {@code keep} takes; null if no op. */
  private static Request.Prepare restrict(Request.Prepare p,
      java.util.function.Predicate<String> keep) {
    List<io.blobfs.tyr.api.ReadCheck> reads = new ArrayList<>();
    p.tx().reads().forEach(c -> {
      if (keep.test(c.key())) {
        reads.add(c);
      }
    });
    List<io.blobfs.tyr.api.TxOp> ops = new ArrayList<>();
    p.tx().ops().forEach(op -> {
      if (keep.test(op.key())) {
        ops.add(op);
      }
    });
    return ops.isEmpty() ? null : new Request.Prepare(p.txId(), p.coordinator(),
        p.participants(), new TxRequest(reads, ops));
  }

  /** The versions {@code held} (a share's, as judged) gives the keys {@code part} names. */
  private Map<String, Long> versionsOf(Map<String, Long> held, Request.Prepare part) {
    Map<String, Long> out = new java.util.LinkedHashMap<>();
    for (String k : keysOf(part.tx())) {
      out.put(k, held.get(k));
    }
    return out;
  }

  /** Holds {@code share} here as a backup again, durably if it can (under follow). */
  private void keepShare(Request.Prepare share, Map<String, Long> versions, long since,
      long seq) {
    String name = shareName(share);
    try {
      records.writeReplica(name, TxRecords.encode(share, versions, seq));
    } catch (IOException e) {
      LOG.warn("node {}: transaction {}: share {} kept in memory only: {}", self(),
          share.txId(), name, e.toString());
    }
    replicas.put(name, new Replica(share, versions, since, seq));
  }

  /**
   * Keeps of part {@code p} only {@code kept}, the ops (and checks) of the keys this node
   * is still the UP primary of under {@code ring}: the others' new primary was given them
   * back (it was RECOVERING, a backup of them) and holds their share, which it takes over
   * and applies once decided. Dropping the whole part here would leave this node's keys'
   * ops with no node to apply them (their share is held by a node that is not their
   * primary). False if it could not be narrowed (then it is dropped as before).
   */
  private boolean narrow(Part p, Request.Prepare kept, io.blobfs.tyr.ring.Ring ring) {
    boolean behind;
    try {
      // Reserved: unchanged while it holds them first; behind another part, not known yet.
      Map<String, Long> versions = p.behind ? null : engine.versionsIfFirst(p.localId,
          kept.tx());
      if (versions == null) {
        versions = TxRecords.unknownVersions(keysOf(kept.tx()));
      }
      records.writePrepared(p.localId, TxRecords.encode(kept, versions, p.seq));
      behind = !TxRecords.known(versions);
    } catch (IOException | RuntimeException e) {
      LOG.warn("node {}: transaction {}: part {} could not be narrowed to the keys it "
          + "still serves: {}", self(), p.request.txId(), p.localId, e.toString());
      return false;
    }
    engine.narrowPrepared(p.localId, kept.tx()); // no gap, its place among holders kept
    Part narrowed = new Part(kept, p.since, p.recovered);
    narrowed.localId = p.localId;
    narrowed.seq = p.seq;
    narrowed.behind = behind;
    narrowed.result = p.result; // a whole commit's answer waits on the one future
    narrowed.narrowed = true;
    p.narrowed = true;
    narrowed.counted = p.counted;
    narrowed.retryAt = p.retryAt;
    narrowed.retrying = p.retrying;
    narrowed.retryNanos = p.retryNanos;
    p.counted = null; // counted once, by the part that replaces it
    parts.put(p.localId, narrowed);
    LOG.info("node {}: transaction {}: part {} keeps only the keys it still serves under "
        + "ring epoch {}, {} (the others' new primary holds their share)", self(),
        p.request.txId(), p.localId, ring.epoch(), keysOf(kept.tx()));
    return true;
  }

  /**
   * The resolver's follow, for a part it found off its keys under {@code seen}: only if
   * {@code seen} is still the ring in force, read under the install's lock. An install
   * since has followed its own ring already (and may have taken over a share that
   * {@code seen} would drop).
   */
  void refollow(io.blobfs.tyr.ring.Ring seen) {
    membership.withRing(now -> {
      if (now.epoch() == seen.epoch()) {
        follow(now);
      }
    });
  }

  /**
   * As backup: a share whose keys moved off the versions recorded was applied (and
   * replicated) by its primary; one whose transaction aborted is dropped; one committed and
   * not applied yet stays (its primary applies it, or this node does if it takes over).
   */
  private void resolveReplicas() {
    List<Map.Entry<String, Replica>> due = new ArrayList<>();
    synchronized (this) {
      for (Map.Entry<String, Replica> e : replicas.entrySet()) {
        Replica r = e.getValue();
        if (!r.asking && System.nanoTime() - r.since > membership.txTimeout().toNanos()) {
          due.add(e);
        }
      }
    }
    for (Map.Entry<String, Replica> e : due) {
      Replica r = e.getValue();
      // Under the commit lock (issue 13, bug 3): a replicated write and the rebase its hook
      // makes of this share are seen together or not at all. "Moved" is final: a share is
      // rebased only while its part holds the key on the primary, which writes it then
      // only by that part's own apply. So judge-then-drop may be two steps.
      if (engine.underCommitLock(() -> !r.versions.equals(engine.versionsOf(r.request.tx())))) {
        dropReplica(e.getKey(), r);
        continue;
      }
      synchronized (this) {
        r.asking = true;
        replicaAsks++;
      }
      ask(r.request).whenComplete((o, err) -> {
        synchronized (this) {
          r.asking = false;
          // Not again before another timeout: a share whose apply changes no version (a
          // delete of an absent key), or whose coordinator is down, stays unresolved here
          // for long, and would otherwise be asked about on every resolver run.
          r.since = System.nanoTime();
        }
        if (err == null && o == TxDecision.ABORTED) {
          dropReplica(e.getKey(), r);
        }
      });
    }
  }

  private void dropReplica(String name, Replica r) {
    synchronized (this) {
      if (replicas.get(name) != r) {
        return; // taken over meanwhile
      }
      replicas.remove(name);
      deleteQuietly(name, true);
    }
  }

  private void deleteQuietly(String name, boolean replica) {
    try {
      if (replica) {
        records.deleteReplica(name);
      } else {
        records.deletePrepared(name);
      }
    } catch (IOException e) {
      LOG.warn("node {}: the record of {} could not be deleted: {}", self(), name,
          e.toString());
    }
  }

  private synchronized TyrClient peer(Member m) {
    return peers.computeIfAbsent(m, k -> new TyrClient(peerAccess.client(k)
        .withTimeouts(Duration.ofSeconds(5), Duration.ofSeconds(10))
        .withConnections(1).withMaxFrameBytes(maxFrameBytes)));
  }

  /** How many applies of decided parts failed here and wait to be tried again (tests). */
  synchronized long retries() {
    return retries;
  }

  synchronized long replicaAsks() {
    return replicaAsks;
  }

  /** The local names of the shares held here as backup now (for tests). */
  synchronized List<String> held() {
    return List.copyOf(replicas.keySet());
  }

  /** This server's decision pool (for tests that hold its threads). */
  java.util.concurrent.ThreadPoolExecutor decisions() {
    return decisions;
  }

  /** The threads of this server's decision pool now (for tests). */
  int decisionThreads() {
    return decisions.getPoolSize();
  }

  /** Whether this server's decision pool is shut down (for tests). */
  boolean decisionsClosed() {
    return decisions.isShutdown();
  }

  /** The ids of the parts prepared here now (for tests and logs). */
  synchronized List<String> prepared() {
    return List.copyOf(parts.keySet());
  }

  @Override
  public void close() {
    resolver.shutdownNow();
    decisions.shutdown(); // a decision under way ends; its record is forced or not, as ever
    List<TyrClient> open;
    synchronized (this) {
      open = new ArrayList<>(peers.values());
      peers.clear();
    }
    for (TyrClient c : open) {
      c.close();
    }
  }
}
