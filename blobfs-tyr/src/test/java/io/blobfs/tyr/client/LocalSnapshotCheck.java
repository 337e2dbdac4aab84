package io.blobfs.tyr.client;

import static org.assertj.core.api.Assertions.assertThat;

import io.blobfs.tyr.api.BlobStat;
import io.blobfs.tyr.api.CommitResult;
import io.blobfs.tyr.api.TxOp;
import io.blobfs.tyr.api.TxRequest;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Test body shared by the in-JVM test and the server-process IT: one writer replaces a blob
 * whole, over and over (every 8-byte word of generation g holds g), while compaction runs
 * and two local readers read it. Each read must hold one generation only, and it must be
 * the generation of the version the read reports; every read must have been local, and
 * compaction must have deleted segments meanwhile (else the test proved nothing).
 */
public final class LocalSnapshotCheck {
  static final int BLOB_BYTES = 256 << 10;

  /** A compaction, forced; a no-op when the server compacts on its own. */
  @FunctionalInterface
  public interface Compactor {
    void compact() throws Exception;
  }

  private LocalSnapshotCheck() {}

  public static void run(TyrClient client, Compactor compactor, Path dataDir, Duration length)
      throws Exception {
    String key = "snapshot";
    Map<Long, Long> generationOf = new ConcurrentHashMap<>();
    AtomicBoolean stop = new AtomicBoolean();
    AtomicLong reads = new AtomicLong();
    put(client, key, 0, generationOf);
    ExecutorService pool = Executors.newFixedThreadPool(4);
    try (client) {
      List<Future<?>> tasks = new ArrayList<>();
      tasks.add(pool.submit(() -> {
        for (long g = 1; !stop.get(); g++) {
          put(client, key, g, generationOf);
        }
        return null;
      }));
      tasks.add(pool.submit(() -> {
        while (!stop.get()) {
          compactor.compact();
          Thread.sleep(20);
        }
        return null;
      }));
      for (int r = 0; r < 2; r++) {
        boolean direct = r == 0;
        tasks.add(pool.submit(() -> {
          ByteBuffer dst = direct ? ByteBuffer.allocateDirect(BLOB_BYTES)
              : ByteBuffer.allocate(BLOB_BYTES);
          while (!stop.get()) {
            dst.clear();
            BlobStat s = TyrClient.await(client.read(key, 0, dst));
            dst.flip();
            assertThat(dst.remaining()).isEqualTo(BLOB_BYTES);
            long g = dst.getLong(0);
            for (int i = 0; i < BLOB_BYTES; i += 8) {
              if (dst.getLong(i) != g) {
                throw new AssertionError("version " + s.version() + " mixes generation " + g
                    + " with " + dst.getLong(i) + " at byte " + i);
              }
            }
            assertThat(awaitGeneration(generationOf, s.version()))
                .as("generation of version %d", s.version()).isEqualTo(g);
            reads.incrementAndGet();
          }
          return null;
        }));
      }
      Thread.sleep(length.toMillis());
      // Then on until there is something to check: on a loaded machine (two cores at a
      // load of 30) the writer may not have rolled the first segment away in that time,
      // nor the readers read much. Bounded; the checks below say what was missing.
      Path first = dataDir.resolve(String.format("%020d.tyrlog", 1));
      long deadline = System.nanoTime() + Duration.ofSeconds(60).toNanos();
      while ((reads.get() <= 20 || Files.exists(first)) && System.nanoTime() < deadline
          && tasks.stream().noneMatch(Future::isDone)) {
        Thread.sleep(50);
      }
      stop.set(true);
      for (Future<?> f : tasks) {
        f.get();
      }
      LocalReadStats stats = client.localReadStats();
      assertThat(reads.get()).isGreaterThan(20);
      assertThat(stats.fallbacks()).as("fallbacks").isZero();
      assertThat(stats.localReads()).as("local reads").isEqualTo(reads.get());
      assertThat(Files.exists(dataDir.resolve(String.format("%020d.tyrlog", 1))))
          .as("the first segment, compacted away while reads went on").isFalse();
    } finally {
      stop.set(true);
      pool.shutdownNow();
    }
  }

  private static void put(TyrClient c, String key, long g, Map<Long, Long> generationOf)
      throws Exception {
    ByteBuffer b = ByteBuffer.allocate(BLOB_BYTES);
    while (b.hasRemaining()) {
      b.putLong(g);
    }
    CommitResult r = TyrClient.await(c.commit(TxRequest.of(new TxOp.Put(key, b.flip(), false))));
    generationOf.put(r.version(), g);
  }

  /** The writer records a version just after its commit returns: a reader may be faster. */
  private static long awaitGeneration(Map<Long, Long> generationOf, long version)
      throws InterruptedException {
    for (int i = 0; i < 5000; i++) {
      Long g = generationOf.get(version);
      if (g != null) {
        return g;
      }
      Thread.sleep(1);
    }
    throw new AssertionError("no write made version " + version);
  }

  /**
   * Waits (bounded: a loaded machine) until the node holds no pin, and checks it; polls
   * every 10 ms rather than spinning a core for up to a minute.
   */
  public static void awaitNoPins(io.blobfs.tyr.engine.TyrEngine engine) {
    long deadline = System.nanoTime() + Duration.ofSeconds(60).toNanos();
    while (engine.pinnedGrants() > 0 && System.nanoTime() < deadline) {
      try {
        Thread.sleep(10);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        break;
      }
    }
    assertThat(engine.pinnedGrants()).isZero();
  }
}
