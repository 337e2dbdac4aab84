package io.blobfs.tyr.blobfs;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

import io.blobfs.store.Futures;
import io.blobfs.store.PutMode;
import io.blobfs.store.StoreOptions;
import io.blobfs.tyr.TestPorts;
import io.blobfs.tyr.api.ErrorCode;
import io.blobfs.tyr.api.TyrException;
import io.blobfs.tyr.client.ClientConfig;
import io.blobfs.tyr.client.TyrClient;
import io.blobfs.tyr.engine.EngineConfig;
import io.blobfs.tyr.engine.SyncPolicy;
import io.blobfs.tyr.ring.Member;
import io.blobfs.tyr.ring.Ring;
import io.blobfs.tyr.server.ClusterMonitor;
import io.blobfs.tyr.server.Membership;
import io.blobfs.tyr.server.PeerAccess;
import io.blobfs.tyr.server.ServerConfig;
import io.blobfs.tyr.server.TyrServer;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A node whose engine failed ({@code TyrEngine.fail}: it refuses every write until
 * restarted) must not look alive to the monitor: its ping is refused with a typed error,
 * the monitor marks it DOWN within down-after, and its keys' writes go to their other
 * owner (R = 2). Before, the failed node answered pings, stayed UP for ever, and every
 * write of a key it held failed.
 */
class TyrFailedEngineGoesDownTest {
  @TempDir
  Path dir;

  private static ByteBuffer utf8(String s) {
    return ByteBuffer.wrap(s.getBytes(StandardCharsets.UTF_8));
  }

  @Test
  void aFailedEngineIsMarkedDownAndItsKeysTakeWritesOnTheOthers() throws Exception {
    List<Member> members = new ArrayList<>();
    for (int i = 0; i < 3; i++) {
      members.add(new Member("127.0.0.1", TestPorts.free()));
    }
    Ring ring = new Ring(1, members, 64, 2);
    Path file = dir.resolve("ring.properties");
    Files.writeString(file, Membership.ringFileText(ring));
    List<TyrServer> servers = new ArrayList<>();
    Duration downAfter = Duration.ofSeconds(4);
    try {
      for (int i = 0; i < 3; i++) {
        Member m = members.get(i);
        EngineConfig engine = EngineConfig.defaults(dir.resolve("node" + i))
            .withSyncPolicy(SyncPolicy.NONE);
        ServerConfig config = new ServerConfig("127.0.0.1", m.port(), engine, 80 << 20, null,
            8, 64, Duration.ofSeconds(60), 512L << 20, 128L << 20, Duration.ofSeconds(60),
            null);
        servers.add(TyrServer.start(config, Membership.fromOptions(new StoreOptions("t.",
            Map.of("cluster-file", file.toString(), "cluster-self", m.id())),
            "127.0.0.1", m.port())));
      }
      Map<String, String> options = new HashMap<>();
      options.put("nodes", members.get(0).id() + "," + members.get(1).id() + ","
          + members.get(2).id());
      options.put("connect-timeout", "1s");
      options.put("op-timeout", "5s");
      try (ClusterMonitor monitor = new ClusterMonitor(file, PeerAccess.NONE, downAfter,
              Duration.ofMillis(100));
          TyrClusterBlobStore store = (TyrClusterBlobStore) new TyrBlobStoreProvider().open(
              "f", new StoreOptions("fs.blob.store.f.", options))) {
        Member failed = members.get(0);
        List<String> itsKeys = new ArrayList<>();
        for (int i = 0; itsKeys.size() < 20; i++) {
          String k = "k/" + i;
          if (ring.owners(k).get(0).equals(failed)) {
            itsKeys.add(k); // node 0 is the primary: its failure fails these at once
          }
        }
        for (String k : itsKeys) {
          store.put(k, utf8("before-" + k), PutMode.OVERWRITE);
        }

        servers.get(0).engine().fail(new IOException("injected: no space left on device"));

        // DOWN within down-after (plus a few rounds and the ring watchers' 1 s).
        long deadline = System.nanoTime() + downAfter.toNanos() + 8_000_000_000L;
        while (Membership.readRingFile(file).state(failed) != Ring.State.DOWN) {
          assertThat(System.nanoTime()).as("the monitor marks the failed node DOWN; ring: "
              + Membership.readRingFile(file).states()).isLessThan(deadline);
          Thread.sleep(50);
        }
        Ring down = Membership.readRingFile(file);
        // What the monitor read: a typed refusal, not silence of the network.
        try (TyrClient raw = new TyrClient(ClientConfig.of(failed.host(), failed.port()))) {
          assertThatThrownBy(() -> TyrClient.await(raw.ping()))
              .isInstanceOfSatisfying(TyrException.class,
                  e -> assertEquals(ErrorCode.SERVER_ERROR, e.code()))
              .hasMessageContaining("until restarted");
        }
        deadline = System.nanoTime() + 5_000_000_000L;
        while (servers.get(1).membership().ring().epoch() < down.epoch()
            || servers.get(2).membership().ring().epoch() < down.epoch()) {
          assertThat(System.nanoTime()).as("the others load the ring").isLessThan(deadline);
          Thread.sleep(50);
        }

        for (String k : itsKeys) {
          store.put(k, utf8("after-" + k), PutMode.OVERWRITE);
        }
        for (String k : itsKeys) {
          byte[] want = ("after-" + k).getBytes(StandardCharsets.UTF_8);
          ByteBuffer b = ByteBuffer.allocate(want.length);
          assertEquals(want.length, Futures.await(store.read(k, 0, b)), k);
          assertArrayEquals(want, b.array(), k);
          // on its one UP owner's own disk too (the failed node holds the old bytes)
          Member other = down.owners(k).stream().filter(m -> !m.equals(failed)).findFirst()
              .orElseThrow();
          TyrServer node = servers.get(members.indexOf(other));
          ByteBuffer own = ByteBuffer.allocate(want.length);
          node.engine().read(k, 0, own);
          assertArrayEquals(want, own.array(), k + " on " + other);
        }
        assertThat(Membership.readRingFile(file).state(failed)).isEqualTo(Ring.State.DOWN);
      }
    } finally {
      for (TyrServer s : servers) {
        s.close();
      }
    }
  }
}
