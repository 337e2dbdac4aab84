package io.blobfs.tyr.server;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.junit.jupiter.api.Assertions.assertEquals;

import io.blobfs.store.BeforeTimeout;
import io.blobfs.tyr.api.ErrorCode;
import io.blobfs.tyr.api.TyrException;
import io.blobfs.tyr.engine.EngineConfig;
import io.blobfs.tyr.engine.SyncPolicy;
import io.blobfs.tyr.ring.Member;
import io.blobfs.tyr.ring.Ring;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The failure detector on a node in this JVM and a member nothing answers for. */
class ClusterMonitorTest {
  @TempDir
  Path dir;

  private static int freePort() throws IOException {
    return io.blobfs.tyr.TestPorts.free();
  }

  private static Ring awaitRing(Path file, java.util.function.Predicate<Ring> p)
      throws Exception {
    return awaitRing(file, p, Duration.ofSeconds(20));
  }

  private static Ring awaitRing(Path file, java.util.function.Predicate<Ring> p,
      Duration patience) throws Exception {
    long deadline = System.nanoTime() + patience.toNanos();
    while (true) {
      Ring r = Membership.readRingFile(file);
      if (p.test(r)) {
        return r;
      }
      assertThat(System.nanoTime()).as("ring " + r).isLessThan(deadline);
      Thread.sleep(50);
    }
  }

  /**
   * A silent member goes DOWN after down-after and the live one stays UP; when the silent
   * one answers, it goes RECOVERING, and UP only once it has caught up. One monitor per
   * ring file.
   */
  @Test
  void marksTheSilentDownAndTheReturningUpOnlyAfterCatchUp() throws Exception {
    // Each node that answers must do so within down-after all along: at a load of 55 on
    // two cores, with 800 ms, the returning node went RECOVERING -> DOWN -> RECOVERING a
    // dozen times and never UP, and the live one was nearly marked DOWN too (as the
    // monitor should, for nodes that slow). So 2 s, and a try that failed (necessarily
    // after down-after) runs again with a longer one.
    BeforeTimeout.check(Duration.ofSeconds(2), 3, this::silentDownReturningUp);
  }

  private void silentDownReturningUp(Duration downAfter, BeforeTimeout.Window window)
      throws Exception {
    Path tryDir = Files.createDirectories(dir.resolve("try-" + downAfter.toMillis()));
    Member live = new Member("127.0.0.1", freePort());
    Member silent = new Member("127.0.0.1", freePort());
    Ring ring = new Ring(1, List.of(live, silent), 16, 2);
    Path file = tryDir.resolve("ring.properties");
    Files.writeString(file, Membership.ringFileText(ring));
    try (TyrServer node = start(tryDir, live, ring, "live");
        ClusterMonitor monitor = new ClusterMonitor(file, PeerAccess.NONE, downAfter,
            Duration.ofMillis(100))) {
      assertThatThrownBy(() -> new ClusterMonitor(file, PeerAccess.NONE, Duration.ofSeconds(1),
          Duration.ofSeconds(1))).isInstanceOf(IOException.class)
          .hasMessageContaining("one writer");
      Duration patience = Duration.ofSeconds(20).plus(downAfter.multipliedBy(15));
      Ring down = awaitRing(file, r -> r.state(silent) == Ring.State.DOWN, patience);
      assertEquals(2, down.epoch());
      assertEquals(Ring.State.UP, down.state(live));
      Thread.sleep(1500); // nothing answers: it stays DOWN, and nothing else changes
      assertEquals(down, Membership.readRingFile(file));

      node.membership().install(down);
      try (TyrServer back = start(tryDir, silent, down, "back")) {
        Ring recovering = awaitRing(file, r -> r.state(silent) == Ring.State.RECOVERING,
            patience);
        back.membership().install(recovering);
        node.membership().install(recovering);
        Ring up = awaitRing(file, r -> r.states().isEmpty(), patience);
        assertEquals(recovering.epoch() + 1, up.epoch());
        assertThat(back.caughtUpEpoch()).isEqualTo(recovering.epoch());
      }
    }
  }

