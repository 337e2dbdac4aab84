package io.blobfs.tyr.ring;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Random;
import org.junit.jupiter.api.Test;

class RingTest {
  private static final List<Member> THREE = Member.parseList("h1:7400,h2:7400,h3:7400");

  private static String key(Random r) {
    return "d/" + Long.toHexString(r.nextLong()) + "/" + r.nextInt(100);
  }

  @Test
  void ownersAreRDistinctMembersPrimaryFirstAndTheSameForEveryHolder() {
    Ring a = new Ring(1, THREE, 128, 2);
    Ring b = new Ring(1, Member.parseList("h1:7400, h2:7400 ,h3:7400"), 128, 2);
    assertEquals(a, b);
    Random r = new Random(1);
    for (int i = 0; i < 10_000; i++) {
      String k = key(r);
      List<Member> owners = a.owners(k);
      assertEquals(2, owners.size(), k);
      assertNotEquals(owners.get(0), owners.get(1), k);
      assertEquals(a.primary(k), owners.get(0), k);
      assertEquals(owners, b.owners(k), k);
      assertTrue(a.isReplica(owners.get(1), k));
    }
    Ring all = new Ring(1, THREE, 128, 3);
    assertEquals(new HashSet<>(THREE), new HashSet<>(all.owners("x")));
  }

  /**
   * Placement is the plain definition: the first R distinct members clockwise from the
   * key's hash over the (token, member index) pairs in order. The constructor sorts with
   * primitive arrays; this reference sorts the pairs as objects.
   */
  @Test
  void ownersAreTheWalkOverTheSortedTokens() {
    List<Member> members = new java.util.ArrayList<>();
    for (int i = 0; i < 50; i++) {
      members.add(new Member("10.0.0." + i, 7400));
    }
    Ring ring = new Ring(1, members, 32, 3);
    List<long[]> pairs = new java.util.ArrayList<>();
    for (int m = 0; m < members.size(); m++) {
      for (int v = 0; v < 32; v++) {
        pairs.add(new long[] {Ring.hash(members.get(m).id() + "#" + v), m});
      }
    }
    pairs.sort((x, y) -> x[0] != y[0] ? Long.compare(x[0], y[0]) : Long.compare(x[1], y[1]));
    Random r = new Random(3);
    for (int i = 0; i < 20_000; i++) {
      String k = key(r);
      long h = Ring.hash(k);
      int at = 0;
      while (at < pairs.size() && pairs.get(at)[0] < h) {
        at++;
      }
      List<Member> want = new java.util.ArrayList<>();
      for (int seen = 0; want.size() < 3; seen++) {
        Member m = members.get((int) pairs.get((at + seen) % pairs.size())[1]);
        if (!want.contains(m)) {
          want.add(m);
        }
      }
      assertEquals(want, ring.owners(k), k);
    }
  }

  @Test
  void keysSpreadEvenlyOverMembers() {
    Ring ring = new Ring(1, THREE, 128, 1);
    Map<Member, Integer> counts = new HashMap<>();
    Random r = new Random(2);
    int n = 60_000;
    for (int i = 0; i < n; i++) {
      counts.merge(ring.primary(key(r)), 1, Integer::sum);
    }
    for (Member m : THREE) {
      double share = counts.get(m) / (double) n;
      assertTrue(share > 0.25 && share < 0.42, m + " holds " + share);
    }
  }

  /** The consistent-hashing promise: a fourth node takes about 1/4, and only to itself. */
  @Test
  void aJoiningNodeTakesAboutItsShareAndNothingElseMoves() {
    Ring before = new Ring(1, THREE, 128, 1);
    Member fourth = Member.parse("h4:7400");
    List<Member> four = new java.util.ArrayList<>(THREE);
    four.add(fourth);
    Ring after = new Ring(2, four, 128, 1);
    Random r = new Random(3);
    int n = 40_000;
    int moved = 0;
    for (int i = 0; i < n; i++) {
      String k = key(r);
      Member was = before.primary(k);
      Member is = after.primary(k);
      if (!was.equals(is)) {
        moved++;
        assertEquals(fourth, is, k + " moved between old members");
      }
    }
    double share = moved / (double) n;
    System.out.printf("a 4th node joining 3 (128 vnodes) moved %.3f of %d keys (ideal 0.250)%n",
        share, n);
    assertTrue(share > 0.17 && share < 0.33, "moved " + share);
  }

