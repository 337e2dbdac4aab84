package io.blobfs.namespace;

import io.blobfs.store.BlobStore;
import io.blobfs.store.FaultInjectingBlobStore;
import io.blobfs.store.StoreLimits;
import io.blobfs.store.StoreUnavailableException;
import io.blobfs.store.TransactionalBlobStore;
import io.blobfs.store.memory.InMemoryBlobStore;
import java.io.IOException;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.Random;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.function.ToIntFunction;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;

/**
 * What the tests of a mover slower than its lease share: a memory store without
 * transactions (so renames take the marked, lock-based path RADOS takes), a 40 ms lease,
 * renames run on threads of their own through a fault-injecting view of the store.
 */
abstract class StalledMoveFixture {
  static final Duration LEASE = Duration.ofMillis(40);
  static final NamespaceOptions OPTIONS =
      new NamespaceOptions(4096, 1024, 4096, 256, false, 3).withWriterLease(LEASE);

  InMemoryBlobStore memory;
  BlobNamespace reader;
  ExecutorService threads;

  @BeforeEach
  void setUpStore() {
    memory = new InMemoryBlobStore("stalled",
        new StoreLimits(1024, 1L << 30, Integer.MAX_VALUE));
    reader = namespace(faults());
    threads = Executors.newFixedThreadPool(3);
  }

  @AfterEach
  void stopThreads() {
    threads.shutdownNow();
  }

  /** Waits (on the wall clock, not a fixed sleep) until a lease taken now has run out. */
  static void awaitLeaseOver() throws InterruptedException {
    long until = System.currentTimeMillis() + LEASE.toMillis() + 20;
    while (System.currentTimeMillis() <= until) {
      Thread.sleep(5);
    }
  }

  byte[] write(FsPath path, int n) throws IOException {
    byte[] b = new byte[n];
    new Random(n).nextBytes(b);
    try (FileWriter w = reader.create(path, false)) {
      w.write(b, 0, b.length);
    }
    return b;
  }

  byte[] readAll(FsPath path) throws Exception {
    FileReader in = reader.open(path);
    ByteBuffer got = ByteBuffer.allocate((int) in.length());
    while (got.hasRemaining() && in.read(got.position(), got).get() > 0) {
      // reads until full
    }
    return got.array();
  }

  FaultInjectingBlobStore faults() {
    return FaultInjectingBlobStore.over(memory, TransactionalBlobStore.class);
  }

  /**
   * One client's view of {@code memory} without transactions (RADOS' path), misbehaving at
   * random (from {@code random}, shared by nobody else): each store call first sleeps
   * {@code pauseMillis} of it (0: not at all), and, if {@code lostOneIn} is above 0, one
   * synchronous put or delete in {@code lostOneIn} is applied and then answered with a
   * timeout, its answer lost, as a RADOS call that timed out after the OSD applied it.
   */
  static BlobStore unreliable(InMemoryBlobStore memory, Random random,
      ToIntFunction<Random> pauseMillis, int lostOneIn) {
    BlobStore rados = FaultInjectingBlobStore.over(memory, TransactionalBlobStore.class).store();
    return (BlobStore) Proxy.newProxyInstance(BlobStore.class.getClassLoader(),
        rados.getClass().getInterfaces(), (proxy, method, args) -> {
          int pause;
          boolean lose;
          synchronized (random) {
            pause = pauseMillis.applyAsInt(random);
            lose = lostOneIn > 0 && method.getName().matches("put|putIfVersion|delete"
                + "|deleteIfVersion") && random.nextInt(lostOneIn) == 0;
          }
          if (pause > 0) {
            Thread.sleep(pause);
          }
          Object result;
          try {
            result = method.invoke(rados, args);
          } catch (InvocationTargetException e) {
            throw e.getCause();
          }
          if (lose) {
            throw new StoreUnavailableException(method.getName() + " " + args[0]
                + " timed out (applied, answer lost)", null);
          }
          return result;
        });
  }

  static BlobNamespace namespace(FaultInjectingBlobStore store) {
    return new BlobNamespace(store.store(), OPTIONS, StoreCallCounters.NONE);
  }

  Future<Object> renameInThread(FaultInjectingBlobStore store, FsPath from, FsPath to) {
    Callable<Object> rename = () -> {
      try {
        return namespace(store).rename(from, to);
      } catch (IOException e) {
        return e;
      }
    };
    return threads.submit(rename);
  }

  /**
   * Renames {@code from} over {@code to} (the file a probe finds there now) on a thread of
   * its own: "renamed", or the IOException.
   */
  Future<Object> renameOverInThread(FaultInjectingBlobStore store, FsPath from, FsPath to)
      throws IOException {
    FileInfo target = reader.probe(to).get();
    return threads.submit(() -> {
      try {
        namespace(store).renameOver(from, target);
        return "renamed";
      } catch (IOException e) {
        return e;
      }
    });
  }

  /** The paths among {@code candidates} that hold the file {@code id}. */
  List<FsPath> namesOf(String id, FsPath... candidates) throws IOException {
    List<FsPath> names = new ArrayList<>();
    for (FsPath p : candidates) {
      Optional<FileInfo> i = reader.probe(p);
      if (i.isPresent() && i.get().isFile() && i.get().record().fileId().equals(id)) {
        names.add(p);
      }
    }
    return names;
  }
}
