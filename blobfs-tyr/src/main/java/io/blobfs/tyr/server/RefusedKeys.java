package io.blobfs.tyr.server;

import io.blobfs.tyr.api.TxOp;
import io.blobfs.tyr.api.TxRequest;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * As backup: the keys of replicated writes this node refused (a batch under another ring
 * epoch, or one that does not follow its stream). Their primary applied those writes and
 * may have served them to readers; until a later replicated write of the key is applied
 * here (the primary's repair, {@link OwedKeys}, or any new write), this node's copy is
 * older than what readers may have seen, so it serves no plain read of them while it is
 * not their primary (a reader then goes to another replica). Forgotten when the node is
 * no longer UP: it catches up from the primaries before it serves again.
 */
final class RefusedKeys {
  /** Each refused key with the stamp of its last refusal. Guarded by this. */
  private final Map<String, Long> keys = new HashMap<>();
  private long stamps;

  synchronized void refused(List<TxRequest> txs) {
    for (TxRequest tx : txs) {
      for (TxOp op : tx.ops()) {
        keys.put(op.key(), ++stamps);
      }
    }
  }

  /** The stamp to hand {@link #applied} once a write of {@code key} is applied; 0: none. */
  synchronized long stamp(String key) {
    return keys.getOrDefault(key, 0L);
  }

  /** A write of {@code key} that began at {@code stamp} is applied here. */
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