  @Test
  void theHashIsFixed() {
    // Changing the hash would move every stored key: these values (checked against an
    // independent Python of FNV-1a + fmix64) must never change.
    assertEquals(Ring.hash(""), Ring.hash(""));
    assertEquals(-1166397803181037274L, Ring.hash(""));
    assertEquals(-2024361323200824378L, Ring.hash("d/1/0"));
    assertEquals(new Ring(7, THREE, 16, 1).owners("d/1/0"),
        new Ring(7, THREE, 16, 1).owners("d/1/0"));
  }

  @Test
  void badRingsAreRefused() {
    assertThrows(IllegalArgumentException.class, () -> new Ring(0, THREE, 128, 1));
    assertThrows(IllegalArgumentException.class, () -> new Ring(1, List.of(), 128, 1));
    assertThrows(IllegalArgumentException.class, () -> new Ring(1, THREE, 128, 4));
    assertThrows(IllegalArgumentException.class, () -> new Ring(1, THREE, 0, 1));
    assertThrows(IllegalArgumentException.class,
        () -> new Ring(1, Member.parseList("a:1,a:1"), 8, 1));
    assertThrows(IllegalArgumentException.class, () -> Member.parse("nohost"));
    assertThrows(IllegalArgumentException.class, () -> Member.parse("h:0"));
    assertThrows(IllegalArgumentException.class, () -> Member.parse("h:x"));
  }

  /**
   * The stand-ins a node just UP again waits for are the primaries, under the ring before,
   * of the keys it is the primary of again, and only those: with few tokens some members
   * never stood in for it (the hand-over waited for every member UP under the ring before).
   */
  @Test
  void primariesBeforeAreTheStandInsOfTheKeysTakenBack() {
    List<Member> six = Member.parseList("h0:7400,h1:7400,h2:7400,h3:7400,h4:7400,h5:7400");
    Member h0 = six.get(0);
    Ring recovering = new Ring(1, six, 4, 2).withState(h0, Ring.State.DOWN, 2)
        .withState(h0, Ring.State.RECOVERING, 3);
    Ring up = recovering.withState(h0, Ring.State.UP, 4);
    java.util.Set<Member> seen = new HashSet<>();
    Random r = new Random(5);
    for (int i = 0; i < 50_000; i++) {
      String k = key(r);
      if (up.primary(k).equals(h0)) {
        seen.add(recovering.primary(k));
      }
    }
    assertEquals(seen, up.primariesBefore(recovering, h0));
    assertTrue(seen.size() < 5, "every other member stood in: " + seen);
    assertEquals(java.util.Set.of(), up.primariesBefore(up, h0));
  }

  /**
   * States move no key: a DOWN owner hands its keys' writes to the next UP owner and is
   * no backup; a RECOVERING one is a backup but neither primary nor reader.
   */
  @Test
  void statesChooseWhoServesNotWhereKeysLive() {
    Ring all = new Ring(1, THREE, 64, 2);
    Member h1 = THREE.get(0);
    Ring down = all.withState(h1, Ring.State.DOWN, 2);
    Ring recovering = down.withState(h1, Ring.State.RECOVERING, 3);
    Ring up = recovering.withState(h1, Ring.State.UP, 4);
    assertEquals(all.withEpoch(4), up);
    Random r = new Random(3);
    int h1Primary = 0;
    for (int i = 0; i < 5_000; i++) {
      String k = key(r);
      List<Member> owners = all.owners(k);
      assertEquals(owners, down.owners(k), k);
      if (owners.get(0).equals(h1)) {
        h1Primary++;
        assertEquals(owners.get(1), down.primary(k), k);
        assertEquals(List.of(), down.backups(k), k);
        assertEquals(owners.get(1), recovering.primary(k), k);
        assertEquals(List.of(h1), recovering.backups(k), k);
        assertEquals(List.of(owners.get(1)), recovering.readSet(k), k);
      } else if (owners.contains(h1)) {
        assertEquals(owners.get(0), down.primary(k), k);
        assertEquals(List.of(), down.backups(k), k);
        assertEquals(List.of(h1), recovering.backups(k), k);
        assertTrue(!recovering.serves(h1, k));
      } else {
        assertEquals(owners, down.writeSet(k), k);
      }
      assertEquals(all.primary(k), up.primary(k), k);
    }
    assertTrue(h1Primary > 1000, "h1 is primary of " + h1Primary);
    assertEquals(List.of(THREE.get(1), THREE.get(2)), down.upMembers());
    assertThrows(IllegalArgumentException.class, () -> all.withState(
        new Member("h9", 1), Ring.State.DOWN, 2));
  }
}
