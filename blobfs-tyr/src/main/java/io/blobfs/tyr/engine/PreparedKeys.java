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
  /**
   * Key to the prepared parts that hold it, in the order they reserved it. One part as a
   * rule (a prepare meets a held key with CONFLICT), several only where a backup took over
   * shares of one key from a lost primary: each then keeps the key until it is released
   * (releasing one never frees the key for a plain commit while another part holds it),
   * and they apply one at a time in that order, which is the old primary's.
   */
  private final Map<String, LinkedHashSet<String>> holders = new HashMap<>();
  private final Map<String, Set<String>> byTx = new HashMap<>();

  boolean isEmpty() {
    return holders.isEmpty();
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

  /**
   * CONFLICT if a key of {@code tx} is held by a prepared part other than {@code txId}
   * (null: a plain commit), unless {@code txId} holds it first: the parts holding one key
   * apply in the order they reserved it, never two interleaved with a plain commit.
   */
  void checkFree(TxRequest tx, String txId) throws TyrException {
    if (holders.isEmpty()) {
      return;
    }
    for (String key : keysOf(tx)) {
      LinkedHashSet<String> held = holders.get(key);
      if (held == null) {
        continue;
      }
      String first = held.iterator().next();
      if (!first.equals(txId)) {
        throw new TyrException(ErrorCode.CONFLICT, "blob " + key + " " + TyrException.HELD
            + " (" + first + ") not yet decided; retry");
      }
    }
  }

  /** Reserves the keys of {@code tx} for {@code txId} (after {@link #checkFree}), last. */
  void reserve(String txId, TxRequest tx) {
    Set<String> keys = keysOf(tx);
    Set<String> had = byTx.get(txId);
    for (String k : keys) {
      holders.computeIfAbsent(k, x -> new LinkedHashSet<>()).add(txId);
    }
    if (had != null) {
      keys.addAll(had);
    }
    byTx.put(txId, keys);
  }

  /**
   * {@code txId} keeps only the keys of {@code tx}, each at its place among the key's
   * holders: no moment where a key is free, or held by this part behind a later one.
   */
  void narrow(String txId, TxRequest tx) {
    Set<String> had = byTx.get(txId);
    if (had == null) {
      reserve(txId, tx);
      return;
    }
    Set<String> keys = keysOf(tx);
    for (String k : had) {
      if (!keys.contains(k)) {
        unhold(k, txId);
      }
    }
    for (String k : keys) {
      holders.computeIfAbsent(k, x -> new LinkedHashSet<>()).add(txId); // kept in place
    }
    byTx.put(txId, keys);
  }

  /** Whether {@code txId} is the first holder of every key of {@code tx}. */
  boolean first(String txId, TxRequest tx) {
    for (String key : keysOf(tx)) {
      LinkedHashSet<String> held = holders.get(key);
      if (held == null || !held.iterator().next().equals(txId)) {
        return false;
      }
    }
    return true;
  }

  /**
   * For each key of {@code tx} that {@code txId} holds, the parts holding it behind
   * {@code txId}, in their order (issue 13, bug 3: the shares a backup must rebase when
   * {@code txId}'s write of the key applies there). Keys with none behind are left out.
   */
  Map<String, List<String>> behind(String txId, TxRequest tx) {
    Map<String, List<String>> out = new java.util.LinkedHashMap<>();
    for (String key : keysOf(tx)) {
      LinkedHashSet<String> held = holders.get(key);
      if (held == null || !held.contains(txId)) {
        continue;
      }
      List<String> after = new java.util.ArrayList<>();
      boolean past = false;
      for (String h : held) {
        if (past) {
          after.add(h);
        } else if (h.equals(txId)) {
          past = true;
        }
      }
      if (!after.isEmpty()) {
        out.put(key, List.copyOf(after));
      }
    }
    return out;
  }

  boolean holds(String txId) {
    return byTx.containsKey(txId);
  }

  void release(String txId) {
    Set<String> keys = byTx.remove(txId);
    if (keys != null) {
      for (String k : keys) {
        unhold(k, txId);
      }
    }
  }

  private void unhold(String key, String txId) {
    LinkedHashSet<String> held = holders.get(key);
    if (held != null && held.remove(txId) && held.isEmpty()) {
      holders.remove(key);
    }
  }

  List<String> transactions() {
    return List.copyOf(byTx.keySet());
  }
}
