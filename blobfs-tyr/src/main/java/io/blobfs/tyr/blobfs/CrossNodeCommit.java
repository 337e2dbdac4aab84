package io.blobfs.tyr.blobfs;

import io.blobfs.store.StoreUnavailableException;
import io.blobfs.store.TransactionConflictException;
import io.blobfs.tyr.api.CommitResult;
import io.blobfs.tyr.api.TxRequest;
import io.blobfs.tyr.api.TyrException;
import io.blobfs.tyr.client.TyrClient;
import io.blobfs.tyr.protocol.Request;
import io.blobfs.tyr.protocol.TxDecision;
import io.blobfs.tyr.ring.Member;
import io.blobfs.tyr.ring.WrongEpochException;
import java.io.IOException;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.function.Function;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The client's side of one cross-node transaction (two-phase commit; the nodes' side and
 * the recovery are in the server's {@code Transactions}): prepare every part on its node
 * at once; if all prepared, ask the coordinator to decide commit, whose durable record
 * makes the transaction committed; then tell the other participants. If any prepare
 * fails, the coordinator is told to decide abort and the prepared parts are dropped.
 * A client that dies anywhere in between leaves the parts to the nodes, which resolve them
 * with the coordinator after their timeout: all applied, or none.
 */
final class CrossNodeCommit {
  private static final Logger LOG = LoggerFactory.getLogger(CrossNodeCommit.class);

  /**
   * Where a test stops a client between the phases, as one that dies there would (the
   * parts stay prepared, or decided and not applied, for the nodes to resolve).
   */
  enum StopAfter { NOTHING, PREPARE, DECISION }

  private final Map<Member, TxRequest> parts;
  private final Member coordinator;
  private final Function<Member, TyrClient> clients;
  private final String id = UUID.randomUUID().toString();
  /**
   * A test's hook, called with PREPARE once every prepare answered (before the decision)
   * and with DECISION once the coordinator answered it (before the others are told).
   */
  private java.util.function.Consumer<StopAfter> hook = phase -> { };
  /**
   * Whether the coordinator was asked to decide commit: from then on the transaction may
   * be committed whatever the answers say, so it must never be made again.
   */
  private volatile boolean commitAsked;

  /** {@code parts} by participant; {@code coordinator} is one of them. */
  CrossNodeCommit(Map<Member, TxRequest> parts, Member coordinator,
      Function<Member, TyrClient> clients) {
    this.parts = new LinkedHashMap<>(parts);
    this.coordinator = coordinator;
    this.clients = clients;
    if (!parts.containsKey(coordinator)) {
      throw new IllegalArgumentException("the coordinator " + coordinator
          + " is not a participant of " + parts.keySet());
    }
  }

  String id() {
    return id;
  }

  /** Sets the test's hook between the phases. */
  CrossNodeCommit hook(java.util.function.Consumer<StopAfter> phases) {
    this.hook = phases;
    return this;
  }

  /**
   * Whether the outcome may be commit although {@link #run} failed: the commit decision
   * was asked for. A caller must not make such a transaction again (its parts may be
   * applied, or be applied by the nodes' resolution); a failure before is a refusal at
   * prepare, nothing applied and nothing that can be.
   */
  boolean mayHaveCommitted() {
    return commitAsked;
  }

