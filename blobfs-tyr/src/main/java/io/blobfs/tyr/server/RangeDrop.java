package io.blobfs.tyr.server;

import io.blobfs.tyr.api.BlobStat;
import io.blobfs.tyr.api.ErrorCode;
import io.blobfs.tyr.api.ReadCheck;
import io.blobfs.tyr.api.ScanResult;
import io.blobfs.tyr.api.TxOp;
import io.blobfs.tyr.api.TxRequest;
import io.blobfs.tyr.api.TyrException;
import io.blobfs.tyr.client.TyrClient;
import io.blobfs.tyr.engine.TyrEngine;
import io.blobfs.tyr.ring.Member;
import io.blobfs.tyr.ring.Ring;
import java.io.Closeable;
import java.io.IOException;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The second half of a join: a member drops the keys of ranges it handed over, once their
 * owners under its ring are all UP. A joining member is RECOVERING while it copies its
 * ranges ({@link Recovery}); the monitor marks it UP only once it has caught up, so an
 * owner that is UP holds every acknowledged write of the key. Until then the old holder
 * keeps its copy (it is no owner any more, so nothing reads or lists it: its only use is
 * that nothing is deleted before the new owner has it).
 *
 * <p>Each ring this node installs while UP starts a pass over its own keys. A key it holds
 * no replica of, whose owners are all UP and all hold it (each is asked, under this
 * ring's epoch), is deleted under a check of the local version read just before (a
 * conditional delete): a write that reached this copy since (none should, it is no owner,
 * but a later ring might make it one again) keeps it. Asking the owners is what makes a
 * ring changed by hand safe (vnodes, members, not through a join): its new owners never
 * copied the key, so the old copy stays, unreachable, as before. A key whose owners are
 * not all UP, or do not all hold it, is left for a later ring (so one deleted by a client
 * during a join stays here, unlisted and unserved); one held by a prepared cross-node
 * part, changed under the check, or whose owner could not be asked, is tried again after
 * a pause.
 */
final class RangeDrop implements Closeable {
  private static final Logger LOG = LoggerFactory.getLogger(RangeDrop.class);
  private static final int PAGE = 1000;
  private static final long RETRY_SECONDS = 5;

  private final Membership membership;
  private final TyrEngine engine;
  private final PeerAccess peerAccess;
  private final int maxFrameBytes;
  private final ScheduledExecutorService runner;

  RangeDrop(Membership membership, TyrEngine engine, PeerAccess peerAccess,
      int maxFrameBytes) {
    this(membership, engine, peerAccess, maxFrameBytes, null);
    membership.onInstall(r -> runner.execute(() -> run(r.epoch())));
    runner.execute(() -> run(membership.ring().epoch())); // a restart after a join
  }

  /**
   * A drop that runs only the passes its caller starts ({@link #pass}), asking the owners
   * through {@code asker}: for tests, which count the asks or act between ask and delete.
   */
  static RangeDrop manual(Membership membership, TyrEngine engine, Asker asker) {
    return new RangeDrop(membership, engine, PeerAccess.NONE, 8 << 20, asker);
  }

  private RangeDrop(Membership membership, TyrEngine engine, PeerAccess peerAccess,
      int maxFrameBytes, Asker asker) {
    this.asker = asker;
    this.membership = membership;
    this.engine = engine;
    this.peerAccess = peerAccess;
    this.maxFrameBytes = maxFrameBytes;
    this.runner = Executors.newSingleThreadScheduledExecutor(r -> {
      Thread t = new Thread(r, "tyr-range-drop");
      t.setDaemon(true);
      return t;
    });
  }

  /** What one pass did. */
  record Dropped(long keys, long bytes, long waiting, long retry) {}

  private void run(long epoch) {
    try {
      Dropped d = pass(epoch);
      if (d == null) {
        return;
      }
      if (d.keys() > 0 || d.waiting() > 0 || d.retry() > 0) {
        LOG.info("node {} dropped {} keys ({} bytes) of ranges it no longer holds under ring "
            + "epoch {}; {} wait for their owners to be UP, {} to be tried again",
            membership.self(), d.keys(), d.bytes(), epoch, d.waiting(), d.retry());
      }
      if (d.retry() > 0) {
        runner.schedule(() -> run(epoch), RETRY_SECONDS, TimeUnit.SECONDS);
      }
    } catch (Exception e) {
      LOG.warn("node {}: dropping handed-over ranges under epoch {} failed, again in {} s: {}",
          membership.self(), epoch, RETRY_SECONDS, e.toString());
      runner.schedule(() -> run(epoch), RETRY_SECONDS, TimeUnit.SECONDS);
    }
  }

