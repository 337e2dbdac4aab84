package io.blobfs.bench.tyr;

import io.blobfs.tyr.protocol.Messages;
import io.blobfs.tyr.ring.Member;
import io.blobfs.tyr.ring.Ring;
import io.blobfs.tyr.server.Membership;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;

/**
 * "Toward 1,000 nodes" (issue 13, blobfs-tyr/README.md): builds the real {@link Ring} with
 * N members (1,000 by default) and the project's virtual-node count (128) and reports, in
 * seconds: the ring's size in memory and on the wire, the balance of keys per node (exact,
 * from the arcs, and sampled over chunk keys), the client's lookup cost against a 3-node
 * ring measured interleaved, what a ring change costs a client, and what one node's loss
 * costs the others. {@code scripts/sim-tyr-ring.sh [N] [VNODES] [KEYS] [R]}.
 */
public final class RingSimulation {
  private static final double CIRCLE = Math.pow(2, 64);

  public static void main(String[] args) throws Exception {
    int n = args.length > 0 ? Integer.parseInt(args[0]) : 1000;
    int vnodes = args.length > 1 ? Integer.parseInt(args[1]) : 128;
    long keys = args.length > 2 ? Long.parseLong(args[2]) : 2_000_000L;
    int r = args.length > 3 ? Integer.parseInt(args[3]) : 2;
    System.out.printf(Locale.ROOT, "# Týr ring at %d nodes: %d vnodes, R = %d (load average "
        + "%.1f at start)%n%n", n, vnodes, r, loadAverage());
    List<Member> members = members(n);
    Ring ring = new Ring(1, members, vnodes, r);

    size(members, ring);
    balance(members, ring, keys);
    vnodeCounts(members, r);
    lookups(ring, r);
    epochChange(ring);
    nodeLoss(members, ring);
    System.out.printf(Locale.ROOT, "%nload average %.1f at the end%n", loadAverage());
  }

  static List<Member> members(int n) {
    List<Member> out = new ArrayList<>(n);
    for (int i = 0; i < n; i++) {
      out.add(new Member("10." + (1 + i / 250 / 250) + "." + (i / 250 % 250) + "."
          + (1 + i % 250), 7400));
    }
    return out;
  }

  // ---------------------------------------------------------------- size

  private static void size(List<Member> members, Ring ring) throws Exception {
    long[] build = new long[5];
    for (int i = 0; i < build.length; i++) {
      long t = System.nanoTime();
      new Ring(1, members, ring.vnodes(), ring.replication());
      build[i] = System.nanoTime() - t;
    }
    // The constructor before it sorted with primitive arrays: (token, member) pair
    // objects sorted with a comparator; timed alternately with today's, same tokens.
    long[] pairSort = new long[5];
    long[] primitive = new long[5];
    for (int i = 0; i < pairSort.length; i++) {
      long t = System.nanoTime();
      pairSortTokens(members, ring.vnodes());
      pairSort[i] = System.nanoTime() - t;
      t = System.nanoTime();
      new Ring(1, members, ring.vnodes(), ring.replication());
      primitive[i] = System.nanoTime() - t;
    }
    Ring[] held = new Ring[4];
    long before = usedHeap();
    for (int i = 0; i < held.length; i++) {
      held[i] = new Ring(1 + i, members, ring.vnodes(), ring.replication());
    }
    long retained = (usedHeap() - before) / held.length;
    ByteBuf wire = Messages.encodeRing(ring, Unpooled.buffer());
    int wireBytes = wire.readableBytes();
    long[] decode = new long[5];
    for (int i = 0; i < decode.length; i++) {
      ByteBuf copy = wire.duplicate();
      long t = System.nanoTime();
      Ring back = Messages.decodeRing(copy);
      decode[i] = System.nanoTime() - t;
      if (!back.equals(ring)) {
        throw new AssertionError("the ring did not survive its encoding");
      }
    }
    int fileBytes = Membership.ringFileText(ring).getBytes(
        java.nio.charset.StandardCharsets.UTF_8).length;
    long tokens = (long) members.size() * ring.vnodes();
    System.out.printf(Locale.ROOT, "## Size%n"
        + "- tokens: %,d (%d members x %d vnodes); arrays %,d bytes (8-byte token + 4-byte "
        + "member index each)%n"
        + "- retained heap of one Ring, measured: about %,d bytes (members and their ids "
        + "included; %s)%n"
        + "- built in %.1f ms (median of 5; it hashes and sorts every token); alternated "
        + "with the former constructor's sort of (token, member) pairs: %.1f ms against "
        + "%.1f ms, %.2fx%n"
        + "- on the wire (RING reply, WRONG_EPOCH refusal): %,d bytes; ring file %,d bytes "
        + "(members only: tokens are recomputed, never sent)%n"
        + "- decoded and built by a client in %.1f ms (median of 5)%n%n",
        tokens, members.size(), ring.vnodes(), tokens * 12, retained,
        held.length + " rings held, heap delta / " + held.length, median(build) / 1e6,
        median(primitive) / 1e6, median(pairSort) / 1e6,
        median(pairSort) / median(primitive),
        wireBytes, fileBytes, median(decode) / 1e6);
  }