  /**
   * Two silent members of a two-member R = 2 ring: the first goes DOWN, the second is not
   * marked (it would leave every range with no UP owner, and it may hold acknowledged
   * writes the first lacks); nor by hand with {@code --mark}.
   */
  @Test
  void refusesADownMarkThatLeavesARangeWithNoUpOwner() throws Exception {
    Member a = new Member("127.0.0.1", freePort());
    Member b = new Member("127.0.0.1", freePort());
    Ring ring = new Ring(1, List.of(a, b), 16, 2);
    Path file = dir.resolve("ring.properties");
    Files.writeString(file, Membership.ringFileText(ring));
    Ring down;
    try (ClusterMonitor monitor = new ClusterMonitor(file, PeerAccess.NONE, Duration.ofMillis(500),
        Duration.ofMillis(100))) {
      down = awaitRing(file, r -> !r.states().isEmpty());
      Thread.sleep(1500); // both stay silent
      assertEquals(down, Membership.readRingFile(file));
    }
    assertEquals(2, down.epoch());
    assertEquals(1, down.states().size(), down.toString());
    Member other = down.state(a) == Ring.State.DOWN ? b : a;
    assertEquals(Ring.State.UP, down.state(other));
    assertThat(ClusterMonitor.refusal(down, down.withState(other, Ring.State.DOWN, 3), other))
        .contains("refusing to mark " + other + " DOWN");
    // A member that is RECOVERING has no acknowledged writes of its own: it may go DOWN.
    Ring recovering = down.withState(b, Ring.State.RECOVERING, 3).withState(a, Ring.State.UP, 3);
    assertThat(ClusterMonitor.refusal(recovering,
        recovering.withState(b, Ring.State.DOWN, 4), b)).isNull();
  }

  /**
   * Review should-fix 4: silence counts only once a member's first probe has completed.
   * Probes here are futures the test completes, the clock is the test's, and the test
   * ticks the monitor itself: nothing depends on the machine's speed.
   */
  @Test
  void aMemberIsNotSilentUntilItsFirstProbeHasCompleted() throws Exception {
    Member slow = new Member("127.0.0.1", 7401);
    Member dead = new Member("127.0.0.1", 7402);
    Member other = new Member("127.0.0.1", 7403);
    Ring ring = new Ring(1, List.of(slow, dead, other), 16, 2);
    Path file = dir.resolve("ring.properties");
    Files.writeString(file, Membership.ringFileText(ring));
    Map<Member, CompletableFuture<Void>> probes = new ConcurrentHashMap<>();
    AtomicLong clock = new AtomicLong();
    Duration downAfter = Duration.ofSeconds(3);
    try (ClusterMonitor monitor = new ClusterMonitor(file, PeerAccess.NONE, downAfter,
        Duration.ofSeconds(1), m -> probes.computeIfAbsent(m, k -> new CompletableFuture<>()),
        clock::get, false)) {
      monitor.tick(); // the first probes go out
      clock.addAndGet(downAfter.toNanos() * 2); // a first TLS handshake slower than that
      monitor.tick();
      assertEquals(ring, Membership.readRingFile(file), "marked before any probe completed");
      probes.get(slow).complete(null); // a slow first handshake, answered at last
      probes.get(other).complete(null);
      probes.get(dead).completeExceptionally(new IOException("connection refused"));
      clock.addAndGet(downAfter.toNanos() / 2);
      monitor.tick();
      Ring now = Membership.readRingFile(file);
      assertEquals(2, now.epoch());
      assertEquals(Map.of(dead, Ring.State.DOWN), now.states());
    }
  }

  /** Review should-fix 3: a misspelt option is refused, not dropped. */
  @Test
  void unknownOptionsAreRefused() {
    assertThatThrownBy(() -> ClusterMonitor.options(new String[] {"--cluster-file", "r",
        "--tls-trusts", "cluster.pem"})).isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("unknown option --tls-trusts");
    assertThat(ClusterMonitor.options(new String[] {"--cluster-file", "r",
        "--tls-peer-trust", "cluster.pem"})).containsEntry("--tls-peer-trust", "cluster.pem");
    assertThat(ClusterMonitor.options(new String[] {"--cluster-file", "r", "--mark",
        "h:1", "down"})).containsEntry("--mark", "h:1");
    assertThatThrownBy(() -> ClusterMonitor.options(new String[] {"--cluster-file", "r",
        "--tls-trust", "a.pem", "--tls-peer-trust", "b.pem"}))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("one option");
  }

