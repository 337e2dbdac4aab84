package io.blobfs.tyr.server;

import io.blobfs.tyr.api.ErrorCode;
import io.blobfs.tyr.api.TyrException;
import io.blobfs.tyr.client.TyrClient;
import io.blobfs.tyr.ring.Member;
import io.blobfs.tyr.ring.Ring;
import java.io.Closeable;
import java.io.IOException;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The failure detector: the one writer of a cluster's ring file. Every {@code interval}
 * it pings each member and moves at most one of them, under a new epoch:
 * <ul>
 *   <li>UP or RECOVERING, unanswered for {@code downAfter}: DOWN (its keys' writes go to
 *       their next owner). Counted from its first probe's end only: a first connection
 *       slow to set up (a cold TLS handshake on a busy host) is not silence;
 *   <li>DOWN and answering again: RECOVERING (it gets new writes and copies the old ones,
 *       {@link Recovery});
 *   <li>RECOVERING and caught up (its {@code settled} answers under the current epoch): UP.
 * </ul>
 *
 * <p>A member wrongly marked DOWN (slow, frozen, cut off from the monitor only) while
 * every range it owns has another UP owner can acknowledge nothing more: each of its
 * writes needs a backup at its epoch, and the key's new primary, one of those backups,
 * has moved on (see the README's failover section). That much holds whether the verdict
 * is right or not. It does not hold for a DOWN mark that leaves a range with no UP owner:
 * the last UP owner may hold acknowledged writes nobody else has, and nothing in the ring
 * records that. So such a mark is refused ({@link #refusal}): the range stays
 * unavailable while that owner is silent, and is not handed to a stale member. The
 * detector also rests on one writer: two monitors could write two rings under one epoch,
 * so the monitor holds a lock on {@code <ring file>.lock} and refuses to start without it.
 */
public final class ClusterMonitor implements Closeable {
  private static final Logger LOG = LoggerFactory.getLogger(ClusterMonitor.class);

  private final Path ringFile;
  private final PeerAccess peers;
  private final Duration downAfter;
  private final Duration interval;
  /** Holds the lock on {@code <ring file>.lock}: one monitor per ring file. */
  private final FileChannel lockChannel;
  private final Map<Member, TyrClient> clients = new HashMap<>();
  /**
   * When each member last answered a ping (first: when first seen, its grace). Guarded by
   * itself, as are the maps below.
   */
  private final Map<Member, Long> lastSeen = new HashMap<>();
  /**
   * Members whose first probe has completed, answered or failed: silence counts only from
   * then on, so a slow first connection (a cold TLS handshake on a busy host) does not
   * mark a live node DOWN. The first probe is itself bounded by its timeouts.
   */
  private final java.util.Set<Member> probed = new java.util.HashSet<>();
  /** Members whose authentication failure was logged (once, until they answer). */
  private final java.util.Set<Member> refusedUs = new java.util.HashSet<>();
  private final Function<Member, CompletableFuture<?>> ping;
  private final java.util.function.LongSupplier clock;
  /**
   * When each member (or joiner) last answered a ping: unlike {@link #lastSeen}, no grace
   * entry. A join needs every member and the joiner to have answered within down-after.
   */
  private final Map<Member, Long> answered = new HashMap<>();
  private final ScheduledExecutorService ticker;

  /**
   * Probing the nodes as they reach each other (a TLS cluster's nodes take TLS only).
   *
   * @throws IOException if the ring file's lock is held, or TLS is on and its trusted
   *     certificates cannot be used
   */
  public ClusterMonitor(Path ringFile, PeerAccess peers, Duration downAfter, Duration interval)
      throws IOException {
    this(ringFile, peers, downAfter, interval, null, System::nanoTime, true);
  }

  /**
   * With {@code ping} as each member's probe (null: a ping over the network), time in
   * nanoseconds from {@code clock}, and ticking on its own thread only if
   * {@code scheduled} (tests call {@link #tick} themselves).
   */
  ClusterMonitor(Path ringFile, PeerAccess peers, Duration downAfter, Duration interval,
      Function<Member, CompletableFuture<?>> ping, java.util.function.LongSupplier clock,
      boolean scheduled) throws IOException {
    this.clock = clock;
    this.ringFile = ringFile;
    this.peers = peers;
    this.downAfter = downAfter;
    this.interval = interval;
    this.ping = ping != null ? ping : m -> client(m).ping();
    // A bad file would fail every probe and mark live nodes DOWN: refuse it here. This
    // also loads the TLS classes once, before the first probe's clock runs.
    peers.check("the monitor's --tls-trust");
    lockChannel = lockChannel(ringFile); // its lock is held until close
    ticker = Executors.newSingleThreadScheduledExecutor(r -> {
      Thread t = new Thread(r, "tyr-monitor");
      t.setDaemon(true);
      return t;
    });
    if (scheduled) {
      ticker.scheduleWithFixedDelay(this::tickLogged, 0, interval.toMillis(),
          TimeUnit.MILLISECONDS);
    }
  }

  private void tickLogged() {
    try {
      tick();
    } catch (Exception e) {
      LOG.warn("monitor of {}: {}", ringFile, e.toString());
    }
  }

  /** Members with a ping outstanding: a hung one gets no second. */
  private final java.util.Set<Member> pinging = new java.util.HashSet<>();
  /** When this monitor marked (or first saw) each member DOWN. */
  private final Map<Member, Long> downSince = new HashMap<>();
  /** The epoch each RECOVERING member said it caught up under. */
  private final Map<Member, Long> caughtUp = new HashMap<>();
  /** The epoch whose catch-up each member was asked about. */
  private final Map<Member, Long> asked = new HashMap<>();
  /** Members whose DOWN mark is being refused (see {@link #refusal}). */
  private final java.util.Set<Member> refused = new java.util.HashSet<>();

  /**
   * Why {@code moved} (which changes {@code m}) must not be written, or null. A DOWN mark
   * that leaves some range with no UP owner is refused: its last UP owner may hold
   * acknowledged writes nobody else has (it took them alone while the others were not
   * UP), and a member that came back would catch up from nobody and then serve and
   * overwrite the old data. Refusing keeps that range unavailable while its owner is
   * unreachable, and safe; the ring records no more than states, so only an UP owner
   * is known to be current.
   */
  static String refusal(Ring ring, Ring moved, Member m) {
    if (moved.state(m) != Ring.State.DOWN || ring.state(m) != Ring.State.UP) {
      return null; // only an UP member going DOWN removes an UP owner
    }
    Long point = moved.unservedRange(m);
    if (point == null) {
      return null;
    }
    return "refusing to mark " + m + " DOWN under ring epoch " + moved.epoch()
        + ": the range ending at " + point + " would have no UP owner (" + moved.states()
        + "); it may hold the only copy of acknowledged writes";
  }

  /**
   * One round: probes go out without waiting (each bounded by {@code downAfter}, so a
   * slow answer is still an answer), then at most one change is made from what has come
   * back so far.
   */
  synchronized void tick() throws IOException {
    Ring ring = Membership.readRingFile(ringFile);
    boolean joined;
    try {
      joined = join(ring);
    } catch (IOException | RuntimeException e) {
      // a join that cannot be made this round never stops the failure detection below
      LOG.warn("monitor: join requests next to {}: {}", ringFile, e.toString());
      joined = false;
    }
    if (joined) {
      return; // one change a round
    }
    long now = clock.getAsLong();
    synchronized (lastSeen) {
      for (Member m : ring.members()) {
        lastSeen.putIfAbsent(m, now);
        if (ring.state(m) == Ring.State.DOWN) {
          downSince.putIfAbsent(m, now);
        }
        if (pinging.add(m)) {
          ping.apply(m).whenComplete((x, e) -> {
            synchronized (lastSeen) {
              pinging.remove(m);
              if (probed.add(m) && e == null) {
                LOG.info("monitor: first answer of {}", m);
              }
              if (e == null) {
                long t = clock.getAsLong();
                lastSeen.put(m, t);
                answered.put(m, t);
                refusedUs.remove(m);
              } else if (refusesUs(e) && refusedUs.add(m)) {
                LOG.error("monitor: {} refused the monitor's TLS or secret; check "
                    + "--tls-trust and --secret-file against the nodes' tls-peer-trust "
                    + "and secret (it will be marked DOWN while it refuses): {}", m,
                    e.toString());
              }
            }
          });
        }
        long epoch = ring.epoch();
        if (ring.state(m) == Ring.State.RECOVERING && !Long.valueOf(epoch).equals(asked.get(m))) {
          asked.put(m, epoch);
          client(m).settled(epoch).whenComplete((r, e) -> {
            synchronized (lastSeen) {
              if (e == null) {
                caughtUp.merge(m, epoch, Math::max);
              } else if (Long.valueOf(epoch).equals(asked.get(m))) {
                asked.remove(m); // not answered in time: asked again next round
              }
            }
          });
        }
      }
      for (Member m : ring.members()) {
        Ring.State s = ring.state(m);
        boolean silent = probed.contains(m) && now - lastSeen.get(m) > downAfter.toNanos();
        if (!silent) {
          refused.remove(m);
        }
        Ring.State next = s;
        if (s != Ring.State.DOWN && silent) {
          next = Ring.State.DOWN;
        } else if (s == Ring.State.DOWN && lastSeen.get(m) - downSince.get(m) > 0) {
          next = Ring.State.RECOVERING;
        } else if (s == Ring.State.RECOVERING && caughtUp.getOrDefault(m, 0L) >= ring.epoch()) {
          next = Ring.State.UP;
        }
        if (next != s) {
          Ring moved = ring.withState(m, next, ring.epoch() + 1);
          String refusal = refusal(ring, moved, m);
          if (refusal != null) {
            if (refused.add(m)) { // logged once per silence, not every round
              LOG.warn("monitor: {}", refusal);
            }
            continue;
          }
          refused.remove(m);
          write(moved);
          if (next == Ring.State.DOWN) {
            downSince.put(m, clock.getAsLong());
          } else {
            downSince.remove(m);
          }
          LOG.info("monitor: {} {} -> {} under ring epoch {}", m, s, next, moved.epoch());
          return; // one change a round: each ring is read back before the next
        }
      }
    }
  }

  /**
   * Whether a probe failed because the node refused us (a TLS handshake that failed, a
   * secret it does not share) rather than because it is gone: a misconfiguration.
   */
  static boolean refusesUs(Throwable e) {
    for (Throwable t = e; t != null; t = t.getCause()) {
      if (t instanceof javax.net.ssl.SSLException
          || t instanceof TyrException x && x.code() == ErrorCode.UNAUTHENTICATED) {
        return true;
      }
    }
    return false;
  }

  /** Join requests refused (logged once each). */
  private final java.util.Set<Member> refusedJoins = new java.util.HashSet<>();

  /**
   * Adds a member that asked to join ({@link #requestJoin}) as RECOVERING under the next
   * epoch, once it and every member have answered a ping within down-after and every
   * member is UP; true if it wrote that ring. A
   * joiner is added only once it runs: as RECOVERING it is a backup of its ranges at
   * once, and a backup that cannot be reached would fail their writes.
   */
  private boolean join(Ring ring) throws IOException {
    for (Map.Entry<Member, Path> req : joinRequests(ringFile).entrySet()) {
      Member m = req.getKey();
      if (ring.members().contains(m)) {
        Files.deleteIfExists(req.getValue()); // done
        continue;
      }
      boolean live;
      synchronized (lastSeen) {
        if (pinging.add(m)) {
          ping.apply(m).whenComplete((x, e) -> {
            synchronized (lastSeen) {
              pinging.remove(m);
              if (e == null) {
                answered.put(m, clock.getAsLong());
              }
            }
          });
        }
        live = recentlyAnswered(m) && ring.members().stream().allMatch(this::recentlyAnswered);
      }
      if (ring.replication() < 2) {
        if (refusedJoins.add(m)) {
          LOG.warn("monitor: refusing to add {}: with R = 1 the ranges it takes would have "
              + "no UP owner while it copies them (joins need R >= 2)", m);
        }
        continue;
      }
      if (!live || !ring.states().isEmpty()) {
        // Not running yet, a member is not UP, or one has not answered within down-after
        // (it may be going DOWN: while the joiner is RECOVERING, a member whose ranges it
        // shares cannot be marked DOWN, see the README's "A member lost during a join").
        logWait(m, ring);
        continue;
      }
      Ring next = joined(ring, m);
      write(next);
      LOG.info("monitor: {} joins as RECOVERING under ring epoch {}", m, next.epoch());
      return true;
    }
    return false;
  }

  /** Whether {@code m} answered a ping within down-after. Caller holds lastSeen. */
  private boolean recentlyAnswered(Member m) {
    Long t = answered.get(m);
    return t != null && clock.getAsLong() - t <= downAfter.toNanos();
  }

  /** Join requests whose wait was logged, with the reason, so each is logged once. */
  private final Map<Member, String> joinWaitLogged = new HashMap<>();

  private void logWait(Member m, Ring ring) {
    String why;
    synchronized (lastSeen) {
      List<Member> silent = ring.members().stream().filter(x -> !recentlyAnswered(x)).toList();
      why = !recentlyAnswered(m) ? "it has not answered a ping yet"
          : !silent.isEmpty() ? "members have not answered within " + downAfter + ": " + silent
          : "not every member is UP: " + ring.states();
    }
    if (!why.equals(joinWaitLogged.put(m, why))) {
      LOG.info("monitor: {} waits to join: {}", m, why);
    }
  }

  /** {@code ring} with {@code m} added as RECOVERING, under the next epoch. */
  static Ring joined(Ring ring, Member m) {
    List<Member> members = new java.util.ArrayList<>(ring.members());
    members.add(m);
    Map<Member, Ring.State> states = new HashMap<>(ring.states());
    states.put(m, Ring.State.RECOVERING);
    return new Ring(ring.epoch() + 1, members, ring.vnodes(), ring.replication(), states);
  }

  /**
   * The join requests next to {@code ringFile}: one file per member. A file that does not
   * name a member (empty, hand-written, an editor's backup, half written by another tool)
   * is renamed to {@code *.bad} and logged, never thrown: the monitor reads these files
   * every round, and one bad file must not stop its failure detection.
   */
  static Map<Member, Path> joinRequests(Path ringFile) throws IOException {
    Map<Member, Path> out = new java.util.TreeMap<>(java.util.Comparator.comparing(Member::id));
    String prefix = ringFile.getFileName() + ".join-";
    try (var files = Files.list(ringFile.toAbsolutePath().getParent())) {
      for (Path f : (Iterable<Path>) files::iterator) {
        String name = f.getFileName().toString();
        if (name.startsWith(prefix) && !name.endsWith(".tmp") && !name.endsWith(BAD)) {
          try {
            out.put(Member.parse(Files.readString(f).strip()), f);
          } catch (IOException | RuntimeException e) {
            setAside(f, e);
          }
        }
      }
    }
    return out;
  }

  /** The suffix a join request that names no member is renamed with. */
  static final String BAD = ".bad";

  private static void setAside(Path f, Exception why) {
    LOG.warn("monitor: ignoring join request {} ({}); renamed to {}{}", f, why.toString(),
        f.getFileName(), BAD);
    try {
      Files.move(f, f.resolveSibling(f.getFileName() + BAD),
          StandardCopyOption.REPLACE_EXISTING);
    } catch (IOException e) {
      // gone already, or the directory is read-only: skipped again next round
      LOG.debug("monitor: could not rename {}: {}", f, e.toString());
    }
  }

  /**
   * Asks the monitor of {@code ringFile} to add {@code m} (see {@link #join}): a request
   * file the running monitor reads, since it is the ring file's one writer.
   */
  public static void requestJoin(Path ringFile, Member m) throws IOException {
    String name = ringFile.getFileName() + ".join-" + m.id().replaceAll("[^A-Za-z0-9.-]", "_");
    Path tmp = ringFile.resolveSibling(name + ".tmp");
    Files.writeString(tmp, m.id() + "\n");
    Files.move(tmp, ringFile.resolveSibling(name), StandardCopyOption.REPLACE_EXISTING,
        StandardCopyOption.ATOMIC_MOVE);
  }

  private TyrClient client(Member m) {
    // Bounded by down-after, not the interval: a node slow to answer under load is alive.
    return clients.computeIfAbsent(m, k -> new TyrClient(peers.client(k)
        .withTimeouts(downAfter, downAfter).withConnections(1)));
  }

  private static FileChannel lockChannel(Path ringFile) throws IOException {
    FileChannel ch = FileChannel.open(ringFile.resolveSibling(ringFile.getFileName()
        + ".lock"), StandardOpenOption.CREATE, StandardOpenOption.WRITE);
    try {
      if (ch.tryLock() == null) {
        throw new IOException("another monitor holds " + ringFile + ".lock: one writer only");
      }
    } catch (java.nio.channels.OverlappingFileLockException e) {
      ch.close();
      throw new IOException("another monitor in this JVM holds " + ringFile
          + ".lock: one writer only", e);
    } catch (IOException | RuntimeException e) {
      ch.close();
      throw e;
    }
    return ch;
  }

  private void write(Ring ring) throws IOException {
    write(ringFile, ring);
  }

  /**
   * Written whole, then renamed over the file: a node never reads half a ring. Durably
   * (issue 13, review S2): the temporary file is forced before the rename and the
   * directory after it, so a host crash cannot bring back an older ring once a node may
   * have acted on this one; a node started on an older ring would go back in epoch, and
   * the replication stream's rules assume a backup's epoch never goes back (each node also
   * refuses a ring older than the newest it installed: Membership.recordEpochs).
   */
  private static void write(Path ringFile, Ring ring) throws IOException {
    io.blobfs.tyr.engine.Durable.replace(ringFile,
        Membership.ringFileText(ring).getBytes(java.nio.charset.StandardCharsets.UTF_8), false);
  }

  @Override
  public void close() throws IOException {
    ticker.shutdownNow();
    try {
      ticker.awaitTermination(10, TimeUnit.SECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    clients.values().forEach(TyrClient::close);
    lockChannel.close(); // releases the lock
  }

  /**
   * {@code ClusterMonitor --cluster-file F [--down-after 3s] [--interval 500ms]
   * [--secret-file S] [--tls-trust PEM]}: runs until killed (with TLS, the certificates
   * the nodes' own {@code tls-peer-trust} names; {@code --tls-peer-trust} is the same
   * option). {@code ClusterMonitor --cluster-file F --mark host:port up|down|recovering}:
   * one change by hand, under the next epoch. An unknown option is refused: a misspelt
   * {@code --tls-trust} dropped would probe a TLS cluster in plain text.
   * {@code ClusterMonitor --cluster-file F --join host:port [--wait 10m]}: asks the running
   * monitor to add a started node, and waits until it is UP.
   */
  public static void main(String[] args) throws Exception {
    Map<String, String> o = options(args);
    Path file = Path.of(required(o, "--cluster-file"));
    if (o.containsKey("--join")) {
      System.exit(joinAndWait(file, Member.parse(o.get("--join")),
          Duration.parse("PT" + o.getOrDefault("--wait", "10m").toUpperCase())));
    }
    if (o.containsKey("--mark")) {
      Ring ring = Membership.readRingFile(file);
      Member m = Member.parse(o.get("--mark"));
      Ring.State s = Ring.State.valueOf(args[args.length - 1].toUpperCase(java.util.Locale.ROOT));
      try (FileChannel held = lockChannel(file)) {
        Ring moved = ring.withState(m, s, ring.epoch() + 1);
        String refusal = refusal(ring, moved, m);
        if (refusal != null) {
          System.err.println("tyr-monitor: " + refusal);
          System.exit(2);
        }
        write(file, moved);
      }
      return;
    }
    byte[] secret = o.containsKey("--secret-file")
        ? Files.readString(Path.of(o.get("--secret-file"))).strip().getBytes(
            java.nio.charset.StandardCharsets.UTF_8) : null;
    String trustOption = o.containsKey("--tls-trust") ? o.get("--tls-trust")
        : o.get("--tls-peer-trust");
    Path trust = trustOption == null ? null : Path.of(trustOption);
    ClusterMonitor m = new ClusterMonitor(file, new PeerAccess(secret, trust),
        Duration.parse("PT" + o.getOrDefault("--down-after", "3s").toUpperCase()),
        Duration.parse("PT" + o.getOrDefault("--interval", "0.5s").toUpperCase()));
    System.out.println("TYR-MONITOR RUNNING " + file);
    Runtime.getRuntime().addShutdownHook(new Thread(() -> {
      try {
        m.close();
      } catch (IOException e) {
        // exiting anyway
      }
    }));
    Thread.currentThread().join();
  }

  static final Set<String> OPTIONS = Set.of("--cluster-file", "--down-after", "--interval",
      "--secret-file", "--tls-trust", "--tls-peer-trust", "--mark", "--join", "--wait");

  /** The options by name, every one known; {@code --mark}'s state is the last argument. */
  static Map<String, String> options(String[] args) {
    Map<String, String> o = new HashMap<>();
    for (int i = 0; i + 1 < args.length; i += 2) {
      if (!OPTIONS.contains(args[i])) {
        throw new IllegalArgumentException("unknown option " + args[i] + "; known: "
            + new java.util.TreeSet<>(OPTIONS));
      }
      if (o.put(args[i], args[i + 1]) != null) {
        throw new IllegalArgumentException(args[i] + " is given twice");
      }
    }
    if (args.length % 2 != 0 && !(args.length > 0 && o.containsKey("--mark"))) {
      throw new IllegalArgumentException("options come in pairs: " + List.of(args));
    }
    if (o.containsKey("--tls-trust") && o.containsKey("--tls-peer-trust")) {
      throw new IllegalArgumentException("--tls-trust and --tls-peer-trust are one option: "
          + "give one");
    }
    return o;
  }

  /**
   * {@code --join host:port}: asks the running monitor to add the member, then follows the
   * ring file until it is UP there (0), or {@code wait} passes (1). No monitor: 2.
   */
  private static int joinAndWait(Path file, Member m, Duration wait) throws Exception {
    try (FileChannel free = lockChannel(file)) {
      System.err.println("tyr-monitor: no monitor runs on " + file + "; a join is made by "
          + "the running monitor (it marks the member UP once it has caught up): start one");
      return 2;
    } catch (IOException held) {
      // a monitor holds the lock: it takes the request
    }
    if (Membership.readRingFile(file).replication() < 2) {
      System.err.println("tyr-monitor: " + file + " has R = 1: a joining node's ranges would "
          + "have no UP owner while it copies them; joins need R >= 2");
      return 2;
    }
    requestJoin(file, m);
    System.out.println("TYR-JOIN REQUESTED " + m);
    long deadline = System.nanoTime() + wait.toNanos();
    Ring.State last = null;
    while (System.nanoTime() < deadline) {
      Ring r = Membership.readRingFile(file);
      Ring.State s = r.members().contains(m) ? r.state(m) : null;
      if (s != last) {
        System.out.println("TYR-JOIN " + m + " " + (s == null ? "not a member" : s)
            + " under ring epoch " + r.epoch());
        last = s;
      }
      if (s == Ring.State.UP) {
        return 0;
      }
      Thread.sleep(200);
    }
    System.err.println("tyr-monitor: " + m + " is not UP after " + wait);
    return 1;
  }

  private static String required(Map<String, String> o, String k) {
    String v = o.get(k);
    if (v == null) {
      throw new IllegalArgumentException(k + " is required");
    }
    return v;
  }
}
