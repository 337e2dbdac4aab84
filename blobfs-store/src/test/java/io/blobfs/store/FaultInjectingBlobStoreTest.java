package io.blobfs.store;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.blobfs.store.FaultInjectingBlobStore.Fault;
import io.blobfs.store.FaultInjectingBlobStore.Op;
import io.blobfs.store.memory.InMemoryBlobStore;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.Test;

class FaultInjectingBlobStoreTest {
  private final InMemoryBlobStore memory =
      new InMemoryBlobStore("faults", new StoreLimits(1024, 1L << 20, Integer.MAX_VALUE));
  private final FaultInjectingBlobStore faults = FaultInjectingBlobStore.over(memory);
  private final BlobStore store = faults.store();

  private static ByteBuffer utf8(String s) {
    return ByteBuffer.wrap(s.getBytes(StandardCharsets.UTF_8));
  }

  private String content(String key) throws IOException {
    BlobInfo info = memory.stat(key);
    return info.exists()
        ? new String(memory.readFully(key, 0, (int) info.size()), StandardCharsets.UTF_8)
        : null;
  }

  @Test
  void keepsExactlyTheMixinsOfTheWrappedStoreLessTheHiddenOnes() {
    assertInstanceOf(TransactionalBlobStore.class, store);
    assertInstanceOf(PlacementAware.class, store);
    assertInstanceOf(CopiesOnWrite.class, store);
    assertFalse(store instanceof HeadScanning, "the in-memory store does not scan heads");

    BlobStore likeRados =
        FaultInjectingBlobStore.over(memory, TransactionalBlobStore.class).store();
    assertFalse(likeRados instanceof TransactionalBlobStore);
    assertInstanceOf(PlacementAware.class, likeRados);
    assertInstanceOf(CopiesOnWrite.class, likeRados);
    // A wrapper over a store without transactions has none either.
    assertFalse(FaultInjectingBlobStore.over(likeRados).store()
        instanceof TransactionalBlobStore);
    assertThrows(IllegalArgumentException.class,
        () -> FaultInjectingBlobStore.over(memory, BlobStore.class));
  }

  @Test
  void failBeforeFailsOnlyTheNthMatchingCallAndDoesNotApplyIt() throws IOException {
    Fault f = faults.on(Op.PUT).keys("n/a").nth(2).failBefore();
    store.put("n/b", utf8("other key"), PutMode.OVERWRITE);
    store.put("n/a", utf8("1"), PutMode.OVERWRITE);
    assertThrows(StoreUnavailableException.class,
        () -> store.put("n/a", utf8("2"), PutMode.OVERWRITE));
    assertEquals("1", content("n/a"), "the failed put was not applied");
    store.put("n/a", utf8("3"), PutMode.OVERWRITE);
    assertEquals("3", content("n/a"));
    assertEquals(1, f.fired());
  }

  @Test
  void alwaysActsOnEveryMatchFromTheNthOn() throws IOException {
    faults.on(Op.WRITE).keys("d/.*").nth(2).always().failBefore();
    Futures.await(store.write("d/x/0", 0, utf8("a")));
    for (int i = 1; i < 4; i++) {
      CompletableFuture<Void> w = store.write("d/x/0", i, utf8("b"));
      assertThrows(StoreUnavailableException.class, () -> Futures.await(w));
    }
    assertEquals("a", content("d/x/0"));
    faults.clear();
    Futures.await(store.write("d/x/0", 1, utf8("c")));
    assertEquals("ac", content("d/x/0"));
  }

  @Test
  void applyThenFailAppliesTheCallAndLosesItsAnswer() throws IOException {
    faults.on(Op.PUT, Op.WRITE, Op.DELETE).keys("n/a|d/a/0").always().applyThenFail();
    assertThrows(StoreUnavailableException.class,
        () -> store.put("n/a", utf8("put"), PutMode.CREATE));
    assertEquals("put", content("n/a"));
    CompletableFuture<Void> w = store.write("d/a/0", 0, utf8("written"));
    assertThrows(StoreUnavailableException.class, () -> Futures.await(w));
    assertEquals("written", content("d/a/0"));
    assertThrows(StoreUnavailableException.class, () -> store.delete("n/a"));
    assertFalse(memory.stat("n/a").exists());
  }

  @Test
  void aCommitMatchesOnAnyOfItsKeys() throws IOException {
    TransactionalBlobStore tx = (TransactionalBlobStore) store;
    faults.on(Op.COMMIT).keys("n/b").failBefore();
    List<BlobMutation> both = List.of(new BlobMutation.Put("n/a", utf8("a"), PutMode.CREATE),
        new BlobMutation.Put("n/b", utf8("b"), PutMode.CREATE));
    assertThrows(StoreUnavailableException.class, () -> tx.commit(both));
    assertEquals(null, content("n/a"), "nothing of a failed transaction is applied");
    tx.commit(both);
    assertEquals("b", content("n/b"));
  }

  @Test
  void readFullyGoesThroughTheFaultsOfItsReads() throws IOException {
    memory.put("n/a", utf8("abc"), PutMode.CREATE);
    faults.on(Op.READ).keys("n/a").failBefore();
    assertThrows(StoreUnavailableException.class, () -> store.readFully("n/a", 0, 3));
    assertArrayEquals("abc".getBytes(StandardCharsets.UTF_8), store.readFully("n/a", 0, 3));
  }

  @Test
  void aPauseHoldsTheCallSoThatAnotherRunsFirst() throws Exception {
    Fault held = faults.on(Op.PUT).keys("n/a").pause();
    CompletableFuture<Void> slow = CompletableFuture.runAsync(() -> {
      try {
        store.put("n/a", utf8("slow"), PutMode.OVERWRITE);
      } catch (IOException e) {
        throw new RuntimeException(e);
      }
    });
    held.awaitReached();
    assertEquals(null, content("n/a"), "held before it is applied");
    store.put("n/a", utf8("fast"), PutMode.OVERWRITE);
    assertEquals("fast", content("n/a"));
    held.release();
    slow.join();
    assertEquals("slow", content("n/a"));
  }

  @Test
  void aDelayHoldsTheCallerForItsDuration() throws IOException {
    faults.on(Op.STAT).delay(Duration.ofMillis(50));
    long start = System.nanoTime();
    assertFalse(store.stat("n/none").exists());
    assertTrue(System.nanoTime() - start >= 50_000_000L);
  }
}
