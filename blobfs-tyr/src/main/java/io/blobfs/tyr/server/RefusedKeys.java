package io.blobfs.tyr.server;

import io.blobfs.tyr.api.TxOp;
import io.blobfs.tyr.api.TxRequest;
import java.util.HashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.Predicate;

/**
 * As backup: the keys of replicated writes this node refused (a batch under another ring
 * epoch, or one that does not follow its stream). Their primary applied those writes and
 * may have served them to readers; until a later replicated write that replaces the key
 * whole is applied here (the primary's repair, {@link OwedKeys}, or a new put or delete:
 * {@link #replacedWhole}), this node's copy is older than what readers may have seen, so
 * it serves no plain read of them while it is not their primary (a reader then goes to
 * another replica). Forgotten when the node is no longer UP: it catches up from the
 * primaries before it serves again.
 *
 * <p>Nor does it apply a later write that changes such a key in part (a write at an
 * offset, a truncate to another size): {@link FencedWrites} refuses that commit, and its
 * primary, which hears so in the batch's answer, fails it unacknowledged and owes the key
 * to this node, whose repair is a put (in pieces staged here and applied whole at the
 * last, for a key too large for a frame: {@code Replicator}). Applied, the copy became old bytes with later pieces
 * on top, which this node served once a ring made it the primary (the fence dropped, below).
 *
 * <p>Forgotten too for a key this node is the primary of (a refusal then is not recorded,
 * and a ring that makes it the primary drops the fence): the primary's copy is the key's,
 * whatever an older primary applied (that one catches up from it before it serves again),
 * so once this node has been the primary its copy is current, and stays so when it is a
 * backup again: the next primary either caught up from it or got every write from it.
 * Kept, the fence outlived the change of primary and the node refused plain reads of a
 * current copy for as long as nobody wrote the key (the history IT's replica check).
 */
final class RefusedKeys {
  /** Each refused key with the stamp of its last refusal. Guarded by this. */
  private final Map<String, Long> keys = new HashMap<>();
  private long stamps;

  /** {@code txs} were refused here; {@code primaryHere}: the keys this node is primary of. */
  synchronized void refused(List<TxRequest> txs, Predicate<String> primaryHere) {
    for (TxRequest tx : txs) {
      for (TxOp op : tx.ops()) {
        if (!primaryHere.test(op.key())) {
          keys.put(op.key(), ++stamps);
        }
      }
    }
  }

  /** Drops the fence of every key this node is now the primary of. */
  synchronized void forget(Predicate<String> primaryHere) {
    keys.keySet().removeIf(primaryHere);
  }

  /**
   * The keys that {@code tx}, a primary's physical writes ({@code Replicator.physical}),
   * replaces whole: after it every replica holds the same there whatever it held before.
   * A put (a create or an exclusive put arrive as one) or a delete does; so does a
   * truncate to 0, which succeeds only on a key that exists on both replicas and leaves
   * it empty on both. A write at an offset or a truncate to another size keeps the bytes
   * around it, which here may be older than the primary's (the refused write): lifting
   * the fence on such a write would serve a mix of old and new bytes (BlobFS writes a file
   * in 1 MiB writes at offsets). Later ops of the transaction act on the known state.
   */
  static Set<String> replacedWhole(TxRequest tx) {
    Set<String> whole = new LinkedHashSet<>();
    for (TxOp op : tx.ops()) {
      if (op instanceof TxOp.Put || op instanceof TxOp.Delete
          || (op instanceof TxOp.Truncate t && t.size() == 0)) {
        whole.add(op.key());
      }
    }
    return whole;
  }

  /**
   * The stamp to hand {@link #applied} once a write that replaces {@code key} whole is
   * applied; 0: none.
   */
  synchronized long stamp(String key) {
    return keys.getOrDefault(key, 0L);
  }

  /** A write replacing {@code key} whole that began at {@code stamp} is applied here. */
  synchronized void applied(String key, long stamp) {
    if (stamp != 0) {
      keys.remove(key, stamp); // not if refused again meanwhile
    }
  }

  synchronized boolean lacks(String key) {
    return !keys.isEmpty() && keys.containsKey(key);
  }

  synchronized void clear() {
    keys.clear();
  }
}
