package io.blobfs.tyr.blobfs;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.blobfs.store.BlobStore;
import io.blobfs.store.PutMode;
import io.blobfs.store.StoreOptions;
import io.blobfs.tyr.api.ErrorCode;
import io.blobfs.tyr.api.TyrException;
import io.blobfs.tyr.client.ClientConfig;
import io.blobfs.tyr.client.TyrClient;
import io.blobfs.tyr.server.TyrServer;
import io.netty.channel.local.LocalAddress;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The embedded node (the main job's default store) is reachable from its own JVM only. */
class EmbeddedNodeTest {
  @TempDir
  Path dir;

  @Test
  void noLocalPeerCanReachTheEmbeddedNode() throws IOException {
    try (BlobStore store = new TyrBlobStoreProvider().open("emb", new StoreOptions(
        "fs.blob.store.emb.", Map.of("embedded-dir", dir.toString())))) {
      store.put("n/private", ByteBuffer.wrap(new byte[] {4, 2}), PutMode.CREATE);
      assertThat(store.stat("n/private").size()).isEqualTo(2);
      TyrServer node = TyrBlobStoreProvider.embeddedNode(dir);
      if (node.address() instanceof InetSocketAddress tcp) {
        // What any local user could do to a node listening on loopback.
        try (TyrClient peer = new TyrClient(ClientConfig.of("127.0.0.1", tcp.getPort())
            .withTimeouts(Duration.ofSeconds(2), Duration.ofSeconds(2)))) {
          assertThatThrownBy(() -> TyrClient.await(peer.stat("n/private")))
              .matches(e -> e instanceof TyrException t
                  && t.code() == ErrorCode.UNAUTHENTICATED, "refused");
        }
      }
      assertThat(node.address()).isInstanceOf(LocalAddress.class);
    }
  }
}