  /** The token table as Ring built it before: pair objects sorted by a comparator. */
  private static long[][] pairSortTokens(List<Member> members, int vnodes) {
    long[][] pairs = new long[members.size() * vnodes][];
    for (int m = 0; m < members.size(); m++) {
      for (int v = 0; v < vnodes; v++) {
        pairs[m * vnodes + v] = new long[] {Ring.hash(members.get(m).id() + "#" + v), m};
      }
    }
    Arrays.sort(pairs, (a, b) -> a[0] != b[0] ? Long.compare(a[0], b[0])
        : Long.compare(a[1], b[1]));
    return pairs;
  }

  // ---------------------------------------------------------------- balance

  /** Sorted tokens of {@code ring} as Ring computes them (its hash of member#i). */
  private static long[] tokens(List<Member> members, int vnodes) {
    long[] t = new long[members.size() * vnodes];
    int i = 0;
    for (Member m : members) {
      for (int v = 0; v < vnodes; v++) {
        t[i++] = Ring.hash(m.id() + "#" + v);
      }
    }
    Arrays.sort(t);
    return t;
  }

  /** Each member's exact share of the circle: [0] as primary, [1] as any replica. */
  private static double[][] shares(List<Member> members, Ring ring) {
    Map<Member, Integer> index = new HashMap<>();
    for (int i = 0; i < members.size(); i++) {
      index.put(members.get(i), i);
    }
    long[] t = tokens(members, ring.vnodes());
    double[] primary = new double[members.size()];
    double[] replica = new double[members.size()];
    for (int i = 0; i < t.length; i++) {
      double arc = unsigned(t[i] - t[(i + t.length - 1) % t.length]) / CIRCLE;
      if (t.length == 1) {
        arc = 1;
      }
      List<Member> owners = ring.ownersOfPoint(t[i]);
      primary[index.get(owners.get(0))] += arc;
      for (Member m : owners) {
        replica[index.get(m)] += arc;
      }
    }
    return new double[][] {primary, replica};
  }

  private static void balance(List<Member> members, Ring ring, long keys) {
    double[][] s = shares(members, ring);
    System.out.printf(Locale.ROOT, "## Balance of keys per node%n"
        + "- exact, from the arcs: primary %s; replicas (R = %d) %s%n",
        spread(s[0]), ring.replication(), spread(s[1]));
    Map<Member, Integer> index = new HashMap<>();
    for (int i = 0; i < members.size(); i++) {
      index.put(members.get(i), i);
    }
    long[] primary = new long[members.size()];
    long[] replica = new long[members.size()];
    long t = System.nanoTime();
    StringBuilder k = new StringBuilder();
    for (long i = 0; i < keys; i++) {
      // chunk keys as BlobFS names them: a file's blob, then its chunk number
      k.setLength(0);
      k.append("user/data/part-").append(i >> 6).append("/c").append(i & 63);
      List<Member> owners = ring.owners(k.toString());
      primary[index.get(owners.get(0))]++;
      for (Member m : owners) {
        replica[index.get(m)]++;
      }
    }
    System.out.printf(Locale.ROOT, "- sampled, %,d chunk keys (%.1f s): primary %s; "
        + "replicas %s%n%n", keys, (System.nanoTime() - t) / 1e9, spread(toDouble(primary)),
        spread(toDouble(replica)));
  }

  private static void vnodeCounts(List<Member> members, int r) {
    System.out.printf(Locale.ROOT, "## Balance against the virtual-node count (exact, "
        + "replica share, R = %d)%n| vnodes | max/mean | min/mean | stddev/mean | tokens | "
        + "ring build ms |%n|---:|---:|---:|---:|---:|---:|%n", r);
    for (int v : new int[] {32, 64, 128, 256, 512, 1024}) {
      long t = System.nanoTime();
      Ring ring = new Ring(1, members, v, r);
      long built = System.nanoTime() - t;
      double[] s = shares(members, ring)[1];
      double mean = mean(s);
      System.out.printf(Locale.ROOT, "| %d | %.3f | %.3f | %.3f | %,d | %.0f |%n", v,
          max(s) / mean, min(s) / mean, stddev(s) / mean, (long) members.size() * v,
          built / 1e6);
    }
    System.out.println();
  }

