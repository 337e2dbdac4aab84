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
  /** The parts prepared here, by transaction id. Guarded by {@code this}. */
  private final Map<String, Part> parts = new HashMap<>();
  private final Map<Member, TyrClient> peers = new HashMap<>();
  private final ScheduledExecutorService resolver;

  /** A prepared part. {@code applying} once its decision is being applied. */
  private static final class Part {
    final Request.Prepare request;
    final long since;
    /** Read back from its record at restart (it may have been applied before the crash). */
    final boolean recovered;
    CompletableFuture<Integer> applying;
    boolean asking;
    /** After a failed apply: the resolver tries again no sooner (System.nanoTime). */
    long retryAt;
    /** Whether {@link #retryAt} is set (nanoTime may be negative: no "unset" value). */
    boolean retrying;
    /** The pause after the next failed apply; doubles up to {@link #MAX_RETRY_NANOS}. */
    long retryNanos;

    Part(Request.Prepare request, long since, boolean recovered) {
      this.request = request;
      this.since = since;
      this.recovered = recovered;
    }
  }

  /** The longest pause between two attempts to apply a decided part that failed. */
  private static final long MAX_RETRY_NANOS = TimeUnit.SECONDS.toNanos(30);

  Transactions(TyrEngine engine, Membership membership, Replicator replicator,
      PeerAccess peerAccess, int maxFrameBytes) throws IOException {
    this.engine = engine;
    this.membership = membership;
    this.replicator = replicator;
    this.peerAccess = peerAccess;
    this.maxFrameBytes = maxFrameBytes;
    this.records = new TxRecords(engine.config().directory());
    recover();
    long every = Math.max(50, membership.txTimeout().toMillis() / 4);
    this.resolver = Executors.newSingleThreadScheduledExecutor(r -> {
      Thread t = new Thread(r, "tyr-tx-resolver");
      t.setDaemon(true);
      return t;
    });
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
    if (!p.participants().contains(self()) || !p.participants().contains(p.coordinator())) {
      throw new TyrException(ErrorCode.BAD_REQUEST, "transaction " + id + ": participants "
          + p.participants() + " must hold this node, " + self() + ", and the coordinator");
    }
    // One at a time with decisions, so that a coordinator's presumed abort (QUERY of a
    // transaction it never prepared) and a late prepare of it cannot cross.
    synchronized (this) {
      if (parts.containsKey(id) || (p.coordinator().equals(self())
          && records.decision(id) != null)) {
        throw new TyrException(ErrorCode.CONFLICT, "transaction " + id
            + " is already prepared or decided here; retry it under a new id");
      }
      Map<String, Long> versions = engine.prepare(id, p.tx());
      try {
        // What the prepare validated against is on disk before its record, whatever the
        // sync policy: recovery compares the keys' versions with the record's, and a
        // record resting on commits a power loss took would read as applied.
        engine.force();
        byte[] record = TxRecords.encode(p, versions);
        records.writePrepared(id, record);
        // The copy kept until the decision: heap bytes, not the request frame's buffers.
        parts.put(id, new Part(TxRecords.decode(record).request(), System.nanoTime(),
            false));
      } catch (IOException | RuntimeException e) {
        engine.releasePrepared(id);
        throw e instanceof TyrException t ? t : new TyrException(ErrorCode.SERVER_ERROR,
            "transaction " + id + " could not be prepared durably: " + e, e);
      }
    }
    return CompletableFuture.completedFuture(new CommitResult(0, new long[0]));
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
    CompletableFuture<CommitResult> local = new CompletableFuture<>();
    java.util.function.Function<TxRequest, CompletableFuture<CommitResult>> commitHere =
        t -> engine.commitPrepared(id, t).whenComplete((r, e) -> {
          if (e == null) {
            local.complete(r);
          } else {
            local.completeExceptionally(e);
          }
        });
    CompletableFuture<CommitResult> all;
    try {
      all = replicator != null ? replicator.commit(tx, commitHere) : commitHere.apply(tx);
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
   * Whether a part whose decision is commit and that the engine refused on validation
   * (not for a server error) was read back at restart: then the refusal means its own
   * apply changed what it checked, before the crash took the record's deletion with it.
   * Recovery finds that from the versions; this is the net under it, since a part that can
   * never validate again would otherwise hold its keys for good.
   */
  private boolean appliedBeforeTheCrash(Part part, CompletableFuture<CommitResult> local) {
    Throwable cause = local.isDone() ? causeOf(local) : null;
    if (!part.recovered || !(cause instanceof TyrException t)
        || t.code() == ErrorCode.SERVER_ERROR) {
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
      part.retryNanos = part.retryNanos == 0
          ? Math.max(TimeUnit.MILLISECONDS.toNanos(50), membership.txTimeout().toNanos() / 4)
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
          synchronized (this) {
            parts.remove(id);
          }
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
    synchronized (this) {
      parts.remove(id);
    }
    try {
      records.deletePrepared(id);
    } catch (IOException e) {
      // Harmless: at restart the part is found applied, or resolved again, as the case is.
      LOG.warn("node {}: the prepared record of {} could not be deleted: {}", self(), id,
          e.toString());
    }
  }

  private boolean expired(Part p) {
    return System.nanoTime() - p.since > membership.txTimeout().toNanos();
  }

  // ------------------------------------------------------------------ recovery

  /** At start: every part prepared before a crash is reserved again, or found applied. */
  private void recover() throws IOException {
    for (byte[] bytes : records.readAllPrepared()) {
      TxRecords.Prepared rec = TxRecords.decode(bytes);
      String id = rec.request().txId();
      // While the part was prepared no commit but its own could touch its keys, and a
      // version is the number of the commit that wrote it (0: absent), never reused: any
      // key off its recorded version means the part was applied. A key it deleted reads 0,
      // below its record, so "changed", not "newer", is the test.
      Map<String, Long> now = engine.versionsOf(rec.request().tx());
      boolean applied = false;
      for (Map.Entry<String, Long> e : rec.versions().entrySet()) {
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
      parts.put(id, new Part(rec.request(),
          System.nanoTime() - membership.txTimeout().toNanos() - 1, true));
      LOG.info("node {}: transaction {} is prepared here since before the restart; it will "
          + "be resolved with its coordinator {}", self(), id, rec.request().coordinator());
    }
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
      try {
        if (p.request.coordinator().equals(self())) {
          coordinate(id, false, true);
          continue;
        }
        Member coordinator = Member.parse(p.request.coordinator());
        TyrClient client = peer(coordinator); // may throw: then the part is not left asking
        synchronized (this) {
          p.asking = true;
        }
        client.decide(id, TxDecision.QUERY).whenComplete((o, err) -> {
          synchronized (this) {
            p.asking = false;
          }
          if (err != null) {
            LOG.warn("node {}: transaction {} stays prepared: its coordinator {} did not "
                + "answer: {}", self(), id, coordinator, err.toString());
          } else if (o == TxDecision.COMMITTED || o == TxDecision.ABORTED) {
            LOG.info("node {}: transaction {} resolved with its coordinator: {}", self(), id,
                TxDecision.name(o));
            apply(id, o == TxDecision.COMMITTED); // a failure is logged and retried there
          }
        });
      } catch (IOException | RuntimeException e) {
        LOG.warn("node {}: transaction {} not resolved yet: {}", self(), id, e.toString());
      }
    }
  }

  private synchronized TyrClient peer(Member m) {
    return peers.computeIfAbsent(m, k -> new TyrClient(peerAccess.client(k)
        .withTimeouts(Duration.ofSeconds(5), Duration.ofSeconds(10))
        .withConnections(1).withMaxFrameBytes(maxFrameBytes)));
  }

  /** The ids of the parts prepared here now (for tests and logs). */
  synchronized List<String> prepared() {
    return List.copyOf(parts.keySet());
  }

  @Override
  public void close() {
    resolver.shutdownNow();
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
