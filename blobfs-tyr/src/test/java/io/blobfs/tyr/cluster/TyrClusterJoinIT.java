package io.blobfs.tyr.cluster;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;

import io.blobfs.store.PutMode;
import io.blobfs.store.StoreOptions;
import io.blobfs.tyr.api.ScanResult;
import io.blobfs.tyr.blobfs.TyrBlobStoreProvider;
import io.blobfs.tyr.blobfs.TyrClusterBlobStore;
import io.blobfs.tyr.client.ClientConfig;
import io.blobfs.tyr.client.TyrClient;
import io.blobfs.tyr.ring.Member;
import io.blobfs.tyr.ring.Ring;
import io.blobfs.tyr.server.ClusterMonitor;
import io.blobfs.tyr.server.Membership;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A fourth node joins a cluster of three server processes (R = 2) through the operator
 * command ({@code ClusterMonitor --join}, a process of its own, the running monitor being
 * the ring's one writer) while a writer keeps overwriting blobs. Afterwards every blob
 * reads back its last acknowledged bytes, every key is stored on exactly its owners under
 * the final ring (each node's own store, listed unfiltered), no key moved between the
 * old members, and the data the joiner copied and the old members dropped is measured
 * against the ideal share, R/N of the replicas.
 */
class TyrClusterJoinIT {
  /** Blobs written before the join ({@code -Dblobfs.join.blobs}, for scripts/bench-tyr-join.sh). */
  private static final int BLOBS = Integer.getInteger("blobfs.join.blobs", 3000);

  @TempDir
  Path dir;

  @Test
  void fourthNodeTakesOnlyItsRangesAndNoWriteIsLost() throws Exception {
    Hosts hosts = Hosts.up(4);
    try (TyrProcessCluster c = TyrProcessCluster.startOn(hosts, dir, 3, 128, 2);
        ClusterMonitor monitor = new ClusterMonitor(c.ringFile(), io.blobfs.tyr.server.PeerAccess.NONE,
            Duration.ofSeconds(10), Duration.ofMillis(300));
        TyrClusterBlobStore store = store(c)) {
      Random rnd = new Random(13);
      Map<String, byte[]> acked = new ConcurrentHashMap<>();
      long totalBytes = 0;
      for (int i = 0; i < BLOBS; i++) {
        byte[] v = value(rnd, "first " + i);
        acked.put("j/" + i, v);
        totalBytes += v.length;
        store.put("j/" + i, ByteBuffer.wrap(v), PutMode.OVERWRITE);
      }
      List<Set<String>> before = new ArrayList<>();
      for (int n = 0; n < 3; n++) {
        before.add(localKeys(c.members().get(n)));
      }

      // A writer overwrites random blobs, and creates some, all through the join; a write
      // that fails (a ring change under it) is made again until acknowledged, so each
      // key's last acknowledged bytes are known.
      AtomicBoolean stop = new AtomicBoolean();
      AtomicInteger writes = new AtomicInteger();
      AtomicInteger retried = new AtomicInteger();
      List<Throwable> writerFailed = new ArrayList<>();
      Thread writer = new Thread(() -> {
        Random r = new Random(7);
        try {
          while (!stop.get()) {
            // mostly overwrites; every fourth write creates a blob (placed under the
            // ring of the moment, so some land on the joiner's arcs mid-join)
            String k = writes.get() % 4 == 3 ? "j/new-" + writes.get() : "j/" + r.nextInt(BLOBS);
            byte[] v = value(r, "rewrite " + writes.get() + " of " + k);
            for (int attempt = 1; ; attempt++) {
              try {
                store.put(k, ByteBuffer.wrap(v), PutMode.OVERWRITE);
                break;
              } catch (IOException e) {
                retried.incrementAndGet();
                if (attempt >= 20) {
                  throw e;
                }
                Thread.sleep(200);
              }
            }
            acked.put(k, v);
            writes.incrementAndGet();
          }
        } catch (Throwable t) {
          synchronized (writerFailed) {
            writerFailed.add(t);
          }
        }
      }, "join-it-writer");
      writer.start();

      Member joiner = c.startJoiner();
      int beforeJoin = writes.get();
      Process join = new ProcessBuilder(Path.of(System.getProperty("java.home"), "bin", "java")
          .toString(), "-cp", System.getProperty("java.class.path"),
          ClusterMonitor.class.getName(), "--cluster-file", c.ringFile().toString(),
          "--join", joiner.id(), "--wait", "5m").redirectErrorStream(true).start();
      String joinOut = new String(join.getInputStream().readAllBytes());
      assertThat(join.waitFor(6, TimeUnit.MINUTES)).isTrue();
      System.out.println("JOIN-IT operator command:\n" + joinOut.strip());
      assertThat(join.exitValue()).as(joinOut).isZero();
      Ring fin = Membership.readRingFile(c.ringFile());
      assertThat(fin.members()).contains(joiner);
      assertThat(fin.states()).isEmpty();
      int duringJoin = writes.get() - beforeJoin;
      int target = writes.get() + 100; // and a little more under the final ring
      while (writes.get() < target && writerFailed.isEmpty()) {
        Thread.sleep(50);
      }
      stop.set(true);
      writer.join(120_000);
      assertThat(writerFailed).isEmpty();
      assertThat(duringJoin).as("writes acknowledged while the node joined").isPositive();

      // Every blob reads back its last acknowledged bytes.
      for (Map.Entry<String, byte[]> e : acked.entrySet()) {
        assertArrayEquals(e.getValue(), store.readWithVersion(e.getKey(), 1 << 20).bytes(),
            e.getKey());
      }
      // Each node stores exactly the keys it owns, once the old owners have dropped.
      List<Member> all = c.members();
      long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(120);
      List<Set<String>> after;
      while (true) {
        after = new ArrayList<>();
        boolean exact = true;
        for (Member m : all) {
          Set<String> local = localKeys(m);
          after.add(local);
          exact &= local.equals(owned(fin, m, acked.keySet()));
        }
        if (exact || System.nanoTime() > deadline) {
          break;
        }
        Thread.sleep(200);
      }
      for (int n = 0; n < all.size(); n++) {
        assertThat(after.get(n)).as("keys stored on " + all.get(n))
            .isEqualTo(owned(fin, all.get(n), acked.keySet()));
      }
      for (int n = 0; n < 3; n++) {
        Set<String> kept = new TreeSet<>(after.get(n));
        kept.removeIf(k -> k.startsWith("j/new-"));
        assertThat(before.get(n)).as("the old members only lose keys they held")
            .containsAll(kept);
      }
      try (TyrClient onJoiner = new TyrClient(ClientConfig.of(joiner.host(), joiner.port()))) {
        onJoiner.routeUnder(fin::epoch);
        for (Map.Entry<String, byte[]> e : acked.entrySet()) {
          if (fin.isReplica(joiner, e.getKey())) {
            assertArrayEquals(e.getValue(), readOn(onJoiner, e.getKey(), fin.epoch()),
                e.getKey() + " on the joiner");
          }
        }
      }

      // What moved, against the ideal: the joiner's share of the R * BLOBS replicas of the
      // blobs written before the join is 1/N. (Blobs created during it went where the
      // ring of the moment put them; counted apart.)
      long joinerKeys = 0;
      long joinerBytes = 0;
      for (String k : after.get(3)) {
        if (!k.startsWith("j/new-")) {
          joinerKeys++;
          joinerBytes += acked.get(k).length;
        }
      }
      long joinerCreated = after.get(3).size() - joinerKeys;
      long[] copied = sum(c.node(3).output(),
          "caught up under ring epoch \\d+ in \\d+ ms: \\d+ keys checked, (\\d+) copied \\((\\d+) bytes\\)");
      long[] dropped = {0, 0};
      for (int n = 0; n < 3; n++) {
        long[] d = sum(c.node(n).output(), "dropped (\\d+) keys \\((\\d+) bytes\\)");
        dropped[0] += d[0];
        dropped[1] += d[1];
      }
      double ideal = 2.0 * BLOBS / 4;
      System.out.printf("JOIN-IT %d blobs (%d bytes) before the join, %d at the end, R = 2, "
          + "3 -> 4 nodes, 128 vnodes; %d writes acknowledged during the join (%d retried), "
          + "%s%n", BLOBS, totalBytes, acked.size(), duringJoin, retried.get(),
          hosts.namespaces() ? "netns hosts" : "loopback");
      System.out.printf("JOIN-IT joiner holds %d of the blobs written before (%d bytes): "
          + "%.3f of the ideal %.0f (R/N = 2/4 of them), %.3f of their replicas against the "
          + "ideal 0.250; and %d of the %d created since%n", joinerKeys, joinerBytes,
          joinerKeys / ideal, ideal, joinerKeys / (2.0 * BLOBS), joinerCreated,
          acked.size() - BLOBS);
      System.out.printf("JOIN-IT catch-up copied %d keys (%d bytes; the rest came as new "
          + "writes); old members dropped %d keys (%d bytes)%n", copied[0], copied[1],
          dropped[0], dropped[1]);
      for (int n = 0; n < 3; n++) {
        System.out.printf("JOIN-IT %s: %d keys before, %d after%n", all.get(n),
            before.get(n).size(), after.get(n).size());
      }
      // Only the joiner's ranges moved: every key of them written before the join was
      // dropped by one old owner; one created meanwhile was, if created under the old ring.
      assertThat(dropped[0]).isBetween(joinerKeys, joinerKeys + joinerCreated);
      assertThat(copied[0]).isLessThanOrEqualTo(joinerKeys + joinerCreated).isPositive();
    }
  }

  private static byte[] value(Random r, String text) {
    byte[] head = (text + "|").getBytes(java.nio.charset.StandardCharsets.UTF_8);
    byte[] v = new byte[head.length + 500 + r.nextInt(3500)];
    r.nextBytes(v);
    System.arraycopy(head, 0, v, 0, head.length);
    return v;
  }

  private static Set<String> owned(Ring ring, Member m, Set<String> keys) {
    Set<String> out = new TreeSet<>();
    for (String k : keys) {
      if (ring.isReplica(m, k)) {
        out.add(k);
      }
    }
    return out;
  }

  /** Sums the two numbers of every line of {@code out} that {@code regex} finds. */
  private static long[] sum(String out, String regex) {
    long[] s = {0, 0};
    Matcher m = Pattern.compile(regex).matcher(out);
    while (m.find()) {
      s[0] += Long.parseLong(m.group(1));
      s[1] += Long.parseLong(m.group(2));
    }
    return s;
  }

  private static TyrClusterBlobStore store(TyrProcessCluster c) throws IOException {
    return (TyrClusterBlobStore) new TyrBlobStoreProvider().open("join", new StoreOptions(
        "fs.blob.store.join.", Map.of("nodes", c.nodesOption(), "connect-timeout", "5s",
            "op-timeout", "30s")));
  }

  /** A node's own store, every key (a scan not routed under a ring is not filtered). */
  private static Set<String> localKeys(Member m) throws IOException {
    Set<String> out = new HashSet<>();
    try (TyrClient raw = new TyrClient(ClientConfig.of(m.host(), m.port()))) {
      String cursor = null;
      do {
        ScanResult page = TyrClient.await(raw.scan("j/", cursor, 1000));
        out.addAll(page.keys());
        cursor = page.nextCursor();
      } while (cursor != null);
    }
    return out;
  }

  /** The blob as {@code raw}'s node holds it, once it serves epoch {@code epoch}. */
  private static byte[] readOn(TyrClient raw, String key, long epoch) throws Exception {
    {
      for (int attempt = 0; ; attempt++) {
        try {
          var r = TyrClient.await(raw.read(key, 0, 1 << 20));
          byte[] b = new byte[r.data().remaining()];
          r.data().get(b);
          return b;
        } catch (io.blobfs.tyr.ring.WrongEpochException behind) {
          if (attempt >= 100 || behind.ring().epoch() >= epoch) {
            throw behind;
          }
          Thread.sleep(100);
        }
      }
    }
  }
}
