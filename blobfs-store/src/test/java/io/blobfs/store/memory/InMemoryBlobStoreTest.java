package io.blobfs.store.memory;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;

import io.blobfs.store.BlobStore;
import io.blobfs.store.Futures;
import io.blobfs.store.PutMode;
import io.blobfs.store.StoreLimits;
import io.blobfs.store.TransactionalBlobStoreContract;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.util.Arrays;
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
