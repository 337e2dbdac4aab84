package io.blobfs.tyr.blobfs;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.blobfs.store.PutMode;
import io.blobfs.tyr.api.TxOp;
import io.blobfs.tyr.api.TxRequest;
import io.blobfs.tyr.engine.TyrEngine;
import io.blobfs.tyr.ring.Member;
import io.blobfs.tyr.ring.Ring;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Catch-up on a node where a prepared cross-node part holds one of the keys it must copy
 * (review should-fix 4b): the other keys are copied meanwhile, and the held one once its
 * decision releases it, without the whole catch-up starting over for it.
 */
class TyrCatchUpHeldKeyTest {
  @TempDir
  Path dir;

  @Test
  void aHeldKeyIsParkedAndTheOthersAreCopied() throws Exception {
    try (LocalTyrCluster c = new LocalTyrCluster(dir, 3, 64, 2);
        TyrClusterBlobStore store = c.store("h", "connect-timeout", "1s", "op-timeout", "5s")) {
      Member a = c.members.get(0);
      Member b = c.members.get(2);
      Ring e3 = c.ring.withState(b, Ring.State.DOWN, 2).withState(b, Ring.State.RECOVERING, 3);
      String held = keys(c.ring, e3, a, b, "a/", 1).get(0); // scanned before the others
      List<String> others = keys(c.ring, e3, a, b, "k/", 20);
      put(store, held, "h1");
      for (String k : others) {
        put(store, k, "v1");
      }
      c.stop(2);
      Ring e2 = c.ring.withState(b, Ring.State.DOWN, 2);
      c.installOnRunning(e2);
      put(store, held, "h2");
      for (String k : others) {
        put(store, k, "v2");
      }
      c.restart(2, e2);
      TyrEngine engineB = c.servers.get(2).engine();
      engineB.prepare("held-part", new TxRequest(List.of(), List.of(new TxOp.Put(held,
          ByteBuffer.wrap(new byte[] {1}), false))));
      c.installOnRunning(e3);

      long deadline = System.nanoTime() + 60_000_000_000L; // generous: a loaded machine
      while (!others.stream().allMatch(k -> "v2".equals(read(engineB, k)))) {
        assertTrue(System.nanoTime() < deadline, "keys not held were not copied while "
            + held + " was held");
        Thread.sleep(50);
      }
      assertTrue(c.servers.get(2).caughtUpEpoch() < 3, "caught up with " + held + " held");
      assertEquals("h1", read(engineB, held));

      engineB.releasePrepared("held-part"); // its decision came
      deadline = System.nanoTime() + 60_000_000_000L;
      while (c.servers.get(2).caughtUpEpoch() < 3) {
        assertTrue(System.nanoTime() < deadline, "not caught up once released");
        Thread.sleep(50);
      }
      assertEquals("h2", read(engineB, held));
    }
  }

  /** {@code n} keys of {@code prefix} held by {@code a} and {@code b}, {@code a} primary. */
  private static List<String> keys(Ring ring, Ring later, Member a, Member b, String prefix,
      int n) {
    List<String> out = new ArrayList<>();
    for (int i = 0; out.size() < n; i++) {
      String k = prefix + i;
      if (ring.primary(k).equals(a) && later.primary(k).equals(a) && ring.isReplica(b, k)) {
        out.add(k);
      }
    }
    return out;
  }

  private static void put(TyrClusterBlobStore store, String key, String value)
      throws Exception {
    store.put(key, ByteBuffer.wrap(value.getBytes(StandardCharsets.UTF_8)), PutMode.OVERWRITE);
  }

  private static String read(TyrEngine engine, String key) {
    try {
      ByteBuffer buf = ByteBuffer.allocate(2);
      engine.read(key, 0, buf);
      return new String(buf.array(), 0, buf.position(), StandardCharsets.UTF_8);
    } catch (Exception e) {
      return e.toString();
    }
  }
}
