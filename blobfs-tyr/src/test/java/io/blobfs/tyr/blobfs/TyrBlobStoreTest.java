package io.blobfs.tyr.blobfs;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;

import io.blobfs.store.BlobMutation;
import io.blobfs.store.BlobStore;
import io.blobfs.store.HeadScanning;
import io.blobfs.store.PlacementAware;
import io.blobfs.store.PutMode;
import io.blobfs.store.StoreLimits;
import io.blobfs.store.StoreOptions;
import io.blobfs.store.TransactionalBlobStore;
import io.blobfs.store.StoreUnavailableException;
import io.blobfs.store.TransactionalBlobStoreContract;
import java.io.IOException;
import java.net.ServerSocket;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The SPI contract on a real Týr node (in this JVM, over loopback TCP), through the
 * provider users configure; plus what is particular to Týr.
 */
class TyrBlobStoreTest extends TransactionalBlobStoreContract {
  @TempDir
  Path dir;
  private LocalTyrNode node;

  @Override
  protected BlobStore openStore() throws IOException {
    node = new LocalTyrNode(dir);
    return node.store("t");
  }

  @Override
  protected void closeStore(BlobStore s) throws IOException {
    s.close();
    node.close();
  }

  @Test
  void placementIsTheNodesHost() throws IOException {
    store.put("n/new", ByteBuffer.wrap(new byte[] {1}), PutMode.CREATE);
    assertThat(((PlacementAware) store).hostsOf("n/new")).containsExactly("localhost");
  }

  @Test
  void headScansCarryEachBlobsFirstBytesFromOneState() throws IOException {
    store.put("n/h/a", ByteBuffer.wrap(new byte[] {1, 2, 3}), PutMode.CREATE);
    store.put("n/h/b", ByteBuffer.wrap(new byte[] {4}), PutMode.CREATE);
    HeadScanning.HeadPage page = ((HeadScanning) store).scanWithHeads("n/h/", null, 10, 2);
    Map<String, byte[]> heads = new java.util.HashMap<>();
    for (int i = 0; i < page.keys().size(); i++) {
      heads.put(page.keys().get(i), page.heads().get(i));
    }
    assertThat(heads.keySet()).containsExactlyInAnyOrder("n/h/a", "n/h/b");
    assertArrayEquals(new byte[] {1, 2}, heads.get("n/h/a"));
    assertArrayEquals(new byte[] {4}, heads.get("n/h/b"));
  }

  /**
   * The limit the namespace splits directory renames and deletes by is one Týr can carry:
   * a transaction that counts exactly {@code maxCommitBytes}, in the shapes a rename
   * sends (exclusive puts, conditional deletes), goes through the client's frame check.
   */
  @Test
  void aTransactionAtTheCommitLimitIsApplied() throws IOException {
    long limit = store.limits().maxCommitBytes();
    assertThat(limit).isEqualTo(TyrBlobStoreProvider.maxCommitBytes((16 << 20) + (1 << 20)));
    String longName = "n/limit/" + "k".repeat(900) + "/";
    List<BlobMutation> tx = new ArrayList<>();
    for (int i = 0; i < 200; i++) {
      store.put(longName + "old" + i, ByteBuffer.wrap(new byte[] {1}), PutMode.CREATE);
      tx.add(new BlobMutation.Delete(longName + "old" + i, store.stat(longName + "old" + i)
          .version()));
    }
    int i = 0;
    while (limit - StoreLimits.commitBytes(tx) > 70_000) {
      tx.add(new BlobMutation.Put(longName + "new" + i++, ByteBuffer.allocate(60_000),
          PutMode.CREATE));
    }
    BlobMutation.Put probe = new BlobMutation.Put("n/limit/last", ByteBuffer.allocate(0),
        PutMode.CREATE);
    long rest = limit - StoreLimits.commitBytes(tx) - StoreLimits.commitBytes(probe);
    tx.add(new BlobMutation.Put("n/limit/last", ByteBuffer.allocate((int) rest),
        PutMode.CREATE));
    assertThat(StoreLimits.commitBytes(tx)).isEqualTo(limit);

    ((TransactionalBlobStore) store).commit(tx);

    assertThat(store.stat(longName + "old0").exists()).isFalse();
    assertThat(store.stat("n/limit/last").size()).isEqualTo(rest);
  }

  @Test
  void anUnreachableServerIsATypedErrorWithinTheTimeout() throws IOException {
    int port;
    try (ServerSocket s = new ServerSocket(0)) {
      port = s.getLocalPort();
    }
    try (BlobStore lost = new TyrBlobStoreProvider().open("lost", new StoreOptions(
        "fs.blob.store.lost.", Map.of("address", "127.0.0.1:" + port,
            "connect-timeout", "2s", "op-timeout", "2s")))) {
      long t0 = System.nanoTime();
      assertThatThrownBy(() -> lost.stat("x")).isInstanceOf(StoreUnavailableException.class);
      assertThat(System.nanoTime() - t0).isLessThan(10_000_000_000L);
    }
  }

  @Test
  void badOptionsAreRefusedNamingTheKey() {
    TyrBlobStoreProvider p = new TyrBlobStoreProvider();
    assertThatThrownBy(() -> p.open("b", new StoreOptions("fs.blob.store.b.", Map.of())))
        .hasMessageContaining("fs.blob.store.b.address");
    assertThatThrownBy(() -> p.open("b", new StoreOptions("fs.blob.store.b.",
        Map.of("address", "nohost")))).hasMessageContaining("host:port");
    assertThatThrownBy(() -> p.open("b", new StoreOptions("fs.blob.store.b.",
        Map.of("address", "h:1", "embedded-dir", "/tmp/x")))).hasMessageContaining("exclusive");
  }
}