  /**
   * Runs the transaction; returns normally once it is committed and applied on every
   * participant. A refusal at prepare (a conflict, a broken precondition, another ring)
   * comes back as the node's {@link TyrException} with nothing applied.
   */
  void run(StopAfter stop) throws IOException {
    List<String> ids = new ArrayList<>();
    for (Member m : parts.keySet()) {
      ids.add(m.id());
    }
    Map<Member, CompletableFuture<CommitResult>> prepares = new LinkedHashMap<>();
    for (Map.Entry<Member, TxRequest> e : parts.entrySet()) {
      prepares.put(e.getKey(), clients.apply(e.getKey()).prepare(
          new Request.Prepare(id, coordinator.id(), ids, e.getValue())));
    }
    IOException refused = null;
    for (Map.Entry<Member, CompletableFuture<CommitResult>> e : prepares.entrySet()) {
      try {
        TyrClient.await(e.getValue());
      } catch (IOException err) {
        // Another ring first: the caller retries under it; else the first refusal.
        if (refused == null || (err instanceof WrongEpochException
            && !(refused instanceof WrongEpochException))) {
          refused = err;
        }
      }
    }
    if (stop == StopAfter.PREPARE) {
      return;
    }
    hook.accept(StopAfter.PREPARE);
    if (refused != null) {
      abort(true);
      throw refused;
    }
    int outcome;
    commitAsked = true;
    try {
      outcome = TyrClient.await(clients.apply(coordinator).decide(id,
          TxDecision.DECIDE_COMMIT));
    } catch (IOException e) {
      throw new StoreUnavailableException("Týr transaction " + id + ": its coordinator "
          + coordinator + " did not confirm the decision, so its outcome is unknown here: the "
          + "coordinator has decided commit or will decide abort, and every participant "
          + "resolves it with the coordinator within its timeout (all or none applied): "
          + e.getMessage(), e);
    }
    if (outcome != TxDecision.COMMITTED && outcome != TxDecision.COMMITTED_NOT_APPLIED) {
      abort(false); // the coordinator dropped its part with the decision
      throw new TransactionConflictException("Týr transaction " + id + " was aborted by its "
          + "coordinator " + coordinator + " (" + TxDecision.name(outcome) + "): its prepare "
          + "timed out before the decision; nothing was applied");
    }
    if (stop == StopAfter.DECISION) {
      return;
    }
    hook.accept(StopAfter.DECISION);
    List<CompletableFuture<Integer>> applies = new ArrayList<>();
    List<Member> others = new ArrayList<>();
    for (Member m : parts.keySet()) {
      if (!m.equals(coordinator)) {
        others.add(m);
        applies.add(clients.apply(m).decide(id, TxDecision.APPLY_COMMIT));
      }
    }
    IOException unapplied = null;
    for (int i = 0; i < applies.size(); i++) {
      try {
        TyrClient.await(applies.get(i));
      } catch (IOException e) {
        if (unapplied == null) {
          unapplied = new StoreUnavailableException("Týr transaction " + id + " is committed "
              + "(its coordinator " + coordinator + " recorded the decision) but "
              + others.get(i) + " did not confirm it: that node applies it when it resolves "
              + "the transaction with the coordinator, within its timeout: " + e.getMessage(),
              e);
        } else {
          unapplied.addSuppressed(e);
        }
      }
    }
    if (outcome == TxDecision.COMMITTED_NOT_APPLIED) {
      StoreUnavailableException e = new StoreUnavailableException("Týr transaction " + id
          + " is committed (its coordinator " + coordinator + " recorded the decision) but "
          + "the coordinator did not confirm its own part applied (its log or a backup "
          + "failed): it applies it again", unapplied);
      throw e;
    }
    if (unapplied != null) {
      throw unapplied;
    }
  }

  /**
   * Decides abort at the coordinator if {@code decide} (so that no later commit can be
   * decided) and drops the parts of every other participant: also those whose prepare
   * answer was lost (the part may be prepared there all the same; a node that has none
   * answers at once). A node that cannot be told resolves its part after its timeout.
   */
  private void abort(boolean decide) {
    if (decide) {
      try {
        TyrClient.await(clients.apply(coordinator).decide(id, TxDecision.DECIDE_ABORT));
      } catch (IOException e) {
        LOG.debug("transaction {}: the coordinator {} was not told to abort: {}", id,
            coordinator, e.toString());
      }
    }
    List<CompletableFuture<Integer>> drops = new ArrayList<>();
    for (Member m : parts.keySet()) {
      if (!m.equals(coordinator)) {
        drops.add(clients.apply(m).decide(id, TxDecision.APPLY_ABORT));
      }
    }
    for (CompletableFuture<Integer> f : drops) {
      try {
        TyrClient.await(f);
      } catch (IOException e) {
        LOG.debug("transaction {}: a prepared part was not dropped now: {}", id, e.toString());
      }
    }
  }
}
