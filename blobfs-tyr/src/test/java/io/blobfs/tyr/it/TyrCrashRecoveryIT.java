package io.blobfs.tyr.it;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

import io.blobfs.tyr.api.BlobStat;
import io.blobfs.tyr.api.TxOp;
import io.blobfs.tyr.api.TxRequest;
import io.blobfs.tyr.client.ClientConfig;
import io.blobfs.tyr.client.TyrClient;
import io.blobfs.tyr.server.TyrServerProcess;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.atomic.AtomicLongArray;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * A server process killed with SIGKILL while clients commit multi-blob transactions,
 * some of several MiB, must come back with every acknowledged transaction and no part of
 * any other: each writer's two blobs always hold the same generation, never older than
 * the last one acknowledged.
 */
class TyrCrashRecoveryIT {
  private static final int WRITERS = 4;
  @TempDir
  Path dir;

  @ParameterizedTest
  @ValueSource(strings = {"always", "interval"})
  void killedMidWriteLosesNothingAcknowledgedAndAppliesNothingHalfway(String sync)
      throws Exception {
    // Small segments and a compaction every second: crashes also land mid-compaction.
    TyrServerProcess server = new TyrServerProcess(dir, "--sync", sync, "--segment-size", "16m",
        "--compact-interval", "1s");
    server.start();
    AtomicLongArray acked = new AtomicLongArray(WRITERS);
    try {
      for (int round = 0; round < 3; round++) {
        List<Thread> writers = new ArrayList<>();
        // Generous: a commit of 6 MiB synced at once can take seconds on a loaded machine,
        // and a writer that times out stops (as if the server had been killed).
        ClientConfig cc = ClientConfig.of("127.0.0.1", server.port())
            .withTimeouts(Duration.ofSeconds(5), Duration.ofSeconds(20)); // < the 30 s join
        long ackedBefore = acked.get(0);
        TyrClient client = new TyrClient(cc);
        for (int w = 0; w < WRITERS; w++) {
          int writer = w;
          Thread t = new Thread(() -> {
            try {
              for (long gen = acked.get(writer) + 1; ; gen++) {
                TyrClient.await(client.commit(TxRequest.of(
                    new TxOp.Put("pair/" + writer + "/a", content(writer, gen), false),
                    new TxOp.Put("pair/" + writer + "/b", content(writer, gen), false))));
                acked.set(writer, gen);
              }
            } catch (IOException expected) {
              // the server was killed under us
            }
          });
          t.start();
          writers.add(t);
        }
        // 1.5 s, and on until writer 0 has made progress this round (bounded): on a loaded
        // machine (two cores at a load of 30) 1.5 s may see no commit, and the check that
        // the writers made progress fails on the machine, not on the server.
        Thread.sleep(1500);
        long until = System.nanoTime() + Duration.ofSeconds(60).toNanos();
        while (acked.get(0) < ackedBefore + 2 && System.nanoTime() < until
            && writers.stream().anyMatch(Thread::isAlive)) {
          Thread.sleep(50);
        }
        server.kill();
        for (Thread t : writers) {
          t.join(30_000);
          assertThat(t.isAlive()).as("a writer hangs after the server died").isFalse();
        }
        client.close();
        server.start();
        try (TyrClient check = new TyrClient(ClientConfig.of("127.0.0.1", server.port()))) {
          for (int w = 0; w < WRITERS; w++) {
            long genA = generation(check, w, "a");
            long genB = generation(check, w, "b");
            assertEquals(genA, genB, "writer " + w + ": a transaction was applied in part");
            assertThat(genA).as("writer %d lost an acknowledged commit", w)
                .isBetween(acked.get(w), acked.get(w) + 1);
            acked.set(w, genA);
          }
        }
      }
      assertThat(acked.get(0)).as("writers made progress").isGreaterThan(3);
      server.output().lines().filter(l -> l.contains("discarding") || l.contains("engine open")
          || l.contains("compaction"))
          .forEach(l -> System.out.println("[" + sync + "] " + l));
    } finally {
      server.close();
    }
  }

  /** Generation {@code gen} of a writer's blob: up to 6 MiB, every byte derived from both. */
  static ByteBuffer content(int writer, long gen) {
    Random r = new Random(writer * 1_000_003L + gen);
    int size = 8 + (gen % 5 == 0 ? 6 << 20 : r.nextInt(300_000));
    ByteBuffer b = ByteBuffer.allocate(size);
    b.putLong(gen);
    byte[] rest = new byte[size - 8];
    r.nextBytes(rest);
    b.put(rest);
    return b.flip();
  }

  private static long generation(TyrClient c, int writer, String which) throws IOException {
    String key = "pair/" + writer + "/" + which;
    BlobStat s = TyrClient.await(c.stat(key));
    if (!s.exists()) {
      return 0;
    }
    ByteBuffer all = ByteBuffer.allocate((int) s.size());
    TyrClient.await(c.read(key, 0, all));
    long gen = all.getLong(0);
    assertArrayEquals(content(writer, gen).array(), all.array(), key + " is torn");
    return gen;
  }
}