  // ---------------------------------------------------------------- lookups

  /** ns per lookup on {@code big} and on a 3-node ring, in alternating rounds. */
  private static void lookups(Ring big, int r) {
    Ring small = new Ring(1, members(3), big.vnodes(), Math.min(r, 3));
    String[] keys = new String[1 << 18];
    for (int i = 0; i < keys.length; i++) {
      keys[i] = "user/data/part-" + (i * 7919L) + "/c" + (i & 63);
    }
    int rounds = 5;
    double[][] ns = new double[4][rounds];
    long sink = 0;
    for (int round = -2; round < rounds; round++) { // two warm-up rounds
      for (int which = 0; which < 4; which++) {
        Ring ring = which % 2 == 0 ? small : big;
        boolean owners = which >= 2;
        long t = System.nanoTime();
        for (String k : keys) {
          sink += owners ? ring.owners(k).size() : ring.primary(k).port();
        }
        if (round >= 0) {
          ns[which][round] = (System.nanoTime() - t) / (double) keys.length;
        }
      }
    }
    double primary3 = median(ns[0]);
    double primaryN = median(ns[1]);
    double owners3 = median(ns[2]);
    double ownersN = median(ns[3]);
    System.out.printf(Locale.ROOT, "## Client lookups (%d rounds of %,d keys, interleaved; "
        + "medians; checksum %d)%n"
        + "| lookup | 3 nodes ns | %d nodes ns | ratio |%n|---|---:|---:|---:|%n"
        + "| primary(key) (hash + binary search) | %.0f | %.0f | %.2f |%n"
        + "| owners(key), R = %d | %.0f | %.0f | %.2f |%n", rounds, keys.length, sink & 0xff,
        big.members().size(), primary3, primaryN, primaryN / primary3, r, owners3, ownersN,
        ownersN / owners3);
    long[] first = new long[3];
    long[] again = new long[3];
    for (int i = 0; i < first.length; i++) {
      Ring down = big.withState(big.members().get(i), Ring.State.DOWN, 2 + i);
      long s = System.nanoTime();
      down.unservedRange(null);
      first[i] = System.nanoTime() - s;
      s = System.nanoTime();
      down.unservedRange(null);
      again[i] = System.nanoTime() - s;
    }
    System.out.printf(Locale.ROOT, "- unservedRange(null) on a ring with one member DOWN (the "
        + "cluster client checks it for every scan page while a member is not UP): %.1f ms "
        + "the first time (a walk over every token), %.4f ms after (kept with the ring)%n%n",
        median(first) / 1e6, median(again) / 1e6);
  }

  // ---------------------------------------------------------------- ring changes

  private static void epochChange(Ring ring) {
    int wire = Messages.encodeRing(ring, Unpooled.buffer()).readableBytes();
    int n = ring.members().size();
    System.out.printf(Locale.ROOT, "## A ring change%n"
        + "- nodes load the ring file within its 1 s poll; the file must reach every host "
        + "(%d copies of %,d bytes). Clients are not told: a client learns the new epoch "
        + "from the first refusal (WRONG_EPOCH carrying the node's ring, %,d bytes) of a "
        + "request it makes under the old one, adopts it and retries on the owner under "
        + "the new ring.%n"
        + "- requests that see a stale epoch, per client: those already sent under the old "
        + "epoch when it meets the first refusal, at most its requests in flight "
        + "(connections x pipelined calls), at least 1 if it makes any request; a client "
        + "that makes none learns nothing and pays nothing. Each refusal costs one round "
        + "trip and one ring (%,d bytes, decoded and built again).%n"
        + "- a client ahead of a node (the node has not polled the file yet) is refused "
        + "too and backs off 20 ms doubling, 8 tries: up to the 1 s poll of lag.%n"
        + "- per ring change, with C clients each with k requests in flight: between C and "
        + "C*k refusals and as many rings sent: for C = 10,000 clients, k = 4, %,.0f to "
        + "%,.0f MB in all, %,.1f to %,.1f MB per node.%n"
        + "- a join costs two ring changes (RECOVERING, UP), a loss and return three "
        + "(DOWN, RECOVERING, UP).%n%n",
        n, Membership.ringFileText(ring).length(), wire, wire,
        10_000.0 * wire / 1e6, 40_000.0 * wire / 1e6, 10_000.0 * wire / 1e6 / n,
        40_000.0 * wire / 1e6 / n);
  }

  // ---------------------------------------------------------------- node loss

