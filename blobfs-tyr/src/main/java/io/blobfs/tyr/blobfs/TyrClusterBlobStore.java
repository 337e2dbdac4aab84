package io.blobfs.tyr.blobfs;

import io.blobfs.store.BlobInfo;
import io.blobfs.store.BlobMutation;
import io.blobfs.store.PlacementAware;
import io.blobfs.store.PutMode;
import io.blobfs.store.ScanPage;
import io.blobfs.store.StoreLimits;
import io.blobfs.store.StoreUnavailableException;
import io.blobfs.store.TransactionalBlobStore;
import io.blobfs.store.VersionedBytes;
import io.blobfs.tyr.api.ScanResult;
import io.blobfs.tyr.api.TyrException;
import io.blobfs.tyr.client.ClientConfig;
import io.blobfs.tyr.client.TyrClient;
import io.blobfs.tyr.ring.Member;
import io.blobfs.tyr.ring.Ring;
import io.blobfs.tyr.ring.HandingOverException;
import io.blobfs.tyr.ring.WrongEpochException;
import java.io.IOException;
import java.io.InterruptedIOException;
import java.net.InetAddress;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeSet;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * BlobFS's store SPI on a cluster of Týr nodes.
 *
 * <p>The client fetches the ring once from a seed node and computes every key's owners
 * itself, so each single-key call goes straight to a node holding the key (one hop, no
 * lookup): writes, and every call that shows or checks a version, to the key's primary
 * (which forwards writes to its backups before acknowledging, see the server's
 * {@code Replicator}); plain reads of bytes to any replica, the next one if a replica
 * cannot be reached. Each call is made under the ring's epoch; a node whose ring differs, or that
 * does not hold the key, refuses it with its own ring ({@link WrongEpochException}), and
 * the call is retried on the owner under the newer ring. A node refuses before doing
 * anything, so no call ever reads or writes the wrong node.
 *
 * <p>A scan asks every node for a page after the same cursor and merges them: each node
 * lists its keys in order, and a node's cursor is just the last key it listed, so the
 * global cursor is the last key of the merged page, valid for every node at once (the
 * "composite cursor" collapses to one key). Pages are exact: no key is skipped or listed
 * twice.
 *
 * <p><b>Transactions.</b> A transaction whose keys all have one primary is one commit
 * on that node, as on a lone node (one round trip). One whose keys live on several nodes
 * is a two-phase commit ({@link CrossNodeCommit}; the nodes' side and the recovery of a
 * client or node that dies midway are in the server's {@code Transactions}): atomic, and
 * serializable with every other transaction. So BlobFS renames and deletes with its
 * transactional paths. The store is not {@code HeadScanning} (a page merged from several
 * nodes is not one committed state), nor {@code CopiesOnWrite} (a call retried under a new ring sends the caller's
 * buffer again, so the caller must keep it until the call completes, as the SPI says).
 */
public final class TyrClusterBlobStore implements TransactionalBlobStore, PlacementAware {
  private static final Logger LOG = LoggerFactory.getLogger(TyrClusterBlobStore.class);
  /** Tries of a call refused for its epoch: enough for a ring that changes while it runs. */
  static final int ATTEMPTS = 8;

  private final String name;
  private final ClientConfig template;
  private final StoreLimits limits;
  private final Map<Member, Node> nodes = new ConcurrentHashMap<>();
  private final Map<Member, List<String>> hosts = new ConcurrentHashMap<>();
  private volatile Ring ring;
  private volatile boolean closed;
  /**
   * Run before a call its primary applied unconfirmed is made again there: tests make
   * another writer's call land between the two attempts by construction.
   */
  private volatile Runnable beforeAgainOnPrimary = () -> { };

  /** One member: its client (routed under our epoch) and the single-node store over it. */
  private record Node(TyrClient client, TyrBlobStore store) {}

  private TyrClusterBlobStore(String name, ClientConfig template, StoreLimits limits,
      Ring ring) {
    this.name = name;
    this.template = template;
    this.limits = limits;
    this.ring = ring;
  }

  /**
   * Joins the cluster: fetches the ring from the first seed that answers. {@code template}
   * holds the settings of every node's client (its host and port are replaced).
   */
  public static TyrClusterBlobStore open(String name, List<Member> seeds, ClientConfig template,
      StoreLimits limits) throws IOException {
    IOException failed = null;
    for (Member seed : seeds) {
      try (TyrClient c = new TyrClient(at(template, seed))) {
        Ring ring = TyrClient.await(c.ring());
        LOG.info("store {}: joined {} through {}", name, ring, seed);
        // A part of a cross-node transaction travels in a prepare, which adds the ids.
        int longestId = 0;
        for (Member m : ring.members()) {
          longestId = Math.max(longestId, m.id().getBytes(
              java.nio.charset.StandardCharsets.UTF_8).length);
        }
        return new TyrClusterBlobStore(name, template, limits.withMaxCommitBytes(
            limits.maxCommitBytes() - io.blobfs.tyr.protocol.Messages.prepareHeaderBytes(
                ring.members().size(), longestId)), ring);
      } catch (IOException e) {
        if (failed == null) {
          failed = new StoreUnavailableException("no seed of Týr cluster " + seeds
              + " answered with its ring", e);
        } else {
          failed.addSuppressed(e);
        }
      }
    }
    throw failed;
  }

  private static ClientConfig at(ClientConfig t, Member m) {
    return new ClientConfig(m.host(), m.port(), t.secret(), t.connectTimeout(),
        t.requestTimeout(), t.connections(), t.maxFrameBytes(), t.tlsTrust(), t.localReads(),
        t.localReadFds(), t.localReadIdle());
  }

  /** The ring this client routes by now. */
  public Ring ring() {
    return ring;
  }

  private Node node(Member m) {
    if (closed) {
      throw new IllegalStateException("store " + name + " is closed");
    }
    return nodes.computeIfAbsent(m, k -> {
      TyrClient c = new TyrClient(at(template, k));
      c.routeUnder(() -> ring.epoch());
      return new Node(c, new TyrBlobStore(name + "@" + k, c, limits, hostsOf(k), () -> {}));
    });
  }

  /**
   * Takes a node's ring if it is newer than ours; true if ours changed (by this call or
   * another since {@code seen}), so a retry goes by a newer ring.
   */
  private synchronized boolean adopt(Ring theirs, Ring seen) {
    if (theirs.epoch() > ring.epoch()) {
      LOG.info("store {}: ring epoch {} -> {}", name, ring.epoch(), theirs.epoch());
      ring = theirs;
    }
    return ring != seen;
  }

  // ------------------------------------------------------------------ routing

  @FunctionalInterface
  private interface Call<T> {
    T on(TyrBlobStore node) throws IOException;
  }

  /**
   * How long a single-key call waits, at most, for a key held by a prepared cross-node
   * transaction: past the nodes' default transaction timeout, so that one a dead client
   * left is resolved meanwhile. A single-key call is no transaction, and its callers do
   * not expect a conflict that no lone node would give them; nothing was done, so it is
   * simply made again.
   */
  static final long HELD_WAIT_NANOS = java.time.Duration.ofSeconds(30).toNanos();

  private static long heldPauseMillis(int tries) {
    return Math.min(200, 5L << Math.min(tries, 6));
  }

  // ------------------------------------------------------------------ failover

  /**
   * After {@code unreachable} failed a call made under {@code seen}: asks the other members
   * for their rings (every 250 ms) until one is newer than {@code seen}, which moves the
   * call elsewhere if the node was marked down, or until {@code deadline}. True if our
   * ring changed meanwhile. A frozen member's asks time out in the background.
   */
  private CompletableFuture<Boolean> failover(Ring seen, Member unreachable, long deadline) {
    if (ring != seen) {
      return CompletableFuture.completedFuture(true);
    }
    List<CompletableFuture<Void>> asks = new ArrayList<>();
    for (Member m : seen.members()) {
      if (!m.equals(unreachable)) {
        asks.add(node(m).client().ring().thenAccept(r -> adopt(r, seen)));
      }
    }
    return CompletableFuture.allOf(asks.toArray(new CompletableFuture<?>[0]))
        .exceptionally(e -> null)
        .completeOnTimeout(null, 250, TimeUnit.MILLISECONDS)
        .thenCompose(x -> {
          if (ring != seen) {
            return CompletableFuture.completedFuture(true);
          }
          long left = deadline - System.nanoTime();
          if (left <= 0) {
            return CompletableFuture.completedFuture(false);
          }
          return CompletableFuture.supplyAsync(() -> null, CompletableFuture.delayedExecutor(
                  Math.min(250, TimeUnit.NANOSECONDS.toMillis(left)), TimeUnit.MILLISECONDS))
              .thenCompose(y -> failover(seen, unreachable, deadline));
        });
  }

  /** When a call that met an unreachable node stops waiting for a newer ring. */
  private long failoverDeadline() {
    return System.nanoTime() + template.requestTimeout().toNanos();
  }

  /**
   * Whether a call that failed with {@code e} on an unreachable node may be made again on
   * another: if it never left this client, or if making it twice does no harm
   * ({@code idempotent}: reads, puts that overwrite, writes at an offset, truncates). A
   * conditional or exclusive call that may have been applied is not made again, since its
   * second answer could be wrong (a create finding its own blob). With R = 1 there is no
   * other node to go to: the loss is reported at once, as before failover existed.
   */
  private static boolean mayRetryElsewhere(Ring r, Throwable e, boolean idempotent) {
    return r.replication() > 1 && e instanceof StoreUnavailableException
        && (idempotent || TyrException.neverSent(e));
  }

  /** Runs {@code call} on the key's primary, again under a newer ring when refused. */
  private <T> T onOwner(String key, Call<T> call) throws IOException {
    return onOwner(key, false, call);
  }

  /**
   * As {@link #onOwner(String, Call)}; when the primary cannot be reached, the call goes
   * to the new primary once a member has a ring that marks it down (see {@link #failover}),
   * if it {@link #mayRetryElsewhere}.
   */
  private <T> T onOwner(String key, boolean idempotent, Call<T> call) throws IOException {
    return onOwner(key, idempotent, call, null);
  }

  /**
   * As {@link #onOwner(String, boolean, Call)}; {@code onlyIfStill}, if given, is the
   * call made again on the same primary after it answered that a backup did not confirm
   * what it applied at version v: made only if the key is still at v there (a conflict
   * otherwise). Made again as it was, a put applied and seen by a reader, then overwritten
   * by another writer's acknowledged put, came back over it (the stale register read of
   * {@code TyrClusterHistoryIT}); now the key that moved on fails the call as
   * indeterminate (the primary repairs its backups of what it applied: OwedKeys).
   */
  private <T> T onOwner(String key, boolean idempotent, Call<T> call,
      java.util.function.LongFunction<Call<T>> onlyIfStill) throws IOException {
    Budget budget = new Budget();
    int held = 0;
    long failoverBy = 0;
    Call<T> next = call;
    Member unconfirmedOn = null; // the primary that applied our call unconfirmed, if any
    for (int attempt = 1; ; attempt++) {
      Ring r = ring;
      Member owner = r.primary(key);
      Call<T> now = unconfirmedOn != null && !unconfirmedOn.equals(owner) ? call : next;
      try {
        return now.on(node(owner).store());
      } catch (IOException e) {
        if (TyrException.heldByPrepared(e)
            && System.nanoTime() - budget.start < HELD_WAIT_NANOS) {
          pauseMillis(heldPauseMillis(held++));
          attempt--;
          continue;
        }
        if (now != call && e instanceof io.blobfs.store.TransactionConflictException) {
          throw new StoreUnavailableException("Týr cluster " + name + ": '" + key
              + "' was applied on its primary " + owner + " and not confirmed by a backup, "
              + "and it changed since: the outcome is unknown (the primary repairs its "
              + "backups of what it applied): " + e.getMessage(), e);
        }
        WrongEpochException w = wrongEpoch(e);
        if (w == null) {
          long applied = TyrException.unconfirmedVersion(e);
          if (idempotent && applied > 0 && attempt < ATTEMPTS) {
            // The primary answered, and making an idempotent call again is safe unless
            // another write came in between (then only if it is conditional, above). A
            // backup ahead of it refused for a newer ring, which the other members give
            // (one round of asking); a backup behind it loads the ring within about a
            // second, and no newer ring will come: then the same primary again, after a
            // pause. A new primary does not number as the old one did: there the call is
            // made again as it was (not covered: see the README's failover limits).
            unconfirmedOn = owner;
            next = onlyIfStill != null ? onlyIfStill.apply(applied) : call;
            if (!TyrClient.await(failover(r, owner, System.nanoTime()))) {
              pause(attempt);
            }
            beforeAgainOnPrimary.run();
            continue;
          }
          if (mayRetryElsewhere(r, e, idempotent) && attempt < ATTEMPTS) {
            failoverBy = failoverBy == 0 ? failoverDeadline() : failoverBy;
            if (TyrClient.await(failover(r, owner, failoverBy))) {
              continue;
            }
          }
          throw lost(r, owner, key, e);
        }
        if (givesUp(budget, w)) {
          throw refusedTooOften(key, w, budget);
        }
        if (!adopt(w.ring(), r)) {
          pauseMillis(pauseMillis(budget, w)); // the node will load the ring soon
        }
      }
    }
  }

  /** Tests: {@code hook} runs before each unconfirmed call is made again (see the field). */
  void beforeAgainOnPrimary(Runnable hook) {
    beforeAgainOnPrimary = hook;
  }

  /** {@link #onOwner} for the asynchronous calls. */
  private <T> CompletableFuture<T> onOwnerAsync(String key,
      Function<TyrBlobStore, CompletableFuture<T>> call, int attempt) {
    Budget budget = new Budget();
    return whileHeld(() -> onReplicas(key, call, false, attempt, null, 0, 0, budget),
        budget.start, 0);
  }

  /** {@code call} again after a pause while its key is held by a prepared transaction. */
  private static <T> CompletableFuture<T> whileHeld(
      java.util.function.Supplier<CompletableFuture<T>> call, long start, int tries) {
    return call.get().exceptionallyCompose(err -> {
      if (TyrException.heldByPrepared(err) && System.nanoTime() - start < HELD_WAIT_NANOS) {
        return CompletableFuture.supplyAsync(() -> null, CompletableFuture.delayedExecutor(
                heldPauseMillis(tries), TimeUnit.MILLISECONDS))
            .thenCompose(x -> whileHeld(call, start, tries + 1));
      }
      return CompletableFuture.failedFuture(err);
    });
  }

  /**
   * {@code call} on the key's primary or, with {@code anyReplica}, on its replicas in
   * turn (this host's first, if it holds one), the next one when a replica cannot be
   * reached; again under a newer ring when refused, or when none can be reached and a
   * member has a ring that marks them down. Only for calls that may be made twice (reads,
   * writes at an offset).
   */
  private <T> CompletableFuture<T> onReplicas(String key,
      Function<TyrBlobStore, CompletableFuture<T>> call, boolean anyReplica, int attempt,
      List<Member> order, int tried, long failoverBy, Budget budget) {
    Ring r = ring;
    List<Member> candidates = order != null ? order
        : anyReplica ? readOrder(readersOf(r, key)) : List.of(r.primary(key));
    Member target = candidates.get(tried);
    CompletableFuture<T> f;
    try {
      f = call.apply(node(target).store());
    } catch (RuntimeException e) {
      return CompletableFuture.failedFuture(e);
    }
    return f.exceptionallyCompose(err -> {
      Throwable e = unwrap(err);
      WrongEpochException w = wrongEpoch(e);
      if (w == null) {
        if (!anyReplica && TyrException.backupUnconfirmed(e)) {
          // The primary answered: applied, not confirmed. No newer ring is coming for
          // that (a fenced backup refuses it until repaired); the caller decides whether
          // to make it again there (write: writeAgain). Waited for up to the op timeout
          // before, it failed as "unreachable" (review M3, S1).
          return CompletableFuture.failedFuture(e);
        }
        if (e instanceof StoreUnavailableException && tried + 1 < candidates.size()
            && ring == r) {
          return onReplicas(key, call, anyReplica, attempt, candidates, tried + 1,
              failoverBy, budget); // next
        }
        CompletableFuture<T> lostHere = CompletableFuture.failedFuture(
            e instanceof IOException io ? lost(r, target, key, io) : e);
        if (!mayRetryElsewhere(r, e, true) || attempt >= ATTEMPTS) {
          return lostHere;
        }
        long by = failoverBy == 0 ? failoverDeadline() : failoverBy;
        return failover(r, target, by).thenCompose(moved -> moved
            ? onReplicas(key, call, anyReplica, attempt + 1, null, 0, by, budget) : lostHere);
      }
      if (givesUp(budget, w)) {
        return CompletableFuture.failedFuture(refusedTooOften(key, w, budget));
      }
      long delay = adopt(w.ring(), r) ? 0 : pauseMillis(budget, w);
      return CompletableFuture.supplyAsync(() -> null,
              CompletableFuture.delayedExecutor(delay, TimeUnit.MILLISECONDS))
          .thenCompose(x -> onReplicas(key, call, anyReplica, attempt + 1, null, 0,
              failoverBy, budget));
    });
  }

  /** The replicas that may serve {@code key}'s reads: its UP owners (if none, all). */
  private static List<Member> readersOf(Ring r, String key) {
    List<Member> up = r.readSet(key);
    return up.isEmpty() ? r.owners(key) : up;
  }

  /**
   * The replicas in the order a read tries them: one on this host first (no network
   * hop), then the others starting at a random one, so reads spread over the replicas.
   */
  private List<Member> readOrder(List<Member> owners) {
    if (owners.size() == 1) {
      return owners;
    }
    List<Member> order = new ArrayList<>(owners.size());
    int start = java.util.concurrent.ThreadLocalRandom.current().nextInt(owners.size());
    for (int i = 0; i < owners.size(); i++) {
      order.add(owners.get((start + i) % owners.size()));
    }
    for (int i = 0; i < order.size(); i++) {
      if (LOCAL_ADDRESSES.contains(order.get(i).host())) {
        order.add(0, order.remove(i));
        break;
      }
    }
    return order;
  }

  /** This host's addresses, as text, to find a replica on it; loopback ones excluded. */
  private static final java.util.Set<String> LOCAL_ADDRESSES = localAddresses();

  private static java.util.Set<String> localAddresses() {
    java.util.Set<String> out = new java.util.HashSet<>();
    try {
      for (java.net.NetworkInterface ni : java.util.Collections.list(
          java.net.NetworkInterface.getNetworkInterfaces())) {
        for (InetAddress a : java.util.Collections.list(ni.getInetAddresses())) {
          if (!a.isLoopbackAddress()) {
            out.add(a.getHostAddress());
          }
        }
      }
    } catch (IOException e) {
      // no preference then
    }
    return java.util.Set.copyOf(out);
  }

  /**
   * An unreachable node, said with what it costs: which node, which key, and that no
   * other replica holds it (R = 1). Other errors pass unchanged.
   */
  private IOException lost(Ring r, Member node, String key, IOException e) {
    if (!(e instanceof StoreUnavailableException)) {
      return e;
    }
    List<Member> replicas = r.owners(key);
    return new StoreUnavailableException("Týr cluster " + name + ": node " + node
        + " is unreachable, and it holds '" + key + "' (ring epoch " + r.epoch()
        + (replicas.size() == 1 ? ", R = 1: no other replica holds this key's range"
            : ", replicas " + replicas) + "): " + e.getMessage(), e);
  }

  /**
   * What a cross-node commit that may have committed fails with: as it is when its
   * outcome is known not to be commit (the coordinator's abort, a conflict) or already
   * says it is unknown (unavailable); otherwise made an unavailable error, the one the
   * callers take for "may or may not be applied", never a conflict.
   */
  private static IOException indeterminate(CrossNodeCommit cross, IOException e) {
    if (e instanceof StoreUnavailableException
        || e instanceof io.blobfs.store.TransactionConflictException) {
      return e;
    }
    return new StoreUnavailableException("Týr transaction " + cross.id() + ": the commit "
        + "decision was asked for, so it may be committed; its outcome is unknown here: "
        + e.getMessage(), e);
  }

  private static WrongEpochException wrongEpoch(Throwable e) {
    for (Throwable c = e; c != null; c = c.getCause()) {
      if (c instanceof WrongEpochException w) {
        return w;
      }
    }
    return null;
  }

  /**
   * Whether a call, refused again, last with {@code w}, is given up ({@code b}: its tries
   * so far, this refusal counted now). A plain refusal: the {@link #ATTEMPTS}th plain one.
   * A node handing over (taking its keys back from its stand-ins, at
   * most the server's hand-over bound, 10 s, after it is marked UP) is waited for until the
   * call's op timeout ({@code op-timeout}, the request timeout) has passed since the call
   * began: a deadline, whatever the number of tries. Before it was a count (the usual
   * attempts and one more per second of the timeout), so how long a call waited depended
   * on how fast the refusals came: the pauses (with a 2 s timeout, ten tries took about
   * 5 s) and the tries that adopted a newer ring without a pause (a few milliseconds in
   * all). {@code TyrStandInHandOverTest.aHandOverIsWaitedForUpToTheOpTimeoutNotACountOfTries}.
   */
  private boolean givesUp(Budget b, WrongEpochException w) {
    b.refusals++;
    if (w instanceof HandingOverException) {
      return opTimedOut(b.start);
    }
    // Counted apart from a hand-over's tries (review S6): counted together, a call that
    // had waited out a hand-over gave up at its first plain refusal after it, without
    // adopting the newer ring that refusal carried.
    return ++b.plain >= ATTEMPTS;
  }

  /**
   * One call's tries of being refused for its ring: when it began ({@link System#nanoTime}),
   * its refusals in all, and the plain ones (not a hand-over's). Used by one call at a
   * time (its asynchronous tries follow one another).
   */
  private static final class Budget {
    final long start = System.nanoTime();
    int refusals;
    int plain;
  }

  /**
   * The pause before the next try after {@code w}: a plain refusal's grows with the plain
   * refusals; a hand-over's with all of them, but not past the hand-over deadline
   * ({@link #givesUp}).
   */
  private long pauseMillis(Budget b, WrongEpochException w) {
    if (!(w instanceof HandingOverException)) {
      return pauseMillis(b.plain);
    }
    long left = opTimeLeftNanos(b.start);
    return Math.max(1, Math.min(pauseMillis(b.refusals), TimeUnit.NANOSECONDS.toMillis(left)));
  }

  /**
   * What is left of the op timeout ({@code op-timeout}, the request timeout) to a call that
   * began at {@code start} ({@link System#nanoTime}): 0 or less once it has passed.
   */
  private long opTimeLeftNanos(long start) {
    return template.requestTimeout().toNanos() - (System.nanoTime() - start);
  }

  /**
   * Whether a call that began at {@code start} ({@link System#nanoTime}) has had its op
   * timeout: a hand-over waited for ({@link #givesUp}), a write made again or asked about
   * ({@link #writeAgain}), whatever the number of tries.
   */
  private boolean opTimedOut(long start) {
    return opTimeLeftNanos(start) <= 0;
  }

  private IOException refusedTooOften(String key, WrongEpochException last, Budget b) {
    String tries = last instanceof HandingOverException
        ? "for " + TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - b.start) + " ms (op "
            + "timeout " + template.requestTimeout() + ") while its node hands over"
        : ATTEMPTS + " times for the ring";
    return new StoreUnavailableException("Týr cluster " + name + ": '" + key + "' refused "
        + tries + " (ours: epoch " + ring.epoch() + "); last: " + last.getMessage(), last);
  }

  private static long pauseMillis(int attempt) {
    return Math.min(1000, 20L << Math.min(attempt, 6));
  }

  private static void pause(int attempt) throws InterruptedIOException {
    pauseMillis(pauseMillis(attempt));
  }

  private static void pauseMillis(long millis) throws InterruptedIOException {
    try {
      Thread.sleep(millis);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new InterruptedIOException("interrupted waiting for the Týr ring");
    }
  }

  private static Throwable unwrap(Throwable e) {
    while (e instanceof CompletionException && e.getCause() != null) {
      e = e.getCause();
    }
    return e;
  }

  // ------------------------------------------------------------------ single-key calls

  @Override
  public BlobInfo stat(String key) throws IOException {
    return onOwner(key, true, n -> n.stat(key));
  }

  @Override
  public VersionedBytes readWithVersion(String key, int maxBytes) throws IOException {
    return onOwner(key, true, n -> n.readWithVersion(key, maxBytes));
  }

  /**
   * From any replica: a write is acknowledged only once every replica has it, so each
   * holds every acknowledged write. (Calls that show or check versions go to the primary:
   * each replica numbers its own commits.)
   */
  @Override
  public CompletableFuture<Integer> read(String key, long offset, ByteBuffer dst) {
    return onReplicas(key, n -> n.read(key, offset, dst), true, 1, null, 0, 0,
        new Budget());
  }

  /**
   * On the key's primary. A write the primary applied and a backup did not confirm (typed,
   * with the version applied: {@code BackupUnconfirmedException}) is first asked about
   * ({@code CONFIRM}: confirmed, or repairing and asked again, up to the op timeout), and
   * made again on the same primary only if the answer is "not held" or the node is older
   * (BAD_REQUEST), as a truncate or a put is; it no longer waits for a newer ring up to the op
   * timeout, which never came when the backup refused it as fenced (review M3: the common
   * path, a ring change makes the backup refuse a write for its epoch, the write is made
   * again under the new ring, and the now fenced backup refuses it until the primary's
   * repair, about a second later, lifts the fence). See {@link #writeAgain}.
   */
  @Override
  public CompletableFuture<Void> write(String key, long offset, ByteBuffer src) {
    return writeFrom(key, offset, src, 0, System.nanoTime());
  }

  private CompletableFuture<Void> writeFrom(String key, long offset, ByteBuffer src,
      int tries, long start) {
    java.util.concurrent.atomic.AtomicReference<TyrBlobStore> on =
        new java.util.concurrent.atomic.AtomicReference<>();
    return onOwnerAsync(key, n -> {
      on.set(n);
      return n.write(key, offset, src);
    }, 1).exceptionallyCompose(err -> {
      Throwable e = unwrap(err);
      long applied = TyrException.unconfirmedVersion(e);
      return applied > 0
          ? writeAgain(key, offset, src, on.get(), applied, tries + 1, e, start)
          : CompletableFuture.<Void>failedFuture(e);
    });
  }

  /**
   * A write at an offset that {@code primary} applied unconfirmed at {@code version}. First
   * asked, not made again (session 14, review 2's N1): the primary confirms it once every
   * backup holds the key at that version or later ({@code Request.Confirm}), which its own
   * repair of the backup brings (the write's failure owes the key there). While a backup
   * still owes the key the answer is "repairing", and the client asks again every
   * {@link #CONFIRM_POLL_MS} until the op timeout since the call began ({@code start}),
   * whatever the number of tries. Made again, each try was a write of the key on the
   * primary, and any write of a key between two pieces of its repair in pieces voids that
   * repair: a key too large for one frame (79 MiB and more by default) was never repaired
   * while its writer tried, and the write failed at its op timeout. Asking voids nothing.
   *
   * <p>Made again only if the primary answers "not held" (the key is not at that version
   * or later there) or does not know the question (BAD_REQUEST: a node older than session
   * 14; mixed versions), as before: only if the key is still at the version applied, a
   * commit of [ReadCheck(version), Write] ({@link TyrBlobStore#writeIfVersion}); if the key
   * moved on, the range is read: if it still holds our bytes, the write is made again under
   * a check of the version they are at now, so it is confirmed with nothing else
   * overwritten; other bytes are another writer's, and the outcome is unknown (never a
   * plain overwrite, which could bring our bytes back over an acknowledged write that a
   * reader saw: the stale register of {@code TyrClusterHistoryIT}, put's {@code
   * onlyIfStill}). After the pauses of a refusal (up to a second each), up to twice
   * {@link #ATTEMPTS} times and while the op timeout has not passed. On a new primary, as
   * it was (it numbers its own versions).
   */
  private CompletableFuture<Void> writeAgain(String key, long offset, ByteBuffer src,
      TyrBlobStore primary, long version, int tries, Throwable last, long start) {
    if (tries >= 2 * ATTEMPTS || primary == null || opTimedOut(start)) {
      return CompletableFuture.failedFuture(unconfirmedTooOften(key, offset, tries, last));
    }
    if (node(ring.primary(key)).store() != primary) {
      return writeFrom(key, offset, src, tries, start); // another primary now
    }
    return CompletableFuture.supplyAsync(() -> null, CompletableFuture.delayedExecutor(
            pauseMillis(tries), TimeUnit.MILLISECONDS))
        .thenCompose(x -> confirm(key, offset, src, primary, version, tries, last, start));
  }

  /** How often a write whose key its primary repairs asks again (see {@link #writeAgain}). */
  static final long CONFIRM_POLL_MS = 100;

  /** Asks {@code primary} whether our write at {@code version} is in (see writeAgain). */
  private CompletableFuture<Void> confirm(String key, long offset, ByteBuffer src,
      TyrBlobStore primary, long version, int tries, Throwable last, long start) {
    return primary.confirm(key, version).handle((answer, err) -> {
      if (err == null && answer == io.blobfs.tyr.protocol.Request.Confirm.CONFIRMED) {
        return CompletableFuture.<Void>completedFuture(null);
      }
      if (err == null && answer == io.blobfs.tyr.protocol.Request.Confirm.REPAIRING) {
        if (opTimedOut(start)) {
          return CompletableFuture.<Void>failedFuture(
              unconfirmedTooOften(key, offset, tries, last));
        }
        // Not a try: nothing was written; bounded by the op timeout only.
        return CompletableFuture.supplyAsync(() -> null, CompletableFuture.delayedExecutor(
                CONFIRM_POLL_MS, TimeUnit.MILLISECONDS))
            .thenCompose(x -> confirm(key, offset, src, primary, version, tries, last, start));
      }
      Throwable e = err == null ? null : unwrap(err);
      CompletableFuture<Void> refused = againAfterRefusal(key, offset, src, primary, version,
          tries, e, start);
      if (refused != null) {
        return refused;
      }
      if (e != null && !(e instanceof TyrException t && t.code() == io.blobfs.tyr.api.ErrorCode.BAD_REQUEST)) {
        return CompletableFuture.<Void>failedFuture(e instanceof TyrException t
            ? TyrBlobStore.toIo(t, key) : e);
      }
      // Not held there (or an older primary, which does not know the question): made
      // again, only if the key or the range still holds what we wrote.
      return writeIfStill(key, offset, src, primary, version, tries, start);
    }).thenCompose(f -> f);
  }

  /** Our write made again on {@code primary}, only if the key or range still holds it. */
  private CompletableFuture<Void> writeIfStill(String key, long offset, ByteBuffer src,
      TyrBlobStore primary, long version, int tries, long start) {
    if (tries >= 2 * ATTEMPTS || opTimedOut(start)) {
      return CompletableFuture.failedFuture(unconfirmedTooOften(key, offset, tries,
          new StoreUnavailableException("the key kept moving on with our bytes in place",
              null)));
    }
    beforeAgainOnPrimary.run();
    return primary.writeIfVersion(key, offset, src.duplicate(), version)
        .exceptionallyCompose(err -> {
          Throwable e = unwrap(err);
          if (e instanceof io.blobfs.store.TransactionConflictException) {
            return primary.readRange(key, offset, src.remaining()).exceptionallyCompose(
                gone -> CompletableFuture.failedFuture(writeUnknown(key, offset, e)))
                .thenCompose(now -> now.data().equals(src.duplicate())
                    ? writeIfStill(key, offset, src, primary, now.version(), tries + 1, start)
                    : CompletableFuture.<Void>failedFuture(writeUnknown(key, offset, e)));
          }
          long applied = TyrException.unconfirmedVersion(e);
          if (applied > 0) {
            return writeAgain(key, offset, src, primary, applied, tries + 1, e, start);
          }
          CompletableFuture<Void> refused = againAfterRefusal(key, offset, src, primary,
              version, tries, e, start);
          return refused != null ? refused : CompletableFuture.<Void>failedFuture(e);
        });
  }

  /**
   * If {@code e} (may be null) is {@code primary}'s refusal of a question or a try of our
   * write at {@code version} for its ring: its newer ring adopted and {@link #writeAgain}
   * (which checks the key's primary under it: the same one, or the write goes to the new
   * one); else null.
   */
  private CompletableFuture<Void> againAfterRefusal(String key, long offset, ByteBuffer src,
      TyrBlobStore primary, long version, int tries, Throwable e, long start) {
    WrongEpochException w = e == null ? null : wrongEpoch(e);
    if (w == null) {
      return null;
    }
    adopt(w.ring(), ring); // the same primary under it: checked at the next try
    return writeAgain(key, offset, src, primary, version, tries + 1, e, start);
  }

  /**
   * A write at an offset applied unconfirmed and made again {@code tries} times, never
   * confirmed (review S1: not "unreachable", the primary answered each time).
   */
  private IOException unconfirmedTooOften(String key, long offset, int tries, Throwable last) {
    String why = String.valueOf(last.getMessage());
    return new StoreUnavailableException("Týr cluster " + name + ": the write of '" + key
        + "' at " + offset + " was applied on its primary, which answered that a backup "
        + (why.contains("fenced") ? "refused it (the key is fenced there: it lacks an "
            + "earlier write, until the primary's repair puts the key whole)"
            : "did not confirm it") + ", " + tries + " times; it is not acknowledged, "
        + "and the primary repairs the backup, so making it again may succeed: " + why,
        last);
  }

  /** The key moved on and the range holds another writer's bytes: the outcome is unknown. */
  private IOException writeUnknown(String key, long offset, Throwable conflict) {
    return new StoreUnavailableException("Týr cluster " + name + ": the write of '" + key
        + "' at " + offset + " was applied on its primary and not confirmed by a backup, "
        + "and the key changed since: the outcome is unknown (the primary repairs its "
        + "backups of what it applied): " + conflict.getMessage(), conflict);
  }

  @Override
  public void put(String key, ByteBuffer content, PutMode mode) throws IOException {
    onOwner(key, mode == PutMode.OVERWRITE, n -> {
      n.put(key, content, mode);
      return null;
    }, applied -> n -> {
      try {
        n.putIfVersion(key, content.duplicate(), applied);
      } catch (io.blobfs.store.TransactionConflictException moved) {
        // The primary's own repair of its backups (OwedKeys) rewrites what it applied, so
        // the key moving on may still hold our bytes: then have them confirmed at the
        // version they are at now (acknowledged only once every replica has them). Other
        // bytes are another writer's, and the outcome stays unknown.
        VersionedBytes now;
        try {
          now = n.readWithVersion(key, content.remaining() + 1);
        } catch (io.blobfs.store.BlobNotFoundException deleted) {
          throw moved; // deleted since by another writer: unknown, never "not found"
        }
        if (!ByteBuffer.wrap(now.bytes()).equals(content.duplicate())) {
          throw moved;
        }
        n.putIfVersion(key, content.duplicate(), now.version());
      }
      return null;
    });
  }

  @Override
  public void putIfVersion(String key, ByteBuffer content, long version) throws IOException {
    onOwner(key, n -> {
      n.putIfVersion(key, content, version);
      return null;
    });
  }

  @Override
  public void truncate(String key, long size) throws IOException {
    onOwner(key, true, n -> {
      n.truncate(key, size);
      return null;
    });
  }

  @Override
  public boolean delete(String key) throws IOException {
    return onOwner(key, n -> n.delete(key));
  }

  @Override
  public void deleteIfVersion(String key, long version) throws IOException {
    onOwner(key, n -> {
      n.deleteIfVersion(key, version);
      return null;
    });
  }

  /**
   * The mutations in one transaction, atomically: on their node if all their keys have
   * one primary, else by two-phase commit across their primaries; again under a newer
   * ring if a node refuses for its ring. A broken precondition or a conflict with another
   * transaction is a {@link io.blobfs.store.TransactionConflictException}, nothing
   * applied.
   */
  @Override
  public void commit(List<BlobMutation> mutations) throws IOException {
    commit(mutations, CrossNodeCommit.StopAfter.NOTHING);
  }

  /** As {@link #commit(List)}; a cross-node one stops after {@code stop} (tests). */
  void commit(List<BlobMutation> mutations, CrossNodeCommit.StopAfter stop)
      throws IOException {
    commit(mutations, stop, phase -> { });
  }

  /** As {@link #commit(List)}; a cross-node one calls {@code hook} between phases (tests). */
  void commit(List<BlobMutation> mutations, CrossNodeCommit.StopAfter stop,
      java.util.function.Consumer<CrossNodeCommit.StopAfter> hook) throws IOException {
    if (mutations.isEmpty()) {
      return;
    }
    Budget budget = new Budget();
    long failoverBy = 0;
    for (int attempt = 1; ; attempt++) {
      Ring r = ring;
      Map<Member, List<BlobMutation>> byNode = new java.util.LinkedHashMap<>();
      String first = null;
      for (BlobMutation m : mutations) {
        byNode.computeIfAbsent(r.primary(m.key()), k -> new ArrayList<>()).add(m);
        first = first == null || m.key().compareTo(first) < 0 ? m.key() : first;
      }
      CrossNodeCommit cross = null;
      try {
        if (byNode.size() == 1) {
          Member only = byNode.keySet().iterator().next();
          node(only).store().commit(mutations); // the one-round fast path
        } else {
          Map<Member, io.blobfs.tyr.api.TxRequest> parts = new java.util.LinkedHashMap<>();
          byNode.forEach((m, muts) -> parts.put(m, TyrBlobStore.txOf(muts)));
          // The first key's primary records the decision (Percolator's primary).
          cross = new CrossNodeCommit(parts, r.primary(first), m -> node(m).client())
              .hook(hook);
          cross.run(stop);
        }
        return;
      } catch (IOException e) {
        if (cross != null && cross.mayHaveCommitted()) {
          // Never made again once commit was asked for: a refusal found among the causes
          // (a participant's WRONG_EPOCH on apply) says nothing of the outcome, and a new
          // attempt would meet the parts of this one (a conflict) or apply it twice.
          throw indeterminate(cross, e);
        }
        WrongEpochException w = wrongEpoch(e);
        if (w == null && byNode.size() == 1 && r.replication() > 1
            && TyrException.neverSent(e) && attempt < ATTEMPTS) {
          // Its one node cannot be reached and nothing was sent: to the new primary, if
          // the node is marked down meanwhile. (A cross-node one is not made again: some
          // of its parts may have been prepared or decided.)
          failoverBy = failoverBy == 0 ? failoverDeadline() : failoverBy;
          if (TyrClient.await(failover(r, byNode.keySet().iterator().next(), failoverBy))) {
            continue;
          }
        }
        if (w == null) {
          throw e instanceof TyrException t ? TyrBlobStore.conflictOrIo(t, first) : e;
        }
        if (givesUp(budget, w)) {
          throw refusedTooOften(first, w, budget);
        }
        if (!adopt(w.ring(), r)) {
          pauseMillis(pauseMillis(budget, w));
        }
      }
    }
  }

  /** Exactly what a mutation adds to a commit's frame, as on a lone node. */
  @Override
  public long commitBytes(BlobMutation m) {
    return TyrBlobStore.exactCommitBytes(m);
  }

  // ------------------------------------------------------------------ scans

  /** Every node's page after {@code cursor}, merged; see the class comment. */
  @Override
  public ScanPage scan(String prefix, String cursor, int limit) throws IOException {
    int page = Math.min(limit, 10_000);
    Budget budget = new Budget();
    long failoverBy = 0;
    for (int attempt = 1; ; attempt++) {
      Ring r = ring;
      // The UP members: every key has one that lists it only if every arc of the ring has
      // an UP owner, checked below once the members have confirmed this ring.
      List<Member> listing = r.upMembers();
      List<CompletableFuture<ScanResult>> parts = new ArrayList<>();
      for (Member m : listing) {
        parts.add(node(m).client().scan(prefix, cursor, page));
      }
      TreeSet<String> merged = new TreeSet<>();
      boolean more = false;
      WrongEpochException refused = null;
      IOException failed = null;
      Member unreachable = null;
      for (int i = 0; i < parts.size(); i++) {
        try {
          ScanResult s = TyrClient.await(parts.get(i));
          merged.addAll(s.keys());
          more |= s.nextCursor() != null;
        } catch (WrongEpochException w) {
          if (refused == null || !(w instanceof HandingOverException)) {
            refused = w; // a plain refusal rules: a newer ring is what the scan needs
          }
        } catch (TyrException e) {
          IOException io = TyrBlobStore.toIo(e, prefix);
          if (io instanceof StoreUnavailableException) {
            unreachable = listing.get(i);
          }
          failed = io instanceof StoreUnavailableException ? new StoreUnavailableException(
              "Týr cluster " + name + ": node " + listing.get(i) + " is unreachable, so '"
                  + prefix + "*' cannot be listed whole: " + e.getMessage(), e) : io;
        }
      }
      if (failed != null && unreachable != null && r.replication() > 1
          && attempt < ATTEMPTS) {
        failoverBy = failoverBy == 0 ? failoverDeadline() : failoverBy;
        if (TyrClient.await(failover(r, unreachable, failoverBy))) {
          continue; // a scan only reads: made again under the ring that marks it down
        }
      }
      if (failed != null) {
        throw failed;
      }
      if (refused == null) {
        Long unserved = r.unservedRange(null);
        if (unserved != null) {
          // No UP member lists that arc's keys: a page without them would be silently
          // partial, and a rename, delete or empty-directory check would act on part.
          throw new StoreUnavailableException("Týr cluster " + name + ": the range ending at "
              + unserved + " has no UP owner under ring epoch " + r.epoch() + " (" + r.states()
              + "), so '" + prefix + "*' cannot be listed whole", null);
        }
        List<String> keys = new ArrayList<>(page);
        for (String k : merged) {
          if (keys.size() == page) {
            more = true;
            break;
          }
          keys.add(k);
        }
        return new ScanPage(keys, more && !keys.isEmpty() ? keys.get(keys.size() - 1) : null);
      }
      if (givesUp(budget, refused)) {
        throw refusedTooOften(prefix + "*", refused, budget);
      }
      if (!adopt(refused.ring(), r)) {
        pauseMillis(pauseMillis(budget, refused));
      }
    }
  }

  // ------------------------------------------------------------------ placement

  /** The hosts of the key's UP replicas, primary first, as the members are named. */
  @Override
  public List<String> hostsOf(String key) {
    List<Member> owners = readersOf(ring, key);
    if (owners.size() == 1) {
      return hostsOf(owners.get(0));
    }
    List<String> out = new ArrayList<>(owners.size());
    for (Member m : owners) {
      out.addAll(hostsOf(m));
    }
    return out;
  }

  private List<String> hostsOf(Member m) {
    // No reverse lookup: a member is named as schedulers know its host; loopback
    // addresses are this machine, which schedulers call localhost.
    return hosts.computeIfAbsent(m, k -> List.of(isLoopback(k.host()) ? "localhost"
        : k.host()));
  }

  private static boolean isLoopback(String host) {
    if (host.equals("localhost")) {
      return true;
    }
    if (!host.matches("[0-9.]+") && !host.contains(":")) {
      return false; // a name: never resolved here
    }
    try {
      return InetAddress.getByName(host).isLoopbackAddress();
    } catch (IOException e) {
      return false;
    }
  }

  @Override
  public StoreLimits limits() {
    return limits;
  }

  @Override
  public void close() {
    closed = true;
    for (Node n : nodes.values()) {
      n.client().close();
    }
    nodes.clear();
  }

  @Override
  public String toString() {
    return "TyrClusterBlobStore[" + name + ", " + ring + "]";
  }
}
