package io.blobfs.tyr.ring;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.TreeMap;

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
 *
 * <p><b>Member states</b> (failover, R &gt; 1). A member is {@link State#UP},
 * {@link State#DOWN} or {@link State#RECOVERING}. States never move a key: a key's
 * {@link #owners} are its placement whatever the states. What they change is who serves
 * it: its primary is its first UP owner ({@link #primary}), its backups the other owners
 * that are not DOWN ({@link #backups}: a recovering member receives new writes while it
 * copies the old ones), and only UP owners serve reads ({@link #serves}). With every
 * member UP this is the plain ring.
 */
public final class Ring {
  /** What a member does under a ring (see the class comment). */
  public enum State { UP, DOWN, RECOVERING }

  private final long epoch;
  private final List<Member> members;
  private final int vnodes;
  private final int replication;
  /** Sorted tokens, and for each the index of its member in {@link #members}. */
  private final long[] tokens;
  private final int[] owners;
  /** Members that are not UP, with their state; empty when all are (the common case). */
  private final Map<Member, State> states;

  public Ring(long epoch, List<Member> members, int vnodes, int replication) {
    this(epoch, members, vnodes, replication, Map.of());
  }

  /** With {@code states} for members that are not UP (an UP entry is the same as none). */
  public Ring(long epoch, List<Member> members, int vnodes, int replication,
      Map<Member, State> states) {
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
    Map<Member, State> notUp = new TreeMap<>(java.util.Comparator.comparing(Member::id));
    for (Map.Entry<Member, State> e : states.entrySet()) {
      if (!members.contains(e.getKey())) {
        throw new IllegalArgumentException(e.getKey() + " has a state but is not a member of "
            + members);
      }
      if (e.getValue() != State.UP) {
        notUp.put(e.getKey(), e.getValue());
      }
    }
    this.states = java.util.Collections.unmodifiableMap(notUp);
    this.epoch = epoch;
    this.members = List.copyOf(members);
    this.vnodes = vnodes;
    this.replication = replication;
    int n = members.size() * vnodes;
    // Tokens sorted, each with its member; equal tokens (practically never) in member
    // order, so every holder of this ring sorts them alike. Primitive arrays only: at 1,000
    // members x 128 vnodes a sort of (token, member) pair objects took 0.3-1.5 s, paid by
    // every client at every ring change (RingSimulation).
    long[] byMember = new long[n];
    for (int m = 0; m < members.size(); m++) {
      String prefix = members.get(m).id() + "#";
      for (int v = 0; v < vnodes; v++) {
        byMember[m * vnodes + v] = hash(prefix + v);
      }
    }
    tokens = byMember.clone();
    Arrays.sort(tokens);
    owners = new int[n];
    Arrays.fill(owners, -1);
    for (int m = 0; m < members.size(); m++) {
      for (int v = 0; v < vnodes; v++) {
        long t = byMember[m * vnodes + v];
        int i = Arrays.binarySearch(tokens, t);
        while (i > 0 && tokens[i - 1] == t) {
          i--; // the first of equal tokens
        }
        while (owners[i] != -1) {
          i++; // taken by an earlier member (or vnode) with the same token
        }
        owners[i] = m;
      }
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

  /** The same members, settings and states under another epoch. */
  public Ring withEpoch(long e) {
    return new Ring(e, members, vnodes, replication, states);
  }

  /** This ring with {@code m} in state {@code s}, under epoch {@code e}. */
  public Ring withState(Member m, State s, long e) {
    Map<Member, State> next = new java.util.HashMap<>(states);
    next.put(m, s);
    return new Ring(e, members, vnodes, replication, next);
  }

  public State state(Member m) {
    return states.getOrDefault(m, State.UP);
  }

  /** The members that are not UP, and their states. */
  public Map<Member, State> states() {
    return states;
  }

  /** The members that serve reads and scans: the UP ones. */
  public List<Member> upMembers() {
    if (states.isEmpty()) {
      return members;
    }
    List<Member> out = new ArrayList<>(members.size());
    for (Member m : members) {
      if (state(m) == State.UP) {
        out.add(m);
      }
    }
    return out;
  }

  /**
   * The owners that take {@code key}'s writes, primary first: its {@link #primary}, then
   * its {@link #backups}. Without an UP owner, the key's first owner alone (calls to it
   * fail as unreachable, and nothing else may take them).
   */
  public List<Member> writeSet(String key) {
    List<Member> owners = owners(key);
    if (states.isEmpty()) {
      return owners;
    }
    List<Member> out = new ArrayList<>(owners.size());
    Member primary = primaryOf(owners);
    out.add(primary);
    for (Member m : owners) {
      if (!m.equals(primary) && state(m) != State.DOWN) {
        out.add(m);
      }
    }
    return out;
  }

  /** {@code key}'s owners other than its primary that are not DOWN. */
  public List<Member> backups(String key) {
    List<Member> w = writeSet(key);
    return w.subList(1, w.size());
  }

  /** The UP owners of {@code key}: those that may serve its reads. */
  public List<Member> readSet(String key) {
    List<Member> owners = owners(key);
    if (states.isEmpty()) {
      return owners;
    }
    List<Member> out = new ArrayList<>(owners.size());
    for (Member m : owners) {
      if (state(m) == State.UP) {
        out.add(m);
      }
    }
    return out;
  }

  /** Whether {@code m} is UP and holds a replica of {@code key}: it may serve its reads. */
  public boolean serves(Member m, String key) {
    return state(m) == State.UP && isReplica(m, key);
  }

  private Member primaryOf(List<Member> owners) {
    for (Member m : owners) {
      if (state(m) == State.UP) {
        return m;
      }
    }
    return owners.get(0);
  }

  /** The key's replicas, primary first: {@link #replication()} distinct members. */
  public List<Member> owners(String key) {
    return ownersAt(firstTokenAtOrAfter(hash(key)));
  }

  /**
   * The replicas of whatever hashes to {@code point} on the circle (what {@link #owners}
   * gives a key with that hash): for tools that reason about arcs rather than keys.
   */
  public List<Member> ownersOfPoint(long point) {
    return ownersAt(firstTokenAtOrAfter(point));
  }

  /** The owners of the arc that ends at token index {@code i}. */
  private List<Member> ownersAt(int i) {
    List<Member> out = new ArrayList<>(replication);
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

  /**
   * The member that orders {@code key}'s writes: its first UP owner (its first owner when
   * every member is UP; when none of its owners is, its first owner, which cannot be
   * reached).
   */
  public Member primary(String key) {
    if (states.isEmpty()) {
      return members.get(owners[firstTokenAtOrAfter(hash(key))]);
    }
    return primaryOf(owners(key));
  }

  /**
   * The members other than {@code m} that, under {@code before}, are the primary of some
   * key this ring makes {@code m} the primary of: the stand-ins a node just UP again takes
   * its keys back from. Both rings' tokens bound every arc on which neither ring's owners
   * change, so a look at each token covers the circle.
   */
  public java.util.Set<Member> primariesBefore(Ring before, Member m) {
    java.util.Set<Member> out = new java.util.LinkedHashSet<>();
    for (long[] points : new long[][] {tokens, before.tokens}) {
      for (long point : points) {
        if (primaryOf(ownersOfPoint(point)).equals(m)) {
          Member was = before.primaryOf(before.ownersOfPoint(point));
          if (!was.equals(m)) {
            out.add(was);
          }
        }
      }
    }
    return out;
  }

  /** Whether {@code m} holds a replica of {@code key}. */
  public boolean isReplica(Member m, String key) {
    return owners(key).contains(m);
  }

  /**
   * Whether every arc of the circle has an UP owner: every key has a member that may
   * serve it. When one has none, its keys can be neither read nor listed, and a member
   * that copies it (catch-up) would have nothing current to copy from.
   */
  public boolean allRangesServed() {
    return unservedRange(null) == null;
  }

  /** {@link #unservedRange}(null), computed once: a walk over every token. */
  private volatile Long[] unservedAny;

  /** Whether every arc {@code m} holds a replica of has an UP owner. */
  public boolean rangesServed(Member m) {
    return unservedRange(m) == null;
  }

  /**
   * A key-space point (the token ending an arc) whose owners include {@code m} (any
   * member if null) and none of which is UP, or null if there is none.
   */
  public Long unservedRange(Member m) {
    if (states.isEmpty()) {
      return null;
    }
    if (m == null) {
      // The cluster client asks this for every page of a listing while a member is not
      // UP; at 1,000 members x 128 vnodes one walk takes a third of a second (measured,
      // RingSimulation), so it is made once per ring (the ring is immutable).
      Long[] known = unservedAny;
      if (known == null) {
        known = new Long[] {walkUnserved(null)};
        unservedAny = known;
      }
      return known[0];
    }
    return walkUnserved(m);
  }

  private Long walkUnserved(Member m) {
    for (int i = 0; i < tokens.length; i++) {
      List<Member> own = ownersAt(i);
      if ((m == null || own.contains(m)) && own.stream().noneMatch(o -> state(o) == State.UP)) {
        return tokens[i];
      }
    }
    return null;
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
        && r.replication == replication && r.members.equals(members)
        && r.states.equals(states);
  }

  @Override
  public int hashCode() {
    return Objects.hash(epoch, members, vnodes, replication, states);
  }

  @Override
  public String toString() {
    return "Ring[epoch " + epoch + ", " + members + ", " + vnodes + " vnodes, R="
        + replication + (states.isEmpty() ? "" : ", " + states) + "]";
  }
}
