package io.blobfs.tyr.blobfs;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

import io.blobfs.store.BlobAlreadyExistsException;
import io.blobfs.store.BlobMutation;
import io.blobfs.store.BlobNotFoundException;
import io.blobfs.store.BlobStore;
import io.blobfs.store.Futures;
import io.blobfs.store.PutMode;
import io.blobfs.store.ScanPage;
import io.blobfs.store.StoreOptions;
import io.blobfs.store.StoreUnavailableException;
import io.blobfs.store.TransactionConflictException;
import io.blobfs.store.TransactionalBlobStore;
import io.blobfs.tyr.engine.EngineConfig;
import io.blobfs.tyr.server.ServerConfig;
import io.blobfs.tyr.server.TyrServer;
import java.io.IOException;
import java.net.ServerSocket;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletionException;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The store SPI's semantics on a real Týr node, through the provider users configure. */
class TyrBlobStoreTest {
  @TempDir
  Path dir;
  TyrServer server;
  BlobStore store;

  @BeforeEach
  void open() throws IOException {
    server = TyrServer.start(ServerConfig.local(EngineConfig.defaults(dir)));
    store = new TyrBlobStoreProvider().open("t", new StoreOptions("fs.blob.store.t.",
        Map.of("address", "127.0.0.1:" + server.port())));
  }

  @AfterEach
  void close() throws IOException {
    store.close();
    server.close();
  }

  @Test
  void blobSemantics() throws IOException {
    assertThat(store.stat("a").exists()).isFalse();
    Futures.await(store.write("a", 5, ByteBuffer.wrap(new byte[] {1, 2})));
    assertArrayEquals(new byte[] {0, 0, 0, 0, 0, 1, 2}, store.readFully("a", 0, 7));
    assertEquals(7, store.stat("a").size());
    assertThat(store.stat("a").modifiedMillis()).isPositive();
    assertEquals(-1, Futures.await(store.read("a", 7, ByteBuffer.allocate(3))));
    assertEquals(2, Futures.await(store.read("a", 5, ByteBuffer.allocate(3))));
    CompletionException missing = org.junit.jupiter.api.Assertions.assertThrows(
        CompletionException.class, () -> store.read("none", 0, ByteBuffer.allocate(1)).join());
    assertThat(missing.getCause()).isInstanceOf(BlobNotFoundException.class);
    assertThatThrownBy(() -> store.put("a", ByteBuffer.allocate(1), PutMode.CREATE))
        .isInstanceOf(BlobAlreadyExistsException.class);
    store.put("a", ByteBuffer.wrap(new byte[] {9}), PutMode.OVERWRITE);
    assertArrayEquals(new byte[] {9}, store.readFully("a", 0, 1));
    store.truncate("a", 3);
    assertArrayEquals(new byte[] {9, 0, 0}, store.readFully("a", 0, 3));
    assertThatThrownBy(() -> store.truncate("none", 1))
        .isInstanceOf(BlobNotFoundException.class);
    assertThat(store.delete("a")).isTrue();
    assertThat(store.delete("a")).isFalse();
  }

  @Test
  void scanPagesThroughEveryKeyOnce() throws IOException {
    List<String> expected = new ArrayList<>();
    for (int i = 0; i < 120; i++) {
      String key = String.format("n/dir/f%03d", i);
      store.put(key, ByteBuffer.allocate(0), PutMode.CREATE);
      expected.add(key);
    }
    store.put("n/dirx", ByteBuffer.allocate(0), PutMode.CREATE);
    List<String> got = new ArrayList<>();
    String cursor = null;
    do {
      ScanPage page = store.scan("n/dir/", cursor, 50);
      got.addAll(page.keys());
      cursor = page.nextCursor();
    } while (cursor != null);
    assertEquals(expected, got);
  }

  @Test
  void commitsAllOrNothingAndReportsConflicts() throws IOException {
    TransactionalBlobStore tx = (TransactionalBlobStore) store;
    tx.commit(List.of()); // nothing to do is not an error
    store.put("old", ByteBuffer.wrap(new byte[] {1}), PutMode.CREATE);
    store.put("taken", ByteBuffer.wrap(new byte[] {2}), PutMode.CREATE);
    assertThatThrownBy(() -> tx.commit(List.of(
        new BlobMutation.Put("new", ByteBuffer.wrap(new byte[] {1}), PutMode.CREATE),
        new BlobMutation.Put("taken", ByteBuffer.wrap(new byte[] {1}), PutMode.CREATE))))
        .isInstanceOf(TransactionConflictException.class);
    assertThat(store.stat("new").exists()).isFalse();
    tx.commit(List.of(
        new BlobMutation.Put("new", ByteBuffer.wrap(new byte[] {1}), PutMode.CREATE),
        new BlobMutation.Delete("old", true)));
    assertThat(store.stat("old").exists()).isFalse();
    assertThat(store.stat("new").exists()).isTrue();
    assertThatThrownBy(() -> tx.commit(List.of(new BlobMutation.Delete("old", true))))
        .isInstanceOf(TransactionConflictException.class);
    assertThat(((io.blobfs.store.PlacementAware) store).hostsOf("new"))
        .containsExactly("localhost");
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