  /** Review should-fix 3: an unusable trust file stops the monitor before it probes. */
  @Test
  void anUnusableTrustFileIsRefusedAtConstruction() throws Exception {
    Member a = new Member("127.0.0.1", 7401);
    Path file = dir.resolve("ring.properties");
    Files.writeString(file, Membership.ringFileText(new Ring(1, List.of(a), 16, 1)));
    Path garbled = Files.writeString(dir.resolve("cluster.pem"), "not a certificate\n");
    assertThatThrownBy(() -> new ClusterMonitor(file, new PeerAccess(null, garbled),
        Duration.ofSeconds(1), Duration.ofSeconds(1))).isInstanceOf(IOException.class)
        .hasMessageContaining("--tls-trust " + garbled);
    // The lock was not taken: a monitor with a good configuration starts.
    new ClusterMonitor(file, PeerAccess.NONE, Duration.ofSeconds(1), Duration.ofSeconds(1))
        .close();
  }

  @Test
  void aRefusedHandshakeIsToldApartFromASilentNode() {
    assertThat(ClusterMonitor.refusesUs(new java.util.concurrent.CompletionException(
        new TyrException(ErrorCode.UNAUTHENTICATED, "TLS with Týr server h:1 failed",
            new javax.net.ssl.SSLHandshakeException("PKIX path building failed"))))).isTrue();
    assertThat(ClusterMonitor.refusesUs(new javax.net.ssl.SSLHandshakeException("x"))).isTrue();
    assertThat(ClusterMonitor.refusesUs(new TyrException(ErrorCode.UNAVAILABLE,
        "connection refused"))).isFalse();
  }

  /**
   * Join request files that name no member (empty, an editor's backup, free text) are set
   * aside as {@code *.bad}, and the monitor goes on marking a silent member DOWN.
   */
  @Test
  void aMalformedJoinRequestNeitherStopsTheMonitorNorIsTakenAsAMember() throws Exception {
    Member a = new Member("127.0.0.1", freePort());
    Member b = new Member("127.0.0.1", freePort());
    Ring ring = new Ring(1, List.of(a, b), 16, 2);
    Path file = dir.resolve("ring.properties");
    Files.writeString(file, Membership.ringFileText(ring));
    Files.writeString(dir.resolve("ring.properties.join-empty"), "");
    Files.writeString(dir.resolve("ring.properties.join-x~"), "not a member\n");
    Member j = new Member("127.0.0.1", freePort());
    ClusterMonitor.requestJoin(file, j); // a good one next to them is still read
    try (ClusterMonitor monitor = new ClusterMonitor(file, PeerAccess.NONE, Duration.ofMillis(500),
        Duration.ofMillis(100))) {
      Ring down = awaitRing(file, r -> !r.states().isEmpty());
      assertEquals(2, down.epoch());
      assertThat(down.states()).containsValue(Ring.State.DOWN);
    }
    assertThat(dir.resolve("ring.properties.join-empty.bad")).exists();
    assertThat(dir.resolve("ring.properties.join-x~.bad")).exists();
    assertThat(dir.resolve("ring.properties.join-empty")).doesNotExist();
    assertEquals(List.of(j), List.copyOf(ClusterMonitor.joinRequests(file).keySet()));
  }

