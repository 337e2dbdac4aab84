package io.blobfs.tyr.server;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assertions.assertEquals;

import io.blobfs.tyr.api.TxOp;
import io.blobfs.tyr.api.TxRequest;
import io.blobfs.tyr.client.TyrClient;
import io.blobfs.tyr.engine.EngineConfig;
import io.blobfs.tyr.engine.SyncPolicy;
import io.blobfs.tyr.ring.Member;
import io.blobfs.tyr.ring.Ring;
import java.io.IOException;
import java.net.ServerSocket;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The drop of handed-over keys deletes an old copy only once every owner under the ring
 * holds the key: a ring changed by hand (another vnode count, no join, no copy) deletes
 * nothing, and the copy goes once the new owner has the key.
 */
class RangeDropTest {
  @TempDir
  Path dir;

  @Test
  void keepsACopyItsNewOwnerLacksAndDropsItOnceTheOwnerHoldsIt() throws Exception {
    Member a = new Member("127.0.0.1", freePort());
    Member b = new Member("127.0.0.1", freePort());
    Ring before = new Ring(1, List.of(a, b), 16, 1);
    Ring edited = new Ring(2, List.of(a, b), 48, 1); // other tokens: some keys move to b
    try (TyrServer na = TyrServer.start(config(a, "a"), new Membership(a, before));
        TyrServer nb = TyrServer.start(config(b, "b"), new Membership(b, before))) {
      List<String> moved = new ArrayList<>();
      for (int i = 0; i < 200; i++) {
        String k = "k/" + i;
        if (before.primary(k).equals(a)) {
          put(na, k, "on a");
          if (edited.primary(k).equals(b)) {
            moved.add(k);
          }
        }
      }
      assertThat(moved).isNotEmpty();
      na.membership().install(edited);
      nb.membership().install(edited);
      RangeDrop drop = new RangeDrop(na.membership(), na.engine(), PeerAccess.NONE, 8 << 20);
      try {
        RangeDrop.Dropped first = drop.pass(edited.epoch());
        assertEquals(0, first.keys(), "b never copied them: nothing is dropped");
        assertEquals(moved.size(), first.waiting());
        for (String k : moved) {
          assertThat(na.engine().stat(k).exists()).as(k).isTrue();
        }
        for (String k : moved) {
          put(nb, k, "written on b, its owner now");
        }
        drop.pass(edited.epoch()); // the server's own drop may run too: check the outcome
        for (String k : moved) {
          assertThat(na.engine().stat(k).exists()).as(k + " dropped from a").isFalse();
          assertThat(nb.engine().stat(k).exists()).as(k + " kept on b").isTrue();
        }
      } finally {
        drop.close();
      }
    }
  }

  /**
   * R = 2, the node's handed-over keys owned by b and c, and c unreachable: c is asked once
   * in the pass, not once per key, and every key waits for a later pass (kept).
   */
  @Test
  void anOwnerThatCannotAnswerIsAskedOncePerPassAndItsKeysWait() throws Exception {
    Member a = new Member("127.0.0.1", freePort());
    Member b = new Member("127.0.0.1", freePort()); // nothing listens at b and c: the
    Member c = new Member("127.0.0.1", freePort()); // test's asker answers for them
    Ring ring = new Ring(1, List.of(a, b, c), 16, 2);
    try (TyrServer na = TyrServer.start(config(a, "a"), new Membership(a, ring))) {
      List<String> handedOver = new ArrayList<>();
      // Placement follows the members' random ports: keys are added until enough of them
      // are not a's (100 keys gave as few as 3 with some port draws).
      for (int i = 0; i < 100 || handedOver.size() < 10; i++) {
        String k = "k/" + i;
        put(na, k, "old copy");
        if (!ring.isReplica(a, k)) {
          handedOver.add(k);
        }
      }
      assertThat(handedOver).hasSizeGreaterThan(5);
      java.util.Map<Member, Integer> asks = new java.util.concurrent.ConcurrentHashMap<>();
      RangeDrop drop = RangeDrop.manual(na.membership(), na.engine(), (o, k) -> {
        asks.merge(o, 1, Integer::sum);
        if (o.equals(c)) {
          throw new java.net.ConnectException("c is unreachable");
        }
        return true;
      });
      try {
        RangeDrop.Dropped d = drop.pass(ring.epoch());
        assertEquals(0, d.keys());
        assertEquals(handedOver.size(), d.retry());
        assertEquals(1, asks.get(c), "c asked once in the pass");
        assertThat(asks.getOrDefault(b, 0)).isLessThanOrEqualTo(1);
        for (String k : handedOver) {
          assertThat(na.engine().stat(k).exists()).as(k).isTrue();
        }
      } finally {
        drop.close();
      }
    }
  }

