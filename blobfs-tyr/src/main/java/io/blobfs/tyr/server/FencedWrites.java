package io.blobfs.tyr.server;

import io.blobfs.tyr.api.TxOp;
import io.blobfs.tyr.api.TxRequest;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.function.Consumer;

/**
 * As backup, for one replicated batch, in its order: which of its commits this node's
 * fences ({@link RefusedKeys}) refuse. A commit is refused, nothing of it applied, if it
 * changes a fenced key without replacing it whole ({@link RefusedKeys#replacedWhole}: a
 * write at an offset, a truncate to another size). Applied, it left the old bytes with the
 * later pieces on top: a state no client wrote (it lacks the refused write and has later
 * ones), served once a ring makes this node the key's primary, which drops the fence
 * (issue 13's "skip state", {@code BackupFenceTest}). A commit that replaces the key whole
 * is applied and lifts the fence as before.
 *
 * <p>A refused commit's other keys are fenced too: their primary applied those writes and
 * this node did not. Within the batch the fences move as the commits go: a key of a
 * refused commit is fenced for the commits after it, and a key replaced whole is no longer
 * fenced for them (the engine applies the batch in this order). Used under the
 * Replicator's lock for one batch; not thread-safe.
 */
final class FencedWrites {
  private final RefusedKeys fences;
  /** Keys of commits refused in this batch and not replaced whole by a later one. */
  private final Set<String> fencedHere = new HashSet<>();
  /** Keys replaced whole in this batch and not fenced by a later refusal. */
  private final Set<String> replacedHere = new HashSet<>();
  private final List<TxRequest> refused = new ArrayList<>();
  private final List<Long> indexes = new ArrayList<>();

  FencedWrites(RefusedKeys fences) {
    this.fences = fences;
  }

  /** Whether the batch's commit number {@code index}, {@code tx}, is refused here. */
  boolean refuses(int index, TxRequest tx) {
    Set<String> whole = RefusedKeys.replacedWhole(tx);
    boolean refuse = false;
    for (TxOp op : tx.ops()) {
      refuse |= !whole.contains(op.key()) && fenced(op.key());
    }
    if (!refuse) {
      fencedHere.removeAll(whole);
      replacedHere.addAll(whole);
      return false;
    }
    refused.add(tx);
    indexes.add((long) index);
    for (TxOp op : tx.ops()) {
      fencedHere.add(op.key());
      replacedHere.remove(op.key());
    }
    return true;
  }

  /**
   * Refuses the batch's commit number {@code index}, {@code tx}, whatever the fences: it
   * passed {@link #refuses} but could not be applied here (issue 13, bug 3: its rebase's
   * intent could not be written). Not applied, its keys are fenced as any refused write's.
   */
  void refuse(int index, TxRequest tx) {
    refused.add(tx);
    indexes.add((long) index);
    for (TxOp op : tx.ops()) {
      fencedHere.add(op.key());
      replacedHere.remove(op.key());
    }
  }

  /**
   * Whether the batch's prepared share at {@code index}, {@code share} (a cross-node
   * part's ops on this node's keys, held until its decision and applied by a takeover),
   * is refused here: as a commit is, if it changes a fenced key without replacing it whole.
   * Held, a promoted backup applied it on its copy that lacks the refused write: the skip
   * state, as a committed write (issue 13's review, M1). Refused, its batch (which holds
   * only it, and cannot say it reads a refusal of part of it) is refused whole, so the
   * share is not held, its primary does not acknowledge the prepare, and the transaction
   * aborts (Replicator.apply decides it on a probe before anything is applied); so its keys
   * are not fenced for it (nothing of it is applied anywhere). Its ops are the client's
   * (an append, add or compare-and-set: a write in part; a create too, as it is not
   * physical yet).
   */
  boolean refusesShare(int index, TxRequest share) {
    Set<String> whole = RefusedKeys.replacedWhole(share);
    for (TxOp op : share.ops()) {
      if (!whole.contains(op.key()) && fenced(op.key())) {
        indexes.add((long) index);
        return true;
      }
    }
    return false;
  }

  /** Whether a commit or share of the batch is refused so far. */
  boolean any() {
    return !indexes.isEmpty();
  }

  private boolean fenced(String key) {
    return fencedHere.contains(key) || (!replacedHere.contains(key) && fences.lacks(key));
  }

  /**
   * Hands {@code refusal} the refused commits' ops on the keys still fenced at the end of
   * the batch (a later put in it replaced the others); nothing if none was refused.
   */
  void record(Consumer<List<TxRequest>> refusal) {
    List<TxOp> ops = new ArrayList<>();
    for (TxRequest tx : refused) {
      for (TxOp op : tx.ops()) {
        if (fencedHere.contains(op.key())) {
          ops.add(op);
        }
      }
    }
    refusal.accept(ops.isEmpty() ? List.of() : List.of(new TxRequest(List.of(), ops)));
  }

  /** The indexes in the batch of the commits refused, in order: the batch's answer. */
  long[] refusedIndexes() {
    return indexes.stream().mapToLong(Long::longValue).toArray();
  }
}
