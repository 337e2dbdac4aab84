package io.blobfs.tyr.ring;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.List;
import java.util.Objects;

/**
 * Where keys live in a Týr cluster: a consistent-hashing ring. Each member owns
 * {@link #vnodes()} points (tokens) on a 64-bit circle; a key hashes to a point and its
 * replicas are the first {@link #replication()} distinct members met clockwise from it,
 * the first being its primary. The ring is pure and immutable: a client and a node that
 * hold equal rings compute equal owners for every key, which is what lets clients find
 * data with no lookup service (single-hop access), and lets a node refuse a key that is
 * not its own.
 *
 * <p>The {@link #epoch()} orders rings in time. A node answers a request made under
 * another epoch with its own ring (see {@code WrongEpochException}), so a client never
 * acts on a stale view for long and never reaches the wrong node unnoticed.
 *
 * <p>Tokens are {@code hash(memberId + "#" + i)}, so a member keeps its points when
 * others join or leave: adding a node moves only the keys whose arcs it takes over (about
 * 1/N of them), all to the new node.
 */
public final class Ring {
  private final long epoch;
  private final List<Member> members;
  private final int vnodes;
  private final int replication;
  /** Sorted tokens, and for each the index of its member in {@link #members}. */
  private final long[] tokens;
  private final int[] owners;

  public Ring(long epoch, List<Member> members, int vnodes, int replication) {
    if (epoch < 1) {
      throw new IllegalArgumentException("ring epoch must be at least 1, got " + epoch);
    }
    if (members.isEmpty()) {
      throw new IllegalArgumentException("a ring needs at least one member");
    }
    if (new HashSet<>(members).size() != members.size()) {
      throw new IllegalArgumentException("a member is listed twice in " + members);
    }
    if (vnodes < 1 || vnodes > 4096) {
      throw new IllegalArgumentException("vnodes must be within 1..4096, got " + vnodes);
    }
    if (replication < 1 || replication > members.size()) {
      throw new IllegalArgumentException("replication " + replication + " must be within 1.."
          + members.size() + " (the number of members)");
    }
    this.epoch = epoch;
    this.members = List.copyOf(members);
    this.vnodes = vnodes;
    this.replication = replication;
    int n = members.size() * vnodes;
    // Sort (token, member) pairs together; equal tokens (practically never) fall back to
    // member order, so every holder of this ring sorts them alike.
    long[][] pairs = new long[n][];
    for (int m = 0; m < members.size(); m++) {
      for (int v = 0; v < vnodes; v++) {
        pairs[m * vnodes + v] = new long[] {hash(members.get(m).id() + "#" + v), m};
      }
    }
    Arrays.sort(pairs, (a, b) -> a[0] != b[0] ? Long.compare(a[0], b[0])
        : Long.compare(a[1], b[1]));
    tokens = new long[n];
    owners = new int[n];
    for (int i = 0; i < n; i++) {
      tokens[i] = pairs[i][0];
      owners[i] = (int) pairs[i][1];
    }
  }

  public long epoch() {
    return epoch;
  }

  public List<Member> members() {
    return members;
  }

  public int vnodes() {
    return vnodes;
  }

  public int replication() {
    return replication;
  }

  /** The same members and settings under another epoch. */
  public Ring withEpoch(long e) {
    return new Ring(e, members, vnodes, replication);
  }

  /** The key's replicas, primary first: {@link #replication()} distinct members. */
  public List<Member> owners(String key) {
    List<Member> out = new ArrayList<>(replication);
    int i = firstTokenAtOrAfter(hash(key));
    boolean[] taken = new boolean[members.size()];
    for (int seen = 0; out.size() < replication && seen < tokens.length; seen++) {
      int m = owners[(i + seen) % tokens.length];
      if (!taken[m]) {
        taken[m] = true;
        out.add(members.get(m));
      }
    }
    return out;
  }

  public Member primary(String key) {
    return members.get(owners[firstTokenAtOrAfter(hash(key))]);
  }

  /** Whether {@code m} holds a replica of {@code key}. */
  public boolean isReplica(Member m, String key) {
    return owners(key).contains(m);
  }

  /** Index of the first token at or clockwise after {@code h} (wrapping to 0). */
  private int firstTokenAtOrAfter(long h) {
    int i = Arrays.binarySearch(tokens, h);
    if (i < 0) {
      i = -i - 1;
    }
    return i == tokens.length ? 0 : i;
  }

  /**
   * The 64-bit position of a string on the circle: FNV-1a over its UTF-8 bytes, then
   * MurmurHash3's 64-bit finalizer so that close strings ("d/7/1", "d/7/2") land far apart.
   * Fixed forever: changing it would move every key.
   */
  public static long hash(String s) {
    long h = 0xcbf29ce484222325L;
    for (byte b : s.getBytes(StandardCharsets.UTF_8)) {
      h ^= b & 0xff;
      h *= 0x100000001b3L;
    }
    h ^= h >>> 33;
    h *= 0xff51afd7ed558ccdL;
    h ^= h >>> 33;
    h *= 0xc4ceb9fe1a85ec53L;
    h ^= h >>> 33;
    return h;
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof Ring r && r.epoch == epoch && r.vnodes == vnodes
        && r.replication == replication && r.members.equals(members);
  }

  @Override
  public int hashCode() {
    return Objects.hash(epoch, members, vnodes, replication);
  }

  @Override
  public String toString() {
    return "Ring[epoch " + epoch + ", " + members + ", " + vnodes + " vnodes, R="
        + replication + "]";
  }
}
