package io.blobfs.tyr.server;

import io.blobfs.tyr.engine.TyrEngine;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The local-read grants one connection holds. A connection releases only its own grants
 * (ids are sequential, so another client could guess them), and all of them when it
 * closes, so a client that dies frees its pins at once rather than at the lease's end.
 */
final class ConnectionGrants {
  private final TyrEngine engine;
  private final Set<Long> ids = ConcurrentHashMap.newKeySet();
  private volatile boolean closed;

  ConnectionGrants(TyrEngine engine) {
    this.engine = engine;
  }

  /** A grant made for this connection; released at once if it closed meanwhile. */
  void add(long id) {
    ids.add(id);
    if (closed && ids.remove(id)) {
      engine.release(id);
    }
  }

  /** False if the id is not one of this connection's live grants. */
  boolean release(long id) {
    return ids.remove(id) && engine.release(id);
  }

  void closeAll() {
    closed = true;
    for (Long id : ids) {
      if (ids.remove(id)) {
        engine.release(id);
      }
    }
  }
}
