package io.blobfs.tyr.cluster.history;

import static io.blobfs.tyr.cluster.history.HistoryChecker.account;
import static io.blobfs.tyr.cluster.history.HistoryClient.text;
import static io.blobfs.tyr.cluster.history.HistoryClient.utf8;
import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.blobfs.store.BlobMutation;
import io.blobfs.store.PutMode;
import io.blobfs.store.StoreOptions;
import io.blobfs.store.VersionedBytes;
import io.blobfs.tyr.blobfs.TyrBlobStoreProvider;
import io.blobfs.tyr.blobfs.TyrClusterBlobStore;
import io.blobfs.tyr.cluster.TyrProcessCluster;
import io.blobfs.tyr.cluster.history.Op.Kind;
import io.blobfs.tyr.cluster.history.Op.Outcome;
import io.blobfs.tyr.ring.Member;
import io.blobfs.tyr.ring.Ring;
import io.blobfs.tyr.server.ClusterMonitor;
import io.blobfs.tyr.server.Membership;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Queue;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.stream.IntStream;
import java.util.stream.Stream;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * A Jepsen-style run on three Týr server processes (R = 2, {@link ClusterMonitor}
 * running), each on a host of its own: {@value #CLIENTS} clients run transfers, audits,
 * counter increments and register writes and reads while a {@link Nemesis} kills,
 * freezes and cuts off nodes on a seeded schedule; everything is healed, recovery
 * finishes, and a final transaction reads every key. {@link HistoryChecker} must accept
 * the history, and every replica must hold the final value of each key it owns. The
 * history goes to {@code target/tyr-history/history-SEED.jsonl}.
 *
 * <p>Opt-in ({@code -Dtyr.history=true}, or {@code -Dtyr.history.soak=true}) while the
 * bugs it finds are open (see {@link #OPEN_BUGS}): each is tracked by a deterministic
 * reproduction that fails as soon as it is enabled, and a run that fails at random on a
 * known bug would only make CI red. Once they are fixed, it is to run by default.
 *
 * <p>Without a seed it runs the fixed seeds {@link #FIXED_SEEDS} one after the other (a
 * failure can be replayed with its seed), a soak run one seed of its own. About 60 s of
 * faults per seed by default (at most 40). {@code -Dtyr.history.soak=true} runs 10
 * minutes (at most 400 faults), {@code -Dtyr.history.seconds=N} any other length, and
 * {@code -Dtyr.history.seed=S} replays a schedule and the clients' choices (not their
 * timing), {@code -Dtyr.history.faults=kill,freeze,cut} picks the kinds of fault and
 * {@code -Dtyr.history.hold-ms=N} the longest a fault is held (6000).
 */
class TyrClusterHistoryIT {
  private static final int CLIENTS = 6;
  private static final long INITIAL = 100;
  private static final boolean SOAK = Boolean.getBoolean("tyr.history.soak");
  private static final boolean ENABLED = SOAK || Boolean.getBoolean("tyr.history");
  /** Seeds of earlier runs that found bugs (their schedules, not their timing). */
  static final long[] FIXED_SEEDS = {40404071680335L, 42451187036939L};
  /** Why the IT is not run by default: the open bugs and their reproductions. */
  static final String OPEN_BUGS = "TyrClusterHistoryIT runs only with -Dtyr.history=true "
      + "while known bugs make it fail at random: (1) stale plain reads remain possible in "
      + "three windows: a backup that a write its primary applied never reached, until the "
      + "primary's repair; a node frozen while UP, on its old ring until it loads the ring "
      + "file; a put made again on a new primary after its first attempt was applied and "
      + "seen; (2) a write a stand-in primary sent to the returning owner that never arrived "
      + "(a broken stream, not a refusal), or that the owner took during its hand-over but "
      + "its engine refused (the key held by a share it took over), is lost, though read, if "
      + "the owner is marked UP before the stand-in's repair; (3) the second of two decided "
      + "shares of one key can still be taken for applied on the backup of the node that "
      + "took them over when a catch-up copy lands there between the two applies (the "
      + "stream's case is rebased since session 16); see blobfs-tyr/README.md, the history section, 'Hand-over' and 'Not built yet "
      + "in the cluster'";

  @TempDir
  Path dir;

  private static TyrClusterBlobStore store(TyrProcessCluster c, String name) throws IOException {
    return (TyrClusterBlobStore) new TyrBlobStoreProvider().open(name, new StoreOptions(
        "fs.blob.store." + name + ".", Map.of("nodes", c.nodesOption(),
            "connect-timeout", "2s", "op-timeout", "8s")));
  }

  /** The seed given, else a soak run's own, else the fixed ones. */
  static Stream<Long> seeds() {
    Long given = Long.getLong("tyr.history.seed");
    if (given != null || SOAK) {
      return Stream.of(given != null ? given : System.nanoTime());
    }
    return Arrays.stream(FIXED_SEEDS).boxed();
  }

  @ParameterizedTest(name = "seed {0}")
  @MethodSource("seeds")
  void historyUnderKillsFreezesAndCutsIsSerializableAndLosesNothing(long seed)
      throws Exception {
    assumeTrue(ENABLED, OPEN_BUGS);
    long seconds = Long.getLong("tyr.history.seconds", SOAK ? 600 : 60);
    int maxFaults = SOAK ? 400 : 40;
    System.out.println("HISTORY-IT seed " + seed + " (-Dtyr.history.seed=" + seed
        + " replays it), " + seconds + " s of faults, at most " + maxFaults);
    List<String> accounts = names("acct/", 6);
    List<String> counters = names("ctr/", 3);
    List<String> registers = names("reg/", 4);
    Queue<Op> history = new ConcurrentLinkedQueue<>();
    long t0 = System.nanoTime();
    try (TyrProcessCluster c = TyrProcessCluster.start(dir, 3, 64, 2,
            "--cluster-tx-timeout", "3s");
        ClusterMonitor monitor = new ClusterMonitor(c.ringFile(), io.blobfs.tyr.server.PeerAccess.NONE,
            Duration.ofSeconds(2), Duration.ofMillis(300));
        TyrClusterBlobStore setup = store(c, "setup")) {
      for (String a : accounts) {
        setup.put(a, utf8(account(INITIAL, HistoryChecker.INIT)), PutMode.OVERWRITE);
      }
      for (String n : counters) {
        setup.put(n, utf8("0"), PutMode.OVERWRITE);
      }
      for (String r : registers) {
        long start = System.nanoTime();
        String v = "w-init-" + r;
        setup.put(r, utf8(v), PutMode.OVERWRITE);
        history.add(new Op(v, -1, Kind.WRITE, Outcome.OK, start, System.nanoTime(), null,
            Map.of(r, v), null));
      }

      // Held up to 6 s by default: below and above the monitor's down-after (2 s).
      Nemesis nemesis = new Nemesis(c, seed, faults(),
          Integer.getInteger("tyr.history.hold-ms", 6000));
      // Whatever goes wrong below is collected: the history is written and checked first,
      // and the assertions come last, so no failure loses the diagnostics of the others.
      List<String> failures = Collections.synchronizedList(new ArrayList<>());
      runWorkload(c, nemesis, seed, seconds, maxFaults, accounts, counters, registers,
          history, failures);
      // Healed: every node should be UP again once it has caught up. If one is not, the
      // final read and the checks still run on what the UP owners serve (and say so).
      boolean allUp = nemesis.awaitAllUp(Duration.ofSeconds(SOAK ? 300 : 60));
      List<String> keys = new ArrayList<>(accounts);
      keys.addAll(counters);
      keys.addAll(registers);
      List<String> divergent = new ArrayList<>();
      try {
        Op fin = finalRead(setup, keys);
        history.add(fin);
        divergent.addAll(replicasAgree(c, fin));
      } catch (Exception | AssertionError e) {
        failures.add("final read: " + e);
      }
      List<Op> ops = new ArrayList<>(history);
      Path file = writeHistory(seed, ops, nemesis.events(), t0);
      for (int i = 0; i < c.members().size(); i++) {
        Files.writeString(file.resolveSibling("node" + (i + 1) + "-" + seed + ".log"),
            c.node(i).output());
      }
      HistoryChecker.Result result = new HistoryChecker(new LinkedHashSet<>(accounts),
          INITIAL, new LinkedHashSet<>(counters), new LinkedHashSet<>(registers)).check(ops);
      System.out.println("HISTORY-IT seed " + seed + ": " + ops.size() + " operations ("
          + result.summary() + "); faults " + nemesis.counts() + "; history " + file);
      result.violations().stream().limit(30).forEach(v -> System.out.println(
          "HISTORY-IT VIOLATION " + v));
      divergent.forEach(v -> System.out.println("HISTORY-IT REPLICA " + v));
      failures.forEach(f -> System.out.println("HISTORY-IT FAILURE " + f));
      assertThat(result.violations()).as("checker, seed " + seed + ", history " + file)
          .isEmpty();
      assertThat(failures).as("the run, seed " + seed + ", history " + file).isEmpty();
      assertThat(allUp).as("every node UP again after healing; ring "
          + Membership.readRingFile(c.ringFile())).isTrue();
      assertThat(divergent).as("replicas, seed " + seed).isEmpty();
      long okWrites = ops.stream().filter(o -> o.outcome() == Outcome.OK
          && o.f() != Kind.FINAL && !o.writes().isEmpty() && o.client() >= 0).count();
      assertThat(okWrites).as("acknowledged writes").isGreaterThan(50);
      assertThat(nemesis.events()).as("faults").isNotEmpty();
    }
  }

  /**
   * The clients against the nemesis until the time is up; every client thread joined and
   * every store closed whatever happens, what went wrong added to {@code failures}.
   */
  private static void runWorkload(TyrProcessCluster c, Nemesis nemesis, long seed,
      long seconds, int maxFaults, List<String> accounts, List<String> counters,
      List<String> registers, Queue<Op> history, List<String> failures)
      throws InterruptedException {
    AtomicBoolean running = new AtomicBoolean(true);
    List<TyrClusterBlobStore> stores = new ArrayList<>();
    List<Thread> threads = new ArrayList<>();
    try {
      for (int i = 0; i < CLIENTS; i++) {
        stores.add(store(c, "client" + i));
        Thread t = new Thread(new HistoryClient(i, stores.get(i), accounts, counters,
            registers, seed * 31 + i, history, running::get), "history-client-" + i);
        // A client that dies (a bug of the client, not of the store) must not pass unseen.
        t.setUncaughtExceptionHandler((th, e) -> failures.add(th.getName() + " died: " + e));
        threads.add(t);
        t.start();
      }
      nemesis.run(System.nanoTime() + Duration.ofSeconds(seconds).toNanos(), maxFaults);
    } catch (Exception | AssertionError e) {
      failures.add("workload: " + e);
    } finally {
      running.set(false);
      for (Thread t : threads) {
        t.join(Duration.ofMinutes(3).toMillis()); // each call ends within its timeouts
        if (t.isAlive()) {
          failures.add(t.getName() + " still running 3 minutes after the workload ended");
        }
      }
      for (TyrClusterBlobStore s : stores) {
        try {
          s.close();
        } catch (RuntimeException e) {
          failures.add("closing a client store: " + e);
        }
      }
    }
  }

  /** {@code -Dtyr.history.faults=kill,freeze,cut} (any of them; all by default). */
  private static java.util.Set<Nemesis.Fault> faults() {
    java.util.Set<Nemesis.Fault> out = java.util.EnumSet.noneOf(Nemesis.Fault.class);
    for (String f : System.getProperty("tyr.history.faults", "").split(",")) {
      if (!f.isBlank()) {
        out.add(Nemesis.Fault.valueOf(f.trim().toUpperCase()));
      }
    }
    return out;
  }

  private static List<String> names(String prefix, int n) {
    return IntStream.range(0, n).mapToObj(i -> prefix + i).toList();
  }

  /**
   * One transaction that reads every key and commits checks of all of them: the final
   * state, as one snapshot. Repeated (conflicts while prepared transactions settle,
   * unavailability while the last node catches up) for up to 3 minutes.
   */
  private static Op finalRead(TyrClusterBlobStore store, List<String> keys) throws Exception {
    long deadline = System.nanoTime() + Duration.ofMinutes(3).toNanos();
    for (int attempt = 1; ; attempt++) {
      long start = System.nanoTime();
      Map<String, String> reads = new LinkedHashMap<>();
      List<BlobMutation> checks = new ArrayList<>();
      try {
        for (String k : keys) {
          VersionedBytes v = store.readWithVersion(k, 64);
          reads.put(k, text(v.bytes()));
          checks.add(new BlobMutation.Check(k, v.version()));
        }
        store.commit(checks);
        return new Op("final", -1, Kind.FINAL, Outcome.OK, start, System.nanoTime(), reads,
            null, null);
      } catch (IOException e) {
        if (System.nanoTime() > deadline) {
          throw e;
        }
        System.out.println("HISTORY-IT final read, attempt " + attempt + ": " + e);
        Thread.sleep(500);
      }
    }
  }

  /** Every owner's own copy of each key equals the final value (no replica diverged). */
  private static List<String> replicasAgree(TyrProcessCluster c, Op fin) throws Exception {
    Ring r = Membership.readRingFile(c.ringFile());
    List<String> bad = new ArrayList<>();
    for (Map.Entry<String, String> e : fin.reads().entrySet()) {
      for (Member m : r.owners(e.getKey())) {
        if (r.state(m) != Ring.State.UP) {
          bad.add(e.getKey() + ": its replica " + m + " is " + r.state(m) + ", not UP");
          continue;
        }
        byte[] own = null;
        // A backup that refused a batch at a ring boundary answers "refused a write ... and
        // has not had it since" until its primary's next repair, which backs off up to 8 s:
        // a check right after the workload met that (session 18's soak analysis, REPLICA),
        // so such an answer is asked again for 10 s before it counts. Anything else counts.
        long until = System.nanoTime() + java.util.concurrent.TimeUnit.SECONDS.toNanos(10);
        while (own == null) {
          try {
            own = TyrProcessCluster.readOn(m, e.getKey(), r.epoch());
          } catch (Exception x) { // absent there, or not answering: recorded, not thrown
            if (String.valueOf(x.getMessage()).contains("refused a write")
                && System.nanoTime() < until) {
              Thread.sleep(200);
              continue;
            }
            bad.add(e.getKey() + " on " + m + " could not be read: " + x);
            break;
          }
        }
        if (own == null) {
          continue;
        }
        if (!Arrays.equals(own, e.getValue().getBytes(StandardCharsets.UTF_8))) {
          bad.add(e.getKey() + " on " + m + " is " + new String(own, StandardCharsets.UTF_8)
              + ", the final read says " + e.getValue());
        }
      }
    }
    return bad;
  }

  /** The history as JSON lines: every invocation and completion, and the faults, in time order. */
  private static Path writeHistory(long seed, List<Op> ops, List<Nemesis.Event> faults,
      long t0) throws IOException {
    record Line(long time, String json) {}
    List<Line> lines = new ArrayList<>();
    for (Op o : ops) {
      Op rel = new Op(o.id(), o.client(), o.f(), o.outcome(), o.invoke() - t0,
          o.complete() - t0, o.reads(), o.writes(), o.error());
      lines.add(new Line(rel.invoke(), rel.invokeJson()));
      lines.add(new Line(rel.complete(), rel.toJson()));
    }
    for (Nemesis.Event f : faults) {
      Nemesis.Event rel = new Nemesis.Event(f.fault(), f.node(), f.start() - t0,
          f.healed() - t0);
      lines.add(new Line(rel.start(), rel.toJson()));
    }
    lines.sort(Comparator.comparingLong(Line::time));
    Path out = Path.of("target", "tyr-history");
    Files.createDirectories(out);
    Path file = out.resolve("history-" + seed + ".jsonl");
    Files.write(file, lines.stream().map(Line::json).toList());
    return file.toAbsolutePath();
  }
}
