package io.blobfs.tyr.blobfs;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.junit.jupiter.api.Assertions.*;

import io.blobfs.namespace.FileRecord;
import io.blobfs.store.BlobMutation;
import io.blobfs.store.BlobStore;
import io.blobfs.store.HeadScanning;
import io.blobfs.store.PlacementAware;
import io.blobfs.store.PutMode;
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
   * The limit the namespace splits directory renames and deletes by is exactly what Týr
   * carries: a transaction in the shapes a rename sends (exclusive puts, conditional
   * deletes) that counts {@code maxCommitBytes} goes through the client's frame check, and
   * one byte more is refused, applying nothing.
   */
  @Test
  void aTransactionAtTheCommitLimitIsAppliedAndOneByteMoreIsRefused() throws IOException {
    TransactionalBlobStore tx = (TransactionalBlobStore) store;
    long limit = store.limits().maxCommitBytes();
    assertThat(limit).isEqualTo(TyrBlobStoreProvider.maxCommitBytes((16 << 20) + (1 << 20)));
    String longName = "n/limit/" + "k".repeat(900) + "/";
    List<BlobMutation> base = new ArrayList<>();
    for (int i = 0; i < 200; i++) {
      store.put(longName + "old" + i, ByteBuffer.wrap(new byte[] {1}), PutMode.CREATE);
      base.add(new BlobMutation.Delete(longName + "old" + i,
          store.stat(longName + "old" + i).version()));
    }
    for (int i = 0; limit - tx.commitBytes(base) > 70_000; i++) {
      base.add(new BlobMutation.Put(longName + "new" + i, ByteBuffer.allocate(60_000),
          PutMode.CREATE));
    }
    long rest = limit - tx.commitBytes(base) - tx.commitBytes(
        new BlobMutation.Put("n/limit/last", ByteBuffer.allocate(0), PutMode.CREATE));

    List<BlobMutation> over = new ArrayList<>(base);
    over.add(new BlobMutation.Put("n/limit/last", ByteBuffer.allocate((int) rest + 1),
        PutMode.CREATE));
    assertThat(tx.commitBytes(over)).isEqualTo(limit + 1);
    assertThatThrownBy(() -> tx.commit(over)).isInstanceOf(IOException.class)
        .hasMessageContaining("frame limit");
    assertThat(store.stat(longName + "old0").exists()).isTrue();

    List<BlobMutation> exact = new ArrayList<>(base);
    exact.add(new BlobMutation.Put("n/limit/last", ByteBuffer.allocate((int) rest),
        PutMode.CREATE));
    assertThat(tx.commitBytes(exact)).isEqualTo(limit);
    tx.commit(exact);
    assertThat(store.stat(longName + "old0").exists()).isFalse();
    assertThat(store.stat("n/limit/last").size()).isEqualTo(rest);
  }

  /**
   * The figures docs/semantics.md quotes: with 60-character paths, a file moved by a
   * rename counts 272 bytes (its record, not inline, 67) and a name deleted 136, so one
   * default frame carries a rename of 65,000 files and a delete of 131,000.
   */
  @Test
  void theSizesTheSemanticsPageQuotes() {
    TransactionalBlobStore tx = (TransactionalBlobStore) store;
    String src = "n/" + "s".repeat(59);
    String dst = "n/" + "d".repeat(59);
    ByteBuffer record = FileRecord.striped("0".repeat(32), 1L << 30, 0, 64L << 20).encode();
    assertThat(record.remaining()).isEqualTo(67);
    long rename = tx.commitBytes(List.of(new BlobMutation.Put(dst, record, PutMode.CREATE),
        new BlobMutation.Delete(src, 7)));
    long delete = tx.commitBytes(new BlobMutation.Delete(src, 7));
    assertThat(rename).isEqualTo(272);
    assertThat(delete).isEqualTo(136);
    assertThat(store.limits().maxCommitBytes() / rename).isBetween(65_000L, 66_000L);
    assertThat(store.limits().maxCommitBytes() / delete).isBetween(131_000L, 132_000L);
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

  @Test
  void overTcpReadsLendTheBuffersTheyArrivedIn() throws Exception {
    byte[] data = new byte[3 << 20];
    new java.util.Random(3).nextBytes(data);
    try (BlobStore tcp = node.store("tcp", Map.of("local-reads", "false"))) {
      io.blobfs.store.LendsReads lending = (io.blobfs.store.LendsReads) tcp;
      assertTrue(lending.lendsReads());
      tcp.put("lend/a", ByteBuffer.wrap(data), PutMode.CREATE);
      io.blobfs.store.LendsReads.ReadLoan loan =
          lending.lendRead("lend/a", 1_000_000, 2 << 20).get();
      assertEquals(2 << 20, loan.length());
      byte[] back = new byte[1_000];
      loan.copyTo(1_500_000, back, 0, back.length);
      assertArrayEquals(java.util.Arrays.copyOfRange(data, 2_500_000, 2_501_000), back);
      loan.release();
      loan.release(); // idempotent: a second release must not free Netty's buffer twice
      // At the end: fewer bytes, then none.
      assertEquals(100, lending.lendRead("lend/a", data.length - 100, 1_000).get().length());
      io.blobfs.store.LendsReads.ReadLoan none =
          lending.lendRead("lend/a", data.length, 10).get();
      assertEquals(0, none.length());
      none.release();
      java.util.concurrent.ExecutionException e = assertThrows(
          java.util.concurrent.ExecutionException.class,
          () -> lending.lendRead("lend/missing", 0, 10).get());
      assertInstanceOf(io.blobfs.store.BlobNotFoundException.class, e.getCause());
    }
    // With local reads on, a read lands in the caller's buffer from the file: no loans.
    try (BlobStore local = node.store("loc", Map.of("local-reads", "true"))) {
      assertFalse(((io.blobfs.store.LendsReads) local).lendsReads());
    }
  }
}
