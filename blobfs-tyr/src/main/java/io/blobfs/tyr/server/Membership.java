package io.blobfs.tyr.server;

import io.blobfs.store.StoreOptions;
import io.blobfs.tyr.api.ReadCheck;
import io.blobfs.tyr.api.TxOp;
import io.blobfs.tyr.protocol.Request;
import io.blobfs.tyr.ring.Member;
import io.blobfs.tyr.ring.Ring;
import io.blobfs.tyr.ring.WrongEpochException;
import java.io.Closeable;
import java.io.IOException;
import java.io.Reader;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;
import java.util.HashMap;
import java.util.List;
import java.time.Duration;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A node's place in a Týr cluster: who it is and the ring it serves under. Every keyed
 * request is checked against the ring before the engine sees it: a request made under
 * another epoch, or naming a key this node holds no replica of, is refused with
 * {@link WrongEpochException} carrying this node's ring, and nothing is done. So a client
 * with a stale ring learns the new one and goes elsewhere; it never reads or writes the
 * wrong node.
 *
 * <p>Server options (all {@code cluster-*}; none: a lone node, no checks):
 * <pre>
 * cluster-nodes        host:port,host:port,...  the members, spelt as clients reach them
 * cluster-self         this node's entry in the list (default bind:port)
 * cluster-join         false  with cluster-file: this node is joining, so it may start
 *                             before the ring lists it (without it, a node the ring does
 *                             not list refuses to start: a wrong cluster-self fails fast)
 * cluster-epoch        1      raise it whenever the list or settings change
 * cluster-vnodes       128    points per member on the ring
 * cluster-replication  1      replicas per key
 * cluster-tx-timeout   10s    a prepared cross-node transaction's wait for its decision
 * cluster-file         a properties file with nodes, epoch, vnodes, replication instead;
 *                      re-read when it changes (checked every second), so a running node
 *                      moves to a new ring; a ring with a lower epoch is ignored, and
 *                      refused at start if older than the newest this node installed
 *                      (recorded in its data dir: {@link #recordEpochs}). It may
 *                      also list members that are down ({@code down=}) or catching up
 *                      ({@code recovering=}): see {@link Ring.State} and {@link Recovery}
 * </pre>
 *
 * <p><b>Failover.</b> Only UP members serve: a node not UP under its ring refuses reads,
 * writes and scans; writes go to a key's first UP owner, and a backup takes a primary's
 * replication only under the same epoch and only from the key's primary under it. A node
 * also counts the commits it has admitted under each epoch, and its unresolved prepared
 * cross-node parts, so that {@link #settled} can tell a recovering peer once none admitted
 * under an older ring is still running.
 *
 * <p>A ring change fences stale clients. A member added to the ring (a join) copies its
 * ranges while RECOVERING ({@link Recovery}); the members that handed them over drop
 * them once it is UP ({@link RangeDrop}). The check is made when the request arrives; a ring installed while a request runs
 * does not stop that request.
 */
public final class Membership implements Closeable {
  private static final Logger LOG = LoggerFactory.getLogger(Membership.class);
  public static final java.util.Set<String> KEYS = java.util.Set.of("cluster-nodes",
      "cluster-self", "cluster-epoch", "cluster-vnodes", "cluster-replication", "cluster-file",
      "cluster-tx-timeout", "cluster-join");

  /** How long a cross-node transaction may stay prepared before it is resolved. */
  public static final Duration DEFAULT_TX_TIMEOUT = Duration.ofSeconds(10);

  private final Member self;
  private volatile Ring ring;
  private ScheduledExecutorService watcher;
  private volatile Duration txTimeout = DEFAULT_TX_TIMEOUT;
  /** Commits running, by the epoch of the ring they were admitted under. Guarded by this. */
  private final java.util.TreeMap<Long, Integer> running = new java.util.TreeMap<>();
  /**
   * Prepared cross-node parts held here, by the epoch they are counted under (see
   * {@link #admit(long)}): apart from {@link #running}, as a hand-over waits only for
   * commits (a part may be held up to the cluster-tx timeout, or for ever while its
   * coordinator is lost). Guarded by this.
   */
  private final java.util.TreeMap<Long, Integer> parts = new java.util.TreeMap<>();
  /** Waiters of {@link #settled}. Guarded by this. */
  private final List<Settling> settling = new java.util.ArrayList<>();

  /** A waiter of {@link #settled}; {@code commitsOnly}: prepared parts left out. */
  private record Settling(java.util.concurrent.CompletableFuture<Ring> future,
      boolean commitsOnly) {}
  /** The epoch this node last caught up under as a RECOVERING member (see Recovery). */
  private long caughtUp;
  private final List<java.util.function.Consumer<Ring>> listeners =
      new java.util.concurrent.CopyOnWriteArrayList<>();
  private final List<java.util.function.Consumer<Ring>> handedOverListeners =
      new java.util.concurrent.CopyOnWriteArrayList<>();
  /**
   * Set while this node, just UP again, has not yet taken its keys back from the stand-in
   * primaries that served them while it was not UP: see {@link #handOver}. Null otherwise.
   */
  private volatile HandOver handOver;
  /** Where installed epochs are recorded (see recordEpochs); null: not recorded. */
  private Path epochFile;

  /**
   * A node that became UP under {@code epoch}, having been RECOVERING under {@code from}:
   * the primaries of its keys under {@code from} may still commit them under that ring.
   */
  record HandOver(Ring from, long epoch) {}

  /** Set once {@link #handedOver} has begun: no more stand-in batches are taken. */
  private boolean handOverClosing;
  /** Stand-in batches taken for the hand-over and not yet applied. Guarded by this. */
  private int handOverBatches;

  public Membership(Member self, Ring ring) {
    this(self, ring, false);
  }

  /**
   * With {@code mayJoin}, {@code self} need not be a member yet: a node started to join a
   * cluster (its ring file is the cluster's) serves nothing until the monitor adds it to
   * the ring as RECOVERING ({@code ClusterMonitor --join}); see the README's "Adding a
   * node".
   */
  public Membership(Member self, Ring ring, boolean mayJoin) {
    this.self = self;
    this.ring = ring;
    if (!ring.members().contains(self)) {
      if (!mayJoin) {
        throw new IllegalArgumentException("this node, " + self + ", is not a member of "
            + ring + " (set cluster-self to its entry)");
      }
      LOG.warn("node {} is not a member of {}: it serves nothing until a ring lists it "
          + "(a joining node; check cluster-self if it is not one)", self, ring);
    }
  }

  /** Whether this node is a member of its ring (not, while it waits to join). */
  public boolean isMember() {
    return ring.members().contains(self);
  }

  public Member self() {
    return self;
  }

  public Ring ring() {
    return ring;
  }

  /**
   * How long a participant holds a prepared cross-node transaction before it asks the
   * coordinator for the decision, and a coordinator before it aborts one it has not
   * decided (option {@code cluster-tx-timeout}).
   */
  public Duration txTimeout() {
    return txTimeout;
  }

  public Membership withTxTimeout(Duration timeout) {
    if (timeout.isNegative() || timeout.isZero()) {
      throw new IllegalArgumentException("transaction timeout must be positive: " + timeout);
    }
    this.txTimeout = timeout;
    return this;
  }

  /**
   * Moves to {@code next} if its epoch is newer; the same ring again is a no-op. A ring
   * that is older, or different under the same epoch, is refused: epochs only go forward
   * and name one ring each.
   */
  public synchronized void install(Ring next) {
    Ring now = ring;
    if (next.equals(now)) {
      return;
    }
    if (next.epoch() < now.epoch()) {
      throw new io.blobfs.tyr.ring.OlderRingException("node " + self + " refuses ring epoch "
          + next.epoch() + ": it is not newer than epoch " + now.epoch() + ", which it has "
          + "installed (" + next + ")",
          next.epoch(), now.epoch());
    }
    if (next.epoch() == now.epoch()) {
      throw new IllegalArgumentException("ring epoch " + next.epoch() + " is not newer than "
          + now.epoch() + ": " + next);
    }
    if (next.epoch() == now.epoch() + 1) {
      for (Member m : next.members()) {
        if (now.state(m) == Ring.State.DOWN && next.state(m) == Ring.State.UP) {
          // It missed writes while down: it must catch up (RECOVERING) before it serves.
          throw new IllegalArgumentException(m + " goes from DOWN to UP in one epoch (" + now
              + " -> " + next + "); it must be RECOVERING in between");
        }
      }
    }
    // Recorded before anything acts on it (issue 13): once this node may have served, or
    // refused a replication stream, under the new epoch, a restart must not take it back
    // to an older ring (see recordEpochs). A failed write leaves the ring not installed.
    // Two fsyncs (the temporary file, the directory) under this lock, which admit() and
    // withRing() also take: requests stall for them, a few ms on a local disk, at each ring
    // change only (rare: a member down, recovering or up). Recording outside the lock would
    // let a request be checked under the new ring before its epoch is durable.
    if (epochFile != null) {
      try {
        writeEpoch(epochFile, next.epoch());
      } catch (IOException e) {
        throw new java.io.UncheckedIOException("node " + self + ": cannot record ring epoch "
            + next.epoch() + " in " + epochFile + ", ring not installed", e);
      }
    }
    // Before the ring: a request checked under the new ring must see the hand-over.
    if (next.state(self) != Ring.State.UP) {
      handOver = null; // it serves nothing, and catches up again before it does
    } else if (now.state(self) != Ring.State.UP && now.members().contains(self)) {
      handOver = new HandOver(now, next.epoch());
      handOverClosing = false;
    }
    notifyAll(); // a handedOver waiting for batches looks at the hand-over again
    ring = next;
    LOG.info("node {} now serves {}", self, next);
    completeSettled();
    listeners.forEach(l -> l.accept(next));
  }

  /**
   * Keeps this node's epoch from going back across restarts (issue 13): reads the highest
   * ring epoch it installed from {@code dataDir}'s {@value #EPOCH_FILE} and refuses the
   * ring it starts on if that is older ({@link io.blobfs.tyr.ring.OlderRingException},
   * naming both epochs); otherwise records the ring's epoch there, durably, and from now on
   * every ring's before it is installed. Called by the server once its data directory is
   * open, before anything acts on the ring. The replication stream's rules assume a
   * backup's epoch never goes back (a backup that refused a primary's probe under epoch N
   * must not later take its stream under N); the ring file alone does not ensure it, as a
   * host crash or a stale copy can bring back an older one. A fresh data dir (no file)
   * starts on any ring.
   */
  public synchronized void recordEpochs(Path dataDir) throws IOException {
    Path file = dataDir.resolve(EPOCH_FILE);
    if (Files.exists(file)) {
      long installed;
      try {
        installed = Long.parseLong(Files.readString(file).strip());
      } catch (NumberFormatException e) {
        // Never a half-written record (Durable.replace): edited by hand or damaged. The
        // node cannot know how far it went, so it does not guess (ring-epoch2 review S4).
        throw new CorruptEpochRecordException("node " + self + " refuses to start: " + file
            + " is not a ring epoch (" + e.getMessage() + "). Way out: write in it the "
            + "highest ring epoch recorded on any node (their " + EPOCH_FILE + " files) if "
            + "this node's ring file has at least that epoch; else " + wayOut(file), e);
      }
      if (ring.epoch() < installed) {
        throw new io.blobfs.tyr.ring.OlderRingException("node " + self + " refuses to start "
            + "on ring epoch " + ring.epoch() + ": it has installed ring epoch " + installed
            + " (recorded in " + file + "); its ring file is older than one it served under. "
            + "Way out: " + wayOut(file), ring.epoch(), installed);
      }
      if (ring.epoch() == installed) {
        epochFile = file;
        return;
      }
    }
    writeEpoch(file, ring.epoch());
    epochFile = file;
  }

  /**
   * The way out of a refused start, in the one form that keeps epochs meaning one ring
   * each (ring-epoch2 review S1): any new epoch must be above the highest recorded on ANY
   * node, and be in the ring every node reads; raising one node's alone skews the epochs
   * (WRONG_EPOCH, refused streams), and a hand-written per-host copy the monitor later
   * reuses would make one epoch name two rings.
   */
  private static String wayOut(Path file) {
    return "restore the current ring file, or write a new ring with an epoch above the "
        + "highest recorded on ANY node (each node's <data-dir>/" + EPOCH_FILE + "), in the "
        + "one ring all nodes read: the monitor's ring file (not a per-host copy), or with "
        + "static cluster-nodes the same cluster-epoch on every node (raising this node's "
        + "alone skews the epochs); only when re-creating the whole cluster on these data "
        + "dirs, with every node stopped, delete " + file + " on every node (it gives up "
        + "the guard: a node may then go back in epoch, and a backup take a stream it "
        + "refused)";
  }

  /** A node's {@value #EPOCH_FILE} record that does not hold an epoch (hand-edited, damaged). */
  public static final class CorruptEpochRecordException extends IOException {
    private static final long serialVersionUID = 1L;

    CorruptEpochRecordException(String message, Throwable cause) {
      super(message, cause);
    }
  }

  /** The file in a node's data directory holding the highest ring epoch it installed. */
  public static final String EPOCH_FILE = "ring-epoch";

  private static void writeEpoch(Path file, long epoch) throws IOException {
    io.blobfs.tyr.engine.Durable.replace(file,
        (epoch + "\n").getBytes(java.nio.charset.StandardCharsets.UTF_8), true);
  }

  /**
   * The hand-over this node still waits for, or null. A node marked UP again (RECOVERING
   * under the ring before) is the primary of keys that another member, the stand-in, was
   * the primary of until then; nodes load a ring each at its own time, so the stand-in may
   * still commit them under the older ring after this node has the new one. Such a commit
   * is applied on the stand-in and may be read there; this node used to refuse its batch
   * (another epoch), the stand-in then owed the key to it but stopped owing it once it
   * was no longer the primary, and the write was lost, though read. So until every
   * stand-in has moved on ({@link #handedOver}, once each answered {@link #settled} at
   * the new epoch, i.e. none of its commits admitted under an older ring still runs), this
   * node takes their batches under the ring before for those keys (it has made no write
   * of them yet, so their order is the stand-in's) and serves none of the keys it is the
   * primary of (their last writes may still come), nor a scan.
   */
  HandOver handOver() {
    return handOver;
  }

  /**
   * Every stand-in of the hand-over under {@code epoch} has moved on (see handOver), or the
   * hand-over's bound has passed: no stand-in's batch is taken from now on, and once those
   * taken are applied (a late one applied after this node's first write of the key would
   * overwrite it) the node serves its keys.
   */
  synchronized void handedOver(long epoch) throws InterruptedException {
    HandOver h = handOver;
    if (h != null && h.epoch() == epoch) {
      handOverClosing = true;
      while (handOverBatches > 0 && handOver == h) {
        wait();
      }
      if (handOver != h) {
        return; // not UP any more meanwhile
      }
      handOver = null;
      LOG.info("node {} took its keys back from their stand-in primaries under ring epoch {}",
          self, epoch);
      Ring now = ring;
      try {
        handedOverListeners.forEach(l -> l.accept(now));
      } catch (RuntimeException e) {
        // The hand-over has ended whatever a listener met: barriers held back for it
        // must still complete, or the next ring change waits on this node for ever.
        LOG.error("node {}: taking over shares at the end of a hand-over failed", self, e);
        throw e;
      } finally {
        completeSettled(); // with the parts taken over just now counted
      }
    }
  }

  /**
   * Calls {@code l} with the ring in force each time a hand-over ends (see
   * {@link #handedOver}), under the install's lock as {@link #onInstall}'s listeners are:
   * what a node waits for before it takes over the shares of its taken-back keys.
   */
  void onHandedOver(java.util.function.Consumer<Ring> l) {
    handedOverListeners.add(l);
  }

  /** Calls {@code l} with every ring installed from now on (under the install's lock). */
  void onInstall(java.util.function.Consumer<Ring> l) {
    listeners.add(l);
  }

  /**
   * The ring a commit runs under, counted as running until {@link #release}d: what
   * {@link #settled} waits for. Taken under the same lock as {@link #install}, so a commit
   * admitted after an install sees the new ring.
   */
  synchronized Ring admit() {
    Ring r = ring;
    running.merge(r.epoch(), 1, Integer::sum);
    return r;
  }

  synchronized void release(Ring admitted) {
    running.computeIfPresent(admitted.epoch(), (e, n) -> n == 1 ? null : n - 1);
    completeSettled();
  }

  /**
   * Counts one more prepared cross-node part as held under {@code epoch} (at most the
   * ring's), until {@link #release(long)}d. A part is counted so from its prepare (or
   * takeover, or a restart) until it is applied, aborted or dropped: {@link #settled} then
   * waits for it, so a node returning to the part's keys cannot finish its catch-up, nor be
   * marked UP, while a part it never received is unresolved (see {@code Transactions}).
   */
  synchronized void admit(long epoch) {
    parts.merge(epoch, 1, Integer::sum);
  }

  /** A commit {@link #admit()}ted under {@code admitted} goes on as a held prepared part. */
  synchronized void held(Ring admitted) {
    running.computeIfPresent(admitted.epoch(), (e, n) -> n == 1 ? null : n - 1);
    parts.merge(admitted.epoch(), 1, Integer::sum);
    completeSettled(); // a commits-only waiter (a hand-over) no longer waits for it
  }

  /** Counts a prepared part held under the ring in force; returns that ring's epoch. */
  synchronized long admitPart() {
    admit(ring.epoch());
    return ring.epoch();
  }

  synchronized void release(long epoch) {
    parts.computeIfPresent(epoch, (e, n) -> n == 1 ? null : n - 1);
    completeSettled();
  }

  /**
   * Runs {@code f} with the ring in force, under the install's lock: no ring is installed
   * meanwhile, and {@code f} runs as an install's listener does (admit is reentrant).
   */
  synchronized void withRing(java.util.function.Consumer<Ring> f) {
    f.accept(ring);
  }

  /**
   * Completes with this node's ring once it is at epoch {@code epoch} or later and no
   * commit admitted under an earlier ring is still running: from then on every write this
   * node makes goes to the backups of a ring at least that new. A recovering node waits
   * for this on every UP member before it copies from them, so that no write it misses
   * can be acknowledged without reaching it (see {@link Recovery}). On a RECOVERING node
   * it also waits until the node has caught up under that ring: what tells a monitor it
   * may be marked UP.
   */
  synchronized java.util.concurrent.CompletableFuture<Ring> settled(long epoch) {
    return settled(epoch, false);
  }

  /**
   * As {@link #settled(long)}; with {@code commitsOnly}, held prepared parts are left out:
   * what a node handing over waits for (see {@link #handOver}). A part's keys are not
   * written until it is applied, and its apply is a commit admitted under the ring of the
   * day, so the parts do not stand between the stand-in and its last batches; waiting for
   * them held the hand-over up to the cluster-tx timeout, or for ever.
   */
  synchronized java.util.concurrent.CompletableFuture<Ring> settled(long epoch,
      boolean commitsOnly) {
    java.util.concurrent.CompletableFuture<Ring> f =
        new java.util.concurrent.CompletableFuture<Ring>();
    if (epoch > ring.epoch()) {
      f.completeExceptionally(new WrongEpochException("node " + self + " is at epoch "
          + ring.epoch() + ", not yet " + epoch, ring));
      return f;
    }
    settling.add(new Settling(f, commitsOnly));
    completeSettled();
    return f;
  }

  /** Recovery's word that this node holds every write of its ranges under {@code epoch}. */
  synchronized void caughtUp(long epoch) {
    caughtUp = Math.max(caughtUp, epoch);
    completeSettled();
  }

  private synchronized void completeSettled() {
    if (settling.isEmpty() || (!running.isEmpty() && running.firstKey() < ring.epoch())) {
      return;
    }
    if (ring.state(self) == Ring.State.RECOVERING && caughtUp < ring.epoch()) {
      return; // a recovering node is settled once it has caught up (what a monitor asks)
    }
    // Not while handing over either: the shares this node holds for the keys it takes
    // back are taken over, and counted, only at the end (Transactions.follow), and the
    // stand-in stops counting its part when it loads this ring, before that end.
    boolean partsSettled = handOver == null
        && (parts.isEmpty() || parts.firstKey() >= ring.epoch());
    for (var it = settling.iterator(); it.hasNext(); ) {
      Settling w = it.next();
      if (w.commitsOnly() || partsSettled) {
        w.future().complete(ring);
        it.remove();
      }
    }
  }

  /** Refuses {@code request} unless it is made under this epoch and names only our keys. */
  void check(Request request) throws WrongEpochException {
    Ring r = ring;
    Request inner = request;
    if (request instanceof Request.Replicate rep) {
      if (checkReplicate(r, rep)) {
        handOverBatchDone(); // checked only, not applied
      }
      return;
    }
    if (request instanceof Request.Routed routed) {
      if (routed.epoch() != r.epoch()) {
        throw new WrongEpochException("request made under ring epoch " + routed.epoch()
            + ", node " + self + " is at epoch " + r.epoch(), r);
      }
      inner = routed.inner();
    }
    if (!r.members().contains(self) && !(inner instanceof Request.Ping)) {
      throw new WrongEpochException("node " + self + " is not a member of the ring under "
          + "epoch " + r.epoch() + " (it waits to join): it serves nothing", r);
    }
    if (r.state(self) != Ring.State.UP && (inner instanceof Request.Stat
        || inner instanceof Request.Read || inner instanceof Request.Grant
        || inner instanceof Request.Prepare || inner instanceof Request.Commit
        || inner instanceof Request.Scan || inner instanceof Request.Confirm)) {
      // Down or still catching up: it may lack acknowledged writes.
      throw new WrongEpochException("node " + self + " is " + r.state(self)
          + " under ring epoch " + r.epoch() + ": it serves nothing until it is UP", r);
    }
    HandOver h = handOver;
    if (h != null && inner instanceof Request.Scan) {
      throw handingOver(r, h, "a scan");
    }
    if (inner instanceof Request.Stat s) {
      own(r, s.key());
      notHandingOver(r, h, s.key());
    } else if (inner instanceof Request.Read rd) {
      own(r, rd.key());
      notHandingOver(r, h, rd.key());
    } else if (inner instanceof Request.Grant g) {
      own(r, g.key());
      notHandingOver(r, h, g.key());
    } else if (inner instanceof Request.Prepare p) {
      // A cross-node part is prepared, and later applied, on the primary of its keys.
      for (ReadCheck rc : p.tx().reads()) {
        primary(r, rc.key());
      }
      for (TxOp op : p.tx().ops()) {
        primary(r, op.key());
      }
    } else if (inner instanceof Request.Confirm c) {
      // Only the primary knows what its backups confirmed (OwedKeys).
      primary(r, c.key());
    } else if (inner instanceof Request.Commit c) {
      // Writes go to the primary, which orders them and forwards them to the backups;
      // checks too, as versions are the primary's commit numbers.
      for (ReadCheck rc : c.tx().reads()) {
        primary(r, rc.key());
      }
      for (TxOp op : c.tx().ops()) {
        primary(r, op.key());
      }
    }
    // A scan names no key: each node lists its own, and clients merge them.
  }

  private void primary(Ring r, String key) throws WrongEpochException {
    if (!r.primary(key).equals(self)) {
      throw new WrongEpochException("node " + self + " is not the primary of '" + key
          + "' under ring epoch " + r.epoch() + " (its replicas: " + r.owners(key)
          + "): writes go to the primary", r);
    }
    notHandingOver(r, handOver, key);
  }

  /** Refuses {@code key} while its stand-in may still commit it (see {@link #handOver}). */
  private void notHandingOver(Ring r, HandOver h, String key) throws WrongEpochException {
    if (h != null && r.primary(key).equals(self)) {
      throw handingOver(r, h, "'" + key + "'");
    }
  }

  private WrongEpochException handingOver(Ring r, HandOver h, String what) {
    // Typed: retried by the client after a pause up to its op timeout (no newer ring will
    // send the request elsewhere); the hand-over takes about as long as the stand-in's
    // load of the ring file, and at most Recovery.HAND_OVER_BOUND.
    return new io.blobfs.tyr.ring.HandingOverException("node " + self + " is UP again under "
        + "ring epoch " + h.epoch() + " and waits for the members that stood in for it under epoch "
        + h.from().epoch() + " to finish their writes: " + what + " is not served yet", r);
  }

  /**
   * Checks {@code rep} as {@link #check} does; true if it was taken as a stand-in's batch
   * of a hand-over (see {@link #handOver}), which the caller then applies and reports with
   * {@link #handOverBatchDone}: the hand-over does not end, and this node serves none of
   * the keys it took back, while such a batch is still being applied.
   */
  boolean checkBatch(Request.Replicate rep) throws WrongEpochException {
    return checkReplicate(ring, rep);
  }

  /** A batch {@link #checkBatch} took for a hand-over has been applied (or failed). */
  synchronized void handOverBatchDone() {
    handOverBatches--;
    notifyAll();
  }

  /** A backup takes writes only from the primary of each key, under the same ring. */
  private boolean checkReplicate(Ring r, Request.Replicate rep) throws WrongEpochException {
    if (rep.epoch() != r.epoch()) {
      HandOver h = handOver;
      if (h != null && rep.epoch() == h.from().epoch() && rep.prepares().isEmpty()
          && r.upMembers().stream().anyMatch(m -> m.id().equals(rep.source()))
          && takenBack(r, rep)) {
        // A stand-in's last writes under the ring before this node was UP again: taken,
        // as a backup under that ring, while this node serves none of these keys and has
        // written none of them (see handOver). A batch checked here is counted as running
        // (TyrService admits it first), which the hand-over waits for if the stand-in is
        // marked DOWN meanwhile (Recovery.handOver).
        checkSources(h.from(), rep);
        synchronized (this) {
          // Counted under the lock handedOver closes the hand-over with: a batch either
          // is counted before, and handedOver waits for it, or is refused.
          if (handOver == h && !handOverClosing) {
            handOverBatches++;
            return true;
          }
        }
      }
      throw new WrongEpochException("replication from " + rep.source() + " under ring epoch "
          + rep.epoch() + ", node " + self + " is at epoch " + r.epoch(), r);
    }
    checkSources(r, rep);
    return false;
  }

  /**
   * Whether every key {@code rep} writes is one this node took back (its primary under
   * {@code r}), or one whose primary under {@code r} is still the sender, with this node
   * among its backups: the same roles under both rings, so taking the batch is what a
   * backup at the older ring does (a stand-in's batch mixes both kinds: refusing it whole
   * lost the taken-back key's write as before).
   */
  private boolean takenBack(Ring r, Request.Replicate rep) {
    for (io.blobfs.tyr.api.TxRequest tx : rep.txs()) {
      for (TxOp op : tx.ops()) {
        Member primary = r.primary(op.key());
        if (!primary.equals(self) && !(primary.id().equals(rep.source())
            && r.backups(op.key()).contains(self))) {
          return false;
        }
      }
    }
    return true;
  }

  private void checkSources(Ring r, Request.Replicate rep) throws WrongEpochException {
    List<io.blobfs.tyr.api.TxRequest> txs = new java.util.ArrayList<>(rep.txs());
    rep.prepares().values().forEach(p -> txs.add(p.tx())); // held for the same keys
    for (io.blobfs.tyr.api.TxRequest tx : txs) {
      for (TxOp op : tx.ops()) {
        List<Member> owners = r.writeSet(op.key());
        if (!owners.get(0).id().equals(rep.source()) || !owners.contains(self)
            || owners.get(0).equals(self) || r.state(owners.get(0)) != Ring.State.UP) {
          throw new WrongEpochException("node " + self + " is not a backup of '" + op.key()
              + "' with primary " + rep.source() + " under ring epoch " + r.epoch()
              + " (its replicas: " + owners + ")", r);
        }
      }
    }
  }

  private void own(Ring r, String key) throws WrongEpochException {
    if (!r.serves(self, key)) {
      throw new WrongEpochException("node " + self + " holds no replica of '" + key
          + "' under ring epoch " + r.epoch() + " (its replicas: " + r.owners(key) + ")", r);
    }
  }

  /** The membership the options describe, or null when they name no cluster. */
  public static Membership fromOptions(StoreOptions o, String bind, int port)
      throws IOException {
    if (o.get("cluster-file").isPresent()) {
      for (String k : KEYS) {
        if (!k.equals("cluster-file") && !k.equals("cluster-self") && !k.equals("cluster-join")
            && !k.equals("cluster-tx-timeout") && o.get(k).isPresent()) {
          throw new IllegalArgumentException(o.fullKey(k) + " and " + o.fullKey("cluster-file")
              + " are exclusive: the file holds the ring");
        }
      }
      Path file = Path.of(o.get("cluster-file").get());
      // The file's time before it is read: a ring written between this read and the
      // watch's start must still be seen (taking the time at the watch's start missed it,
      // and a node stayed a ring behind until the next change: TyrClusterFailoverIT).
      FileTime read = Files.getLastModifiedTime(file);
      Ring ring = readRingFile(file);
      // Only a node told it is joining may start unlisted: an existing member restarted
      // with a wrong cluster-self would otherwise run, answer the monitor's pings (so it is
      // never marked DOWN) and refuse everything else, its ranges unavailable meanwhile.
      Membership m = new Membership(self(o, bind, port), ring, o.getBoolean("cluster-join",
          false))
          .withTxTimeout(o.getDuration("cluster-tx-timeout", DEFAULT_TX_TIMEOUT));
      m.watch(file, read);
      return m;
    }
    if (o.get("cluster-join").isPresent()) {
      throw new IllegalArgumentException(o.fullKey("cluster-join") + " needs "
          + o.fullKey("cluster-file") + ": a node joins the ring the monitor writes there");
    }
    if (o.get("cluster-nodes").isEmpty()) {
      for (String k : KEYS) {
        if (o.get(k).isPresent()) {
          throw new IllegalArgumentException(o.fullKey(k) + " needs "
              + o.fullKey("cluster-nodes") + " (or " + o.fullKey("cluster-file") + ")");
        }
      }
      return null;
    }
    Ring ring = new Ring(o.getLong("cluster-epoch", 1, 1, Long.MAX_VALUE),
        Member.parseList(o.get("cluster-nodes").get()),
        (int) o.getLong("cluster-vnodes", 128, 1, 4096),
        (int) o.getLong("cluster-replication", 1, 1, 255));
    return new Membership(self(o, bind, port), ring)
        .withTxTimeout(o.getDuration("cluster-tx-timeout", DEFAULT_TX_TIMEOUT));
  }

  private static Member self(StoreOptions o, String bind, int port) {
    return o.get("cluster-self").map(Member::parse).orElseGet(() -> new Member(bind, port));
  }

  /** A seed file: {@code nodes}, {@code epoch}, {@code vnodes} (128), {@code replication} (1). */
  public static Ring readRingFile(Path file) throws IOException {
    Properties p = new Properties();
    try (Reader r = Files.newBufferedReader(file)) {
      p.load(r);
    }
    Map<String, String> values = new HashMap<>();
    p.stringPropertyNames().forEach(k -> values.put(k, p.getProperty(k).strip()));
    StoreOptions o = new StoreOptions(values, k -> file + ": " + k);
    for (String k : values.keySet()) {
      if (!java.util.Set.of("nodes", "epoch", "vnodes", "replication", "down", "recovering")
          .contains(k)) {
        throw new IllegalArgumentException("unknown key " + o.fullKey(k)
            + "; known: nodes, epoch, vnodes, replication, down, recovering");
      }
    }
    Map<Member, Ring.State> states = new HashMap<>();
    for (Ring.State s : List.of(Ring.State.DOWN, Ring.State.RECOVERING)) {
      String list = o.get(s.name().toLowerCase(java.util.Locale.ROOT)).orElse("");
      if (!list.isBlank()) {
        for (Member m : Member.parseList(list)) {
          if (states.put(m, s) != null) {
            throw new IllegalArgumentException(file + ": " + m + " is listed twice in down "
                + "and recovering");
          }
        }
      }
    }
    return new Ring(o.getLong("epoch", 1, 1, Long.MAX_VALUE),
        Member.parseList(o.get("nodes").orElseThrow(() ->
            new IllegalArgumentException(o.fullKey("nodes") + " is required"))),
        (int) o.getLong("vnodes", 128, 1, 4096), (int) o.getLong("replication", 1, 1, 255),
        states);
  }

  /** The text of a ring file for {@code ring} (what {@link #readRingFile} reads back). */
  public static String ringFileText(Ring ring) {
    StringBuilder b = new StringBuilder();
    b.append("nodes=").append(ids(ring.members())).append("\nepoch=").append(ring.epoch())
        .append("\nvnodes=").append(ring.vnodes()).append("\nreplication=")
        .append(ring.replication()).append('\n');
    for (Ring.State s : List.of(Ring.State.DOWN, Ring.State.RECOVERING)) {
      List<Member> in = new java.util.ArrayList<>();
      ring.states().forEach((m, st) -> {
        if (st == s) {
          in.add(m);
        }
      });
      if (!in.isEmpty()) {
        b.append(s.name().toLowerCase(java.util.Locale.ROOT)).append('=').append(ids(in))
            .append('\n');
      }
    }
    return b.toString();
  }

  private static String ids(List<Member> ms) {
    return String.join(",", ms.stream().map(Member::id).toList());
  }

  /**
   * Re-reads the file when its modification time changes from {@code read}, its time when
   * the ring in force was read; a bad file is logged, kept out.
   */
  private void watch(Path file, FileTime read) {
    FileTime[] seen = {read};
    long[] failing = {0}; // nanoTime of the last warning while failing; 0: not failing
    watcher = Executors.newSingleThreadScheduledExecutor(r -> {
      Thread t = new Thread(r, "tyr-ring-watch");
      t.setDaemon(true);
      return t;
    });
    watcher.scheduleWithFixedDelay(() -> {
      try {
        FileTime t = Files.getLastModifiedTime(file);
        if (!t.equals(seen[0])) {
          FileTime before = seen[0];
          seen[0] = t;
          try {
            install(readRingFile(file));
          } catch (IOException | java.io.UncheckedIOException e) {
            // A read or a record of its epoch that failed (ENOSPC, EIO: install() leaves
            // such a ring not installed) is retried at the next tick: the file may not
            // change again for long, and meanwhile this node would serve the old epoch and
            // never settle under the new one (the monitor's RECOVERING->UP would stall).
            // A bad or older ring is not retried: the same file gives the same answer.
            seen[0] = before;
            throw e;
          }
        }
        failing[0] = 0;
      } catch (IOException | RuntimeException e) {
        // A ring that keeps failing (a full disk) is retried every second: warn at the
        // first failure, then at most once a minute (ring-epoch2 review S3).
        long now = System.nanoTime();
        if (failing[0] == 0 || now - failing[0] >= TimeUnit.MINUTES.toNanos(1)) {
          LOG.warn("node {}: ring file {} not taken: {}{}", self, file, e.toString(),
              failing[0] == 0 ? "" : " (still failing; retried each second, logged each "
              + "minute)");
          failing[0] = now == 0 ? 1 : now;
        }
      }
    }, 1, 1, TimeUnit.SECONDS);
  }

  @Override
  public void close() {
    if (watcher != null) {
      watcher.shutdownNow();
    }
  }
}
