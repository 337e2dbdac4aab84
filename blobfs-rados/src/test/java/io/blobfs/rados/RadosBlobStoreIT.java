package io.blobfs.rados;

import static org.junit.jupiter.api.Assertions.*;

import io.blobfs.store.BlobStore;
import io.blobfs.store.BlobStoreContract;
import io.blobfs.store.Futures;
import io.blobfs.store.PutMode;
import io.blobfs.store.StoreOptions;
import io.blobfs.store.StoreUnavailableException;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.AccessDeniedException;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/** The SPI contract on the real single-OSD cluster as client.blobfs, plus RADOS' own cases. */
@ExtendWith(CephClusterExtension.class)
class RadosBlobStoreIT extends BlobStoreContract {
  static CephTestCluster.Env env;
  String namespace;

  @BeforeAll
  static void cluster(CephTestCluster.Env cluster) {
    env = cluster;
  }

  static Map<String, String> options(String pool, String namespace) {
    return CephTestCluster.storeOptions(env, pool, namespace);
  }

  static BlobStore open(Map<String, String> options) throws IOException {
    return new RadosBlobStoreProvider().open("t", new StoreOptions("fs.blob.store.t.", options));
  }

  /** A RADOS namespace of its own per test: the pool is shared, the store starts empty. */
  @Override
  protected BlobStore openStore() throws IOException {
    namespace = "spi-" + System.nanoTime();
    return open(options(env.pool(), namespace));
  }

  /** Leaves the pool as found: removes what this test wrote in its namespace. */
  @Override
  protected void closeStore(BlobStore s) throws IOException {
    for (String k : scanAll("", 1000)) {
      s.delete(k);
    }
    s.close();
  }

  @Test
  void largeParallelStripeWritesReadBackExactly() throws IOException {
    byte[] data = random(10 << 20, 1);
    int piece = 1 << 20;
    List<CompletableFuture<Void>> writes = new ArrayList<>();
    for (int off = 0; off < data.length; off += piece) {
      writes.add(store.write("d/file/0", off, ByteBuffer.wrap(data, off, piece)));
    }
    for (CompletableFuture<Void> w : writes) {
      Futures.await(w);
    }
    assertEquals(data.length, store.stat("d/file/0").size());
    assertArrayEquals(data, store.readFully("d/file/0", 0, data.length));
  }

  @Test
  void aPoolOutsideTheClientsCapsIsRefusedClearly() {
    // The store reads the pool's name index description at open (in pure-scan mode too,
    // to refuse an indexed pool), so the refusal comes at once, typed.
    for (String mode : List.of("omap", "scan")) {
      Map<String, String> o = options(env.otherPool(), namespace);
      o.put("index", mode);
      assertThrows(AccessDeniedException.class, () -> open(o), mode);
    }
  }

  /** The version stat gives a missing blob (0) is a conflict, as on the other stores. */
  @Test
  void conditionalCallsWithTheVersionOfAMissingBlobConflict() throws IOException {
    try (BlobStore s = openStore()) {
      long v = s.stat("n/none").version();
      assertEquals(0, v);
      assertThrows(io.blobfs.store.TransactionConflictException.class,
          () -> s.putIfVersion("n/none", ByteBuffer.wrap(new byte[] {1}), v));
      assertThrows(io.blobfs.store.TransactionConflictException.class,
          () -> s.deleteIfVersion("n/none", v));
      assertFalse(s.stat("n/none").exists());
      s.put("n/some", ByteBuffer.wrap(new byte[] {1}), PutMode.CREATE);
      assertThrows(io.blobfs.store.TransactionConflictException.class,
          () -> s.deleteIfVersion("n/some", 0));
      assertTrue(s.stat("n/some").exists());
      closeStore(s);
    }
  }

  @Test
  void aMissingPoolFailsAtOpen() {
    IOException e = assertThrows(IOException.class,
        () -> open(options("no-such-pool-" + System.nanoTime(), namespace)));
    assertTrue(e.getMessage().contains("no-such-pool"), e.getMessage());
  }

  @Test
  void anUnreachableMonitorFailsWithinTheTimeout() {
    Map<String, String> o = options(env.pool(), namespace);
    o.put("mon-host", "127.0.0.1:9");
    o.put("connect-timeout", "3s");
    long start = System.nanoTime();
    IOException e = assertThrows(IOException.class, () -> open(o));
    long seconds = (System.nanoTime() - start) / 1_000_000_000L;
    assertTrue(seconds < 20, "took " + seconds + " s");
    assertInstanceOf(StoreUnavailableException.class, e, e.toString());
  }
}
