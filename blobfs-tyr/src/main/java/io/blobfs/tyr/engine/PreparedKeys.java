package io.blobfs.tyr.engine;

import io.blobfs.tyr.api.ErrorCode;
import io.blobfs.tyr.api.ReadCheck;
import io.blobfs.tyr.api.TxOp;
import io.blobfs.tyr.api.TxRequest;
import io.blobfs.tyr.api.TyrException;
import java.util.HashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * The keys of the transactions prepared on this node (the participant's side of a
 * cross-node commit): from its prepare until its decision, no other commit may read-check
 * or change a key a prepared transaction names, so what the prepare validated still holds
 * when the decision applies it. Every access is under the engine's commit lock.
 *
 * <p>A commit that meets a reserved key is refused at once with {@link ErrorCode#CONFLICT}
 * (retryable) instead of waiting for the decision: waiting would hold the commit lock, or
 * need a queue whose waits could close a cycle between two cross-node transactions that
 * prepare on two nodes in opposite orders (a distributed deadlock). Refusing is
 * deadlock-free, and the clients' retries with back-off do the waiting.
 */
final class PreparedKeys {
  /** Key to the id of the prepared transaction that reserved it. */
  private final Map<String, String> owners = new HashMap<>();
  private final Map<String, Set<String>> byTx = new HashMap<>();

  boolean isEmpty() {
    return owners.isEmpty();
  }

  /** Every key {@code tx} names, checked or changed, in order. */
  static Set<String> keysOf(TxRequest tx) {
    Set<String> keys = new LinkedHashSet<>();
    for (ReadCheck r : tx.reads()) {
      keys.add(r.key());
    }
    for (TxOp op : tx.ops()) {
      keys.add(op.key());
    }
    return keys;
  }

  /** CONFLICT if a key of {@code tx} is reserved by a prepared transaction other than {@code txId}. */
  void checkFree(TxRequest tx, String txId) throws TyrException {
    if (owners.isEmpty()) {
      return;
    }
    for (String key : keysOf(tx)) {
      String holder = owners.get(key);
      if (holder != null && !holder.equals(txId)) {
        throw new TyrException(ErrorCode.CONFLICT, "blob " + key + " " + TyrException.HELD
            + " (" + holder + ") not yet decided; retry");
      }
    }
  }

  /** Reserves the keys of {@code tx} for {@code txId} (after {@link #checkFree}). */
  void reserve(String txId, TxRequest tx) {
    Set<String> keys = keysOf(tx);
    for (String k : keys) {
      owners.put(k, txId);
    }
    byTx.put(txId, keys);
  }

  boolean holds(String txId) {
    return byTx.containsKey(txId);
  }

  void release(String txId) {
    Set<String> keys = byTx.remove(txId);
    if (keys != null) {
      for (String k : keys) {
        owners.remove(k, txId);
      }
    }
  }

  List<String> transactions() {
    return List.copyOf(byTx.keySet());
  }
}