  private static void nodeLoss(List<Member> members, Ring ring) {
    Map<Member, Integer> index = new HashMap<>();
    for (int i = 0; i < members.size(); i++) {
      index.put(members.get(i), i);
    }
    long[] t = tokens(members, ring.vnodes());
    // For each member: bytes (as a share of the circle) each other member serves it from.
    List<Map<Integer, Double>> from = new ArrayList<>();
    for (int i = 0; i < members.size(); i++) {
      from.add(new HashMap<>());
    }
    for (int i = 0; i < t.length; i++) {
      double arc = unsigned(t[i] - t[(i + t.length - 1) % t.length]) / CIRCLE;
      List<Member> owners = ring.ownersOfPoint(t[i]);
      for (Member lost : owners) {
        // Its catch-up copies each key from the key's primary with it not UP: the first
        // other owner (R >= 2); the others serve its reads and take its writes meanwhile.
        for (Member o : owners) {
          if (!o.equals(lost)) {
            from.get(index.get(lost)).merge(index.get(o), arc, Double::sum);
            break;
          }
        }
      }
    }
    double[] peers = new double[members.size()];
    double[] maxShare = new double[members.size()];
    Set<Integer> any = new HashSet<>();
    for (int i = 0; i < members.size(); i++) {
      Map<Integer, Double> f = from.get(i);
      peers[i] = f.size();
      double total = f.values().stream().mapToDouble(Double::doubleValue).sum();
      maxShare[i] = f.values().stream().mapToDouble(Double::doubleValue).max().orElse(0)
          / total;
      any.addAll(f.keySet());
    }
    double dataTb = 100; // logical data in the cluster
    double perNodeTb = dataTb * ring.replication() / members.size();
    double meanPeers = mean(peers);
    System.out.printf(Locale.ROOT, "## One node's loss (R = %d)%n"
        + "- the members its ranges share, each of which serves part of its reads while it "
        + "is down and sends part of its catch-up: mean %.0f, min %.0f, max %.0f (of %d)%n"
        + "- for %.0f TB of logical data: a node holds %.0f GB; its catch-up reads it from "
        + "those members, about %.2f GB each on average; the largest single source gives "
        + "%.1f%% of it at worst (mean over nodes %.1f%%)%n"
        + "- Recovery lists every UP member's keys to find its own: R x all keys of the "
        + "cluster go over the network for one node's R/N (at 4 MiB chunks, %,.0f M keys "
        + "listed to copy %,.0f k)%n", ring.replication(), meanPeers, min(peers), max(peers),
        members.size() - 1, dataTb, perNodeTb * 1000, perNodeTb * 1000 / meanPeers,
        100 * max(maxShare), 100 * mean(maxShare),
        dataTb * 1e12 * ring.replication() / (4 << 20) / 1e6,
        perNodeTb * 1e12 / (4 << 20) / 1e3);
  }

  // ---------------------------------------------------------------- helpers

  private static double unsigned(long v) {
    return v >= 0 ? v : v + CIRCLE;
  }

  private static String spread(double[] s) {
    double mean = mean(s);
    return String.format(Locale.ROOT, "max/mean %.3f, min/mean %.3f, stddev/mean %.3f",
        max(s) / mean, min(s) / mean, stddev(s) / mean);
  }

  private static double[] toDouble(long[] a) {
    double[] d = new double[a.length];
    for (int i = 0; i < a.length; i++) {
      d[i] = a[i];
    }
    return d;
  }

  private static double mean(double[] a) {
    return Arrays.stream(a).average().orElse(0);
  }

  private static double max(double[] a) {
    return Arrays.stream(a).max().orElse(0);
  }

  private static double min(double[] a) {
    return Arrays.stream(a).min().orElse(0);
  }

  private static double stddev(double[] a) {
    double m = mean(a);
    return Math.sqrt(Arrays.stream(a).map(x -> (x - m) * (x - m)).sum() / a.length);
  }

  private static double median(long[] a) {
    long[] s = a.clone();
    Arrays.sort(s);
    return s[s.length / 2];
  }

  private static double median(double[] a) {
    double[] s = a.clone();
    Arrays.sort(s);
    return s[s.length / 2];
  }

  private static long usedHeap() throws InterruptedException {
    Runtime rt = Runtime.getRuntime();
    for (int i = 0; i < 3; i++) {
      System.gc();
      Thread.sleep(50);
    }
    return rt.totalMemory() - rt.freeMemory();
  }

  private static double loadAverage() {
    return java.lang.management.ManagementFactory.getOperatingSystemMXBean()
        .getSystemLoadAverage();
  }
}