  /**
   * R = 2 with c RECOVERING: the keys c owns wait (c is not asked: it may not hold them
   * yet), the others, whose owners are UP and hold them, are dropped.
   */
  @Test
  void keysOfARecoveringOwnerWaitAndAreNotAsked() throws Exception {
    Member a = new Member("127.0.0.1", freePort());
    Member b = new Member("127.0.0.1", freePort());
    Member c = new Member("127.0.0.1", freePort());
    Member d = new Member("127.0.0.1", freePort());
    Ring ring = new Ring(1, List.of(a, b, c, d), 16, 2).withState(c, Ring.State.RECOVERING, 2);
    try (TyrServer na = TyrServer.start(config(a, "a"), new Membership(a, ring))) {
      List<String> waiting = new ArrayList<>();
      List<String> dropped = new ArrayList<>();
      for (int i = 0; i < 200; i++) {
        String k = "k/" + i;
        put(na, k, "old copy");
        if (!ring.isReplica(a, k)) {
          (ring.owners(k).contains(c) ? waiting : dropped).add(k);
        }
      }
      assertThat(waiting).isNotEmpty();
      assertThat(dropped).isNotEmpty();
      java.util.Set<Member> asked = java.util.concurrent.ConcurrentHashMap.newKeySet();
      RangeDrop drop = RangeDrop.manual(na.membership(), na.engine(), (o, k) -> {
        asked.add(o);
        return true;
      });
      try {
        RangeDrop.Dropped d1 = drop.pass(ring.epoch());
        assertEquals(dropped.size(), d1.keys());
        assertEquals(waiting.size(), d1.waiting());
        assertThat(asked).doesNotContain(c);
        for (String k : waiting) {
          assertThat(na.engine().stat(k).exists()).as(k + " kept").isTrue();
        }
        for (String k : dropped) {
          assertThat(na.engine().stat(k).exists()).as(k + " dropped").isFalse();
        }
      } finally {
        drop.close();
      }
    }
  }

  /**
   * A write that reaches the old copy after the drop read its version (while the owners
   * are asked) keeps it: the delete is checked against the version read before asking.
   */
  @Test
  void aNewerLocalVersionWrittenWhileTheOwnersAreAskedSurvives() throws Exception {
    Member a = new Member("127.0.0.1", freePort());
    Member b = new Member("127.0.0.1", freePort());
    Member c = new Member("127.0.0.1", freePort());
    Ring ring = new Ring(1, List.of(a, b, c), 16, 2);
    try (TyrServer na = TyrServer.start(config(a, "a"), new Membership(a, ring))) {
      List<String> handedOver = new ArrayList<>();
      // Placement follows the members' random ports: keys are added until enough of them
      // are not a's (100 keys gave as few as 3 with some port draws).
      for (int i = 0; i < 100 || handedOver.size() < 10; i++) {
        String k = "k/" + i;
        put(na, k, "old copy");
        if (!ring.isReplica(a, k)) {
          handedOver.add(k);
        }
      }
      String raced = handedOver.get(0);
      RangeDrop drop = RangeDrop.manual(na.membership(), na.engine(), (o, k) -> {
        if (k.equals(raced) && o.equals(ring.owners(k).get(0))) {
          put(na, k, "newer, written meanwhile");
        }
        return true;
      });
      try {
        RangeDrop.Dropped d = drop.pass(ring.epoch());
        assertEquals(handedOver.size() - 1, d.keys());
        assertEquals(1, d.retry());
        ByteBuffer got = ByteBuffer.allocate(64);
        na.engine().read(raced, 0, got);
        assertThat(new String(got.array(), 0, got.position(), StandardCharsets.UTF_8))
            .isEqualTo("newer, written meanwhile");
        for (String k : handedOver.subList(1, handedOver.size())) {
          assertThat(na.engine().stat(k).exists()).as(k + " dropped").isFalse();
        }
      } finally {
        drop.close();
      }
    }
  }

  private static void put(TyrServer n, String key, String value) throws IOException {
    TyrClient.await(n.engine().commit(TxRequest.of(new TxOp.Put(key,
        ByteBuffer.wrap(value.getBytes(StandardCharsets.UTF_8)), false))));
  }

  private static int freePort() throws IOException {
    try (ServerSocket s = new ServerSocket(0)) {
      return s.getLocalPort();
    }
  }

  private ServerConfig config(Member m, String name) {
    EngineConfig engine = EngineConfig.defaults(dir.resolve(name))
        .withSyncPolicy(SyncPolicy.NONE);
    return new ServerConfig("127.0.0.1", m.port(), engine, 80 << 20, null, 8,
        64, Duration.ofSeconds(60), 512L << 20, 128L << 20, Duration.ofSeconds(60), null);
  }
}