  /**
   * A join waits while a member has not answered within down-after (it is still UP in the
   * ring: marking it DOWN later would be refused while the joiner is RECOVERING on its
   * ranges), and goes ahead once it answers.
   */
  @Test
  void aJoinWaitsUntilEveryMemberHasAnsweredWithinDownAfter() throws Exception {
    Member a = new Member("127.0.0.1", freePort());
    Member b = new Member("127.0.0.1", freePort());
    Member j = new Member("127.0.0.1", freePort());
    Ring ring = new Ring(1, List.of(a, b), 16, 2);
    Path file = dir.resolve("ring.properties");
    Files.writeString(file, Membership.ringFileText(ring));
    try (TyrServer na = start(a, ring, "a");
        TyrServer nj = TyrServer.start(config(j, "j"), new Membership(j, ring, true));
        ClusterMonitor monitor = new ClusterMonitor(file, PeerAccess.NONE, Duration.ofSeconds(60),
            Duration.ofMillis(100))) {
      ClusterMonitor.requestJoin(file, j);
      Thread.sleep(2000); // a and j answer; b, silent but not yet DOWN, does not
      assertEquals(ring, Membership.readRingFile(file));
      try (TyrServer nb = start(b, ring, "b")) {
        Ring joined = awaitRing(file, r -> r.members().contains(j));
        assertEquals(Ring.State.RECOVERING, joined.state(j));
        assertEquals(2, joined.epoch());
      }
    }
  }

  /**
   * A join (R = 2): asked before the node runs, nothing changes (as a backup it could not
   * be reached, and writes of its ranges would fail); once it answers it is added
   * RECOVERING, copies its ranges, and goes UP once caught up; then the old members drop
   * the keys they handed over, and each node stores exactly the keys it owns.
   */
  @Test
  void addsAJoiningNodeOnceItAnswersAndTheOldOwnersDropWhatItTook() throws Exception {
    Member a = new Member("127.0.0.1", freePort());
    Member b = new Member("127.0.0.1", freePort());
    Member j = new Member("127.0.0.1", freePort());
    Ring ring = new Ring(1, List.of(a, b), 16, 2);
    Path file = dir.resolve("ring.properties");
    Files.writeString(file, Membership.ringFileText(ring));
    java.util.Map<String, byte[]> want = new java.util.TreeMap<>();
    try (TyrServer na = start(a, ring, "a"); TyrServer nb = start(b, ring, "b");
        ClusterMonitor monitor = new ClusterMonitor(file, PeerAccess.NONE, Duration.ofSeconds(5),
            Duration.ofMillis(100));
        io.blobfs.store.BlobStore store = new io.blobfs.tyr.blobfs.TyrBlobStoreProvider()
            .open("join", new io.blobfs.store.StoreOptions("fs.blob.store.join.",
                java.util.Map.of("nodes", a.id())))) {
      for (int i = 0; i < 200; i++) {
        want.put("k/" + i, ("value " + i).getBytes(java.nio.charset.StandardCharsets.UTF_8));
        store.put("k/" + i, java.nio.ByteBuffer.wrap(want.get("k/" + i)),
            io.blobfs.store.PutMode.OVERWRITE);
      }
      // One blob of several pieces (4 MiB each) in the joiner's ranges: copied piece by piece.
      String big = null;
      for (int i = 0; big == null; i++) {
        big = ClusterMonitor.joined(ring, j).isReplica(j, "big/" + i) ? "big/" + i : null;
      }
      byte[] bytes = new byte[(9 << 20) + 12345];
      new java.util.Random(5).nextBytes(bytes);
      want.put(big, bytes);
      store.put(big, java.nio.ByteBuffer.wrap(bytes), io.blobfs.store.PutMode.OVERWRITE);
      ClusterMonitor.requestJoin(file, j);
      Thread.sleep(1500); // nothing answers at j yet
      assertEquals(ring, Membership.readRingFile(file));
      try (TyrServer nj = TyrServer.start(config(j, "j"), new Membership(j, ring, true))) {
        Ring recovering = awaitRing(file, r -> r.members().contains(j));
        assertEquals(2, recovering.epoch());
        assertEquals(Ring.State.RECOVERING, recovering.state(j));
        for (TyrServer n : List.of(na, nb, nj)) {
          n.membership().install(recovering);
        }
        // a keeps what it handed over until j is UP, but a cluster client's (routed) scan
        // lists only the keys a owns under its ring
        java.util.Set<String> ownedByA = new java.util.TreeSet<>();
        for (String k : want.keySet()) {
          if (recovering.isReplica(a, k)) {
            ownedByA.add(k);
          }
        }
        try (io.blobfs.tyr.client.TyrClient c = new io.blobfs.tyr.client.TyrClient(
            io.blobfs.tyr.client.ClientConfig.of(a.host(), a.port()))) {
          c.routeUnder(recovering::epoch);
          assertEquals(ownedByA, new java.util.TreeSet<>(io.blobfs.tyr.client.TyrClient.await(
              c.scan("", null, 1000)).keys()));
        }
        assertThat(localKeys(a)).containsAll(ownedByA).hasSizeGreaterThan(ownedByA.size());
        Ring up = awaitRing(file, r -> r.members().contains(j) && r.states().isEmpty());
        assertEquals(3, up.epoch());
        for (TyrServer n : List.of(na, nb, nj)) {
          n.membership().install(up);
        }
        for (var e : want.entrySet()) {
          assertThat(store.readWithVersion(e.getKey(), 16 << 20).bytes()).as(e.getKey())
              .isEqualTo(e.getValue());
        }
        // the store reads the primary, which may be an old owner: the joiner's own copy of
        // the blob it copied in pieces is read from its engine
        java.nio.ByteBuffer onJ = java.nio.ByteBuffer.allocate((int) nj.engine().stat(big)
            .size());
        nj.engine().read(big, 0, onJ);
        assertThat(onJ.array()).as(big + " on the joiner").isEqualTo(bytes);
        int joinerKeys = 0;
        for (Member m : List.of(a, b, j)) {
          java.util.Set<String> owned = new java.util.TreeSet<>();
          for (String k : want.keySet()) {
            if (up.isReplica(m, k)) {
              owned.add(k);
            }
          }
          joinerKeys += m.equals(j) ? owned.size() : 0;
          long deadline = System.nanoTime() + 20_000_000_000L;
          while (!localKeys(m).equals(owned) && System.nanoTime() < deadline) {
            Thread.sleep(50); // the drop runs after the install, on its own thread
          }
          assertEquals(owned, localKeys(m), "keys stored on " + m);
        }
        assertThat(joinerKeys).isPositive();
        assertThat(ClusterMonitor.joinRequests(file)).isEmpty();
      }
    }
  }

