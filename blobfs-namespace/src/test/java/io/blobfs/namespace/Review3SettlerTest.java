package io.blobfs.namespace;

import static org.junit.jupiter.api.Assertions.*;

import io.blobfs.store.FaultInjectingBlobStore;
import io.blobfs.store.FaultInjectingBlobStore.Fault;
import io.blobfs.store.FaultInjectingBlobStore.Op;
import io.blobfs.store.StoreLimits;
import io.blobfs.store.TransactionalBlobStore;
import io.blobfs.store.memory.InMemoryBlobStore;
import java.io.IOException;
import java.time.Duration;
import java.util.Optional;
import java.util.Random;
import java.util.concurrent.*;
import org.junit.jupiter.api.Test;

/** Third review: a settler deletes an incoming record it did not fence (source read unmarked). */
class Review3SettlerTest {
  private static final Duration LEASE = Duration.ofMillis(40);
  private static final NamespaceOptions OPTIONS =
      new NamespaceOptions(4096, 1024, 4096, 256, false, 3).withWriterLease(LEASE);

  @Test
  void settlerDeletesIncomingOfAMoveThatThenCommits() throws Exception {
    InMemoryBlobStore memory = new InMemoryBlobStore("z", new StoreLimits(1024, 1L << 30, Integer.MAX_VALUE));
    FaultInjectingBlobStore one = FaultInjectingBlobStore.over(memory, TransactionalBlobStore.class);
    FaultInjectingBlobStore two = FaultInjectingBlobStore.over(memory, TransactionalBlobStore.class);
    BlobNamespace reader = new BlobNamespace(
        FaultInjectingBlobStore.over(memory, TransactionalBlobStore.class).store(), OPTIONS,
        StoreCallCounters.NONE);
    FsPath f = FsPath.parse("/a/f");
    FsPath g = FsPath.parse("/a/g");
    byte[] bytes = new byte[3 * 4096 + 5];
    new Random(1).nextBytes(bytes);
    try (FileWriter w = reader.create(f, true)) {
      w.write(bytes, 0, bytes.length);
    }
    String id = reader.probe(f).get().record().fileId();
    Fault t1Mark = one.on(Op.PUT).keys("n/a/f").nth(1).pause();
    Fault t1Commit = one.on(Op.PUT).keys("n/a/f").nth(2).pause();
    Fault sDst = two.on(Op.READ).keys("n/a/g").nth(1).pause();
    BlobNamespace settlerNs = new BlobNamespace(two.store(), OPTIONS, StoreCallCounters.NONE);
    ExecutorService ex = Executors.newFixedThreadPool(2);
    try {
      Future<Object> t1 = ex.submit(() -> {
        try {
          return new BlobNamespace(one.store(), OPTIONS, StoreCallCounters.NONE).rename(f, g);
        } catch (IOException e) {
          return e;
        }
      });
      t1Mark.awaitReached(); // T1 holds the lock, read f, about to mark; stalls past its lease
      Thread.sleep(LEASE.toMillis() + 20);
      Optional<DataLocks.Lock> lock = settlerNs.locks().read(id);
      assertTrue(lock.isPresent() && lock.get().interruptedMove(System.currentTimeMillis()));
      Future<Object> s = ex.submit(() -> MoveSettler.settle(settlerNs, lock.get()));
      sDst.awaitReached(); // settler read f (no mark), about to read g
      t1Mark.release();
      t1Commit.awaitReached(); // T1 marked f, created g incoming, checked it: about to commit
      sDst.release();
      System.err.println("settler -> " + s.get(30, TimeUnit.SECONDS)
          + " raw g after settler=" + memory.stat("n/a/g").exists());
      t1Commit.release();
      System.err.println("T1 -> " + t1.get(30, TimeUnit.SECONDS));
    } finally {
      ex.shutdownNow();
    }
    boolean fv = reader.probe(f).isPresent();
    boolean gv = reader.probe(g).isPresent();
    System.err.println("f visible=" + fv + " g visible=" + gv + " raw f="
        + memory.stat("n/a/f").exists() + " raw g=" + memory.stat("n/a/g").exists());
    assertTrue(fv || gv, "the file has no name");
  }
}
