package io.blobfs.store.memory;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.blobfs.store.BlobMutation;
import io.blobfs.store.BlobStore;
import io.blobfs.store.Futures;
import io.blobfs.store.PutMode;
import io.blobfs.store.StoreLimits;
import io.blobfs.store.TransactionalBlobStoreContract;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The SPI contract on the in-memory store, plus what is particular to it. */
class InMemoryBlobStoreTest extends TransactionalBlobStoreContract {
  private static final long MAX_OBJECT = 8L << 20;

  @Override
  protected BlobStore openStore() {
    return new InMemoryBlobStore("t", new StoreLimits(1024, MAX_OBJECT, Integer.MAX_VALUE));
  }

  @Test
  void writesStraddlingItsChunksReadBackExactly() throws IOException {
    byte[] data = random(2 * ChunkedBytes.CHUNK + 10, 5);
    Futures.await(store.write("d/c/0", 0, ByteBuffer.wrap(data, 0, ChunkedBytes.CHUNK - 3)));
    Futures.await(store.write("d/c/0", ChunkedBytes.CHUNK - 3,
        ByteBuffer.wrap(data, ChunkedBytes.CHUNK - 3, data.length - ChunkedBytes.CHUNK + 3)));
    assertArrayEquals(data, store.readFully("d/c/0", 0, data.length));
    assertArrayEquals(Arrays.copyOfRange(data, ChunkedBytes.CHUNK - 5, ChunkedBytes.CHUNK + 5),
        store.readFully("d/c/0", ChunkedBytes.CHUNK - 5, 10));
  }

  @Test
  void aTransactionOverTheCommitLimitIsRefusedAndAppliesNothing() throws IOException {
    List<BlobMutation> tx = List.of(
        new BlobMutation.Put("n/a", ByteBuffer.allocate(10), PutMode.CREATE),
        new BlobMutation.Delete("n/b", BlobMutation.ANY_VERSION));
    long bytes = ((InMemoryBlobStore) store).commitBytes(tx);
    assertEquals((2 * 3 + 10 + 32) + (2 * 3 + 32), bytes);
    InMemoryBlobStore small = new InMemoryBlobStore("small",
        new StoreLimits(1024, MAX_OBJECT, Integer.MAX_VALUE, bytes - 1));
    IOException e = assertThrows(IOException.class, () -> small.commit(tx));
    assertTrue(e.getMessage().contains("over this store's limit"), e.getMessage());
    assertFalse(small.stat("n/a").exists());

    InMemoryBlobStore exact = new InMemoryBlobStore("exact",
        new StoreLimits(1024, MAX_OBJECT, Integer.MAX_VALUE, bytes));
    exact.commit(tx);
    assertEquals(10, exact.stat("n/a").size());
  }

  @Test
  void aBlobOverTheObjectLimitIsRefusedAndNotCreated() throws IOException {
    assertThrows(IOException.class, () -> store.put("n/big",
        ByteBuffer.allocate((int) MAX_OBJECT + 1), PutMode.OVERWRITE));
    assertFalse(store.stat("n/big").exists());
    assertThrows(IOException.class, () -> Futures.await(store.write("d/big/0", MAX_OBJECT,
        ByteBuffer.allocate(1))));
    assertFalse(store.stat("d/big/0").exists());
    assertEquals(MAX_OBJECT, store.limits().maxObjectBytes());
  }
}
