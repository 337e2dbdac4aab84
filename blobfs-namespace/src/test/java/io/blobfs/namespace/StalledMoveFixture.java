package io.blobfs.namespace;

import io.blobfs.store.FaultInjectingBlobStore;
import io.blobfs.store.StoreLimits;
import io.blobfs.store.TransactionalBlobStore;
import io.blobfs.store.memory.InMemoryBlobStore;
import java.io.IOException;
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