  /** Asks one owner, under the pass's ring, whether it holds a key (see {@link #manual}). */
  interface Asker {
    boolean holds(Member owner, String key) throws IOException;
  }

  /** Null: ask the owners over the network. */
  private final Asker asker;

  /**
   * One pass under {@code epoch}, or null if this node is not an UP member under it. Per
   * key: the local version is read first, then the owners are asked, then the delete is
   * checked against that version, so the drop acts only on what it read. An owner that
   * could not answer is not asked again in this pass (each ask can cost a connect and a
   * request timeout, and a page holds a thousand keys): its keys are tried in the next.
   */
  Dropped pass(long epoch) throws IOException {
    Ring ring = membership.ring();
    Member self = membership.self();
    if (ring.epoch() != epoch || !ring.members().contains(self)
        || ring.state(self) != Ring.State.UP) {
      return null; // a newer ring's pass is queued; only an UP member hands over
    }
    long keys = 0;
    long bytes = 0;
    long waiting = 0;
    long retry = 0;
    Map<Member, TyrClient> peers = new HashMap<>();
    Asker ask = asker != null ? asker : (o, key) -> holds(ring, o, key, peers);
    java.util.Set<Member> failed = new java.util.HashSet<>();
    try {
      String cursor = null;
      do {
        ScanResult page = engine.scan("", cursor, PAGE);
        for (String key : page.keys()) {
          if (membership.ring().epoch() != epoch) {
            return new Dropped(keys, bytes, waiting, 0); // the newer ring's pass goes on
          }
          if (ring.isReplica(self, key)) {
            continue;
          }
          List<Member> owners = ring.owners(key);
          if (ring.readSet(key).size() != owners.size()) {
            waiting++; // an owner is not UP: it may not hold the key yet
            continue;
          }
          if (owners.stream().anyMatch(failed::contains)) {
            retry++; // an owner that could not answer in this pass: not asked again
            continue;
          }
          BlobStat s = engine.stat(key); // before asking: the delete is checked against it
          if (s.version() == 0) {
            continue;
          }
          Boolean held = heldByAll(key, owners, ask, failed);
          if (held == null) {
            retry++;
            continue;
          }
          if (!held) {
            waiting++; // never copied there (a ring changed by hand), or deleted meanwhile
            continue;
          }
          if (membership.ring().epoch() != epoch) {
            // a newer ring (one edited by hand could make this node an owner again) rules
            return new Dropped(keys, bytes, waiting, 0);
          }
          try {
            TyrClient.await(engine.commit(new TxRequest(List.of(new ReadCheck(key, s.version())),
                List.of(new TxOp.Delete(key, false)))));
            keys++;
            bytes += s.size();
          } catch (TyrException e) {
            if (e.code() != ErrorCode.CONFLICT) {
              throw e;
            }
            retry++; // changed since the stat, or held by a prepared part
          }
        }
        cursor = page.nextCursor();
      } while (cursor != null);
      return new Dropped(keys, bytes, waiting, retry);
    } finally {
      peers.values().forEach(TyrClient::close);
    }
  }

  /**
   * Whether every owner holds {@code key}; null if one could not say (it is added to
   * {@code failed}: not at this ring yet, moved on, or unreachable).
   */
  private static Boolean heldByAll(String key, List<Member> owners, Asker ask,
      java.util.Set<Member> failed) {
    for (Member o : owners) {
      try {
        if (!ask.holds(o, key)) {
          return false;
        }
      } catch (IOException | RuntimeException e) {
        failed.add(o);
        return null;
      }
    }
    return true;
  }

  private boolean holds(Ring ring, Member o, String key, Map<Member, TyrClient> peers)
      throws IOException {
    TyrClient c = peers.computeIfAbsent(o, m -> {
      TyrClient t = new TyrClient(peerAccess.client(m)
          .withTimeouts(Duration.ofSeconds(5), Duration.ofSeconds(30)).withConnections(1)
          .withMaxFrameBytes(maxFrameBytes));
      t.routeUnder(ring::epoch);
      return t;
    });
    return TyrClient.await(c.stat(key)).exists();
  }

  @Override
  public void close() {
    runner.shutdownNow();
  }
}
