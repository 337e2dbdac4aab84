package io.blobfs.namespace;

import static org.junit.jupiter.api.Assertions.*;

import io.blobfs.store.FaultInjectingBlobStore;
import io.blobfs.store.FaultInjectingBlobStore.Fault;
import io.blobfs.store.FaultInjectingBlobStore.Op;
import io.blobfs.store.StoreLimits;
import io.blobfs.store.TransactionalBlobStore;
import io.blobfs.store.memory.InMemoryBlobStore;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.Random;
import java.util.concurrent.*;
import org.junit.jupiter.api.Test;

/**
 * The second review's reproductions of the marked rename ({@link MarkedMove}): a fenced
 * mover deleted the incoming record of a second rename of the same file to the same name
 * (records told moves apart by nothing), and a reader of the destination that started
 * after the commit saw neither name (the source read after the rename finished).
 */
class ReviewAdoptTest {
  private static final Duration LEASE = Duration.ofMillis(40);
  private static final NamespaceOptions OPTIONS =
      new NamespaceOptions(4096, 1024, 4096, 256, false, 3).withWriterLease(LEASE);

  @Test
  void secondRenameToSameDestination() throws Exception {
    InMemoryBlobStore memory = new InMemoryBlobStore("x", new StoreLimits(1024, 1L << 30, Integer.MAX_VALUE));
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
    Fault r1Create = one.on(Op.PUT).keys("n/a/g").pause();
    Fault r2Commit = two.on(Op.PUT).keys("n/a/f").nth(3).pause();
    ExecutorService ex = Executors.newFixedThreadPool(2);
    try {
      Future<Object> r1 = ex.submit(() -> {
        try {
          return new BlobNamespace(one.store(), OPTIONS, StoreCallCounters.NONE).rename(f, g);
        } catch (IOException e) {
          return e;
        }
      });
      r1Create.awaitReached();
      Thread.sleep(LEASE.toMillis() + 10);
      // R1's lease has run out: R2 settles R1's move (takes its mark back) and runs its own
      Future<Object> r2 = ex.submit(() -> {
        try {
          return new BlobNamespace(two.store(), OPTIONS, StoreCallCounters.NONE).rename(f, g);
        } catch (IOException e) {
          return e;
        }
      });
      r2Commit.awaitReached();
      System.err.println("R2 at commit; dst exists=" + memory.stat("n/a/g").exists());
      r1Create.release();
      System.err.println("R1 -> " + r1.get(30, TimeUnit.SECONDS));
      System.err.println("after R1: dst exists=" + memory.stat("n/a/g").exists());
      r2Commit.release();
      assertEquals(Boolean.TRUE, r2.get(30, TimeUnit.SECONDS), "the second rename");
    } finally {
      ex.shutdownNow();
    }
    System.err.println("src visible=" + reader.probe(f).isPresent() + " dst visible="
        + reader.probe(g).isPresent() + " raw src=" + memory.stat("n/a/f").exists()
        + " raw dst=" + memory.stat("n/a/g").exists());
    assertTrue(reader.probe(f).isPresent() || reader.probe(g).isPresent(), "the file has no name");
    assertFalse(reader.probe(f).isPresent(), "the source after the second rename");
    FileReader in = reader.open(g);
    ByteBuffer got = ByteBuffer.allocate((int) in.length());
    while (got.hasRemaining() && in.read(got.position(), got).get() > 0) { }
    assertArrayEquals(bytes, got.array(), "the file's bytes at the destination");
  }

  @Test
  void readerOfDestinationSeesNeither() throws Exception {
    InMemoryBlobStore memory = new InMemoryBlobStore("y", new StoreLimits(1024, 1L << 30, Integer.MAX_VALUE));
    FaultInjectingBlobStore m = FaultInjectingBlobStore.over(memory, TransactionalBlobStore.class);
    FaultInjectingBlobStore r = FaultInjectingBlobStore.over(memory, TransactionalBlobStore.class);
    BlobNamespace plain = new BlobNamespace(
        FaultInjectingBlobStore.over(memory, TransactionalBlobStore.class).store(), OPTIONS,
        StoreCallCounters.NONE);
    FsPath f = FsPath.parse("/a/f");
    FsPath g = FsPath.parse("/a/g");
    byte[] bytes = new byte[3 * 4096 + 5];
    new Random(1).nextBytes(bytes);
    try (FileWriter w = plain.create(f, true)) {
      w.write(bytes, 0, bytes.length);
    }
    Fault finish = m.on(Op.PUT).keys("n/a/g").nth(2).pause();
    Fault srcRead = r.on(Op.READ).keys("n/a/f").pause();
    ExecutorService ex = Executors.newFixedThreadPool(2);
    try {
      Future<Object> mv = ex.submit(() ->
          new BlobNamespace(m.store(), OPTIONS, StoreCallCounters.NONE).rename(f, g));
      finish.awaitReached(); // committed: src MOVED, dst INCOMING
      System.err.println("raw src=" + memory.stat("n/a/f").exists());
      Future<Object> rd = ex.submit(() ->
          new BlobNamespace(r.store(), OPTIONS, StoreCallCounters.NONE).probe(g).isPresent());
      srcRead.awaitReached();
      finish.release();
      System.err.println("mover -> " + mv.get(30, TimeUnit.SECONDS));
      srcRead.release();
      Object seen = rd.get(30, TimeUnit.SECONDS);
      System.err.println("reader after commit sees dst: " + seen);
      assertEquals(Boolean.TRUE, seen, "a reader that started after the commit saw neither name");
    } finally {
      ex.shutdownNow();
    }
  }
}