  /** Every key {@code m} stores (a scan not routed under a ring lists them all). */
  private static java.util.Set<String> localKeys(Member m) throws Exception {
    java.util.Set<String> out = new java.util.TreeSet<>();
    try (io.blobfs.tyr.client.TyrClient c = new io.blobfs.tyr.client.TyrClient(
        io.blobfs.tyr.client.ClientConfig.of(m.host(), m.port()))) {
      String cursor = null;
      do {
        var page = io.blobfs.tyr.client.TyrClient.await(c.scan("", cursor, 1000));
        out.addAll(page.keys());
        cursor = page.nextCursor();
      } while (cursor != null);
    }
    return out;
  }

  private ServerConfig config(Member m, String name) {
    EngineConfig engine = EngineConfig.defaults(dir.resolve(name))
        .withSyncPolicy(SyncPolicy.NONE);
    return new ServerConfig("127.0.0.1", m.port(), engine, 80 << 20, null, 8,
        64, Duration.ofSeconds(60), 512L << 20, 128L << 20, Duration.ofSeconds(60), null);
  }

  private TyrServer start(Member m, Ring ring, String name) throws IOException {
    return start(dir, m, ring, name);
  }

  private static TyrServer start(Path dir, Member m, Ring ring, String name)
      throws IOException {
    EngineConfig engine = EngineConfig.defaults(dir.resolve(name))
        .withSyncPolicy(SyncPolicy.NONE);
    ServerConfig config = new ServerConfig("127.0.0.1", m.port(), engine, 80 << 20, null, 8,
        64, Duration.ofSeconds(60), 512L << 20, 128L << 20, Duration.ofSeconds(60), null);
    return TyrServer.start(config, new Membership(m, ring));
  }
}
