package io.blobfs.tyr.it;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assertions.assertEquals;

import io.blobfs.tyr.api.TxOp;
import io.blobfs.tyr.api.TxRequest;
import io.blobfs.tyr.client.ClientConfig;
import io.blobfs.tyr.client.TyrClient;
import io.blobfs.tyr.engine.EngineConfig;
import io.blobfs.tyr.engine.SyncPolicy;
import io.blobfs.tyr.server.ServerConfig;
import io.blobfs.tyr.server.TyrServer;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Eight client threads run mixed transactions on overlapping blobs: transfers between
 * accounts (read, validate, write), atomic add pairs, audits (read-only transactions),
 * and whole rewrites of a multi-chunk blob read concurrently. Invariants: the total
 * balance is conserved in every validated audit and at the end, and no read ever sees a
 * mix of two versions.
 */
class TyrConcurrencyIT {
  private static final int ACCOUNTS = 10;
  private static final long START = 1000;
  private static final int PATTERN_BYTES = 300_000; // five 64 KiB chunks
  @TempDir
  Path dir;

  @Test
  void mixedTransactionsConserveTheSumAndNeverTear() throws Exception {
    EngineConfig engine = EngineConfig.defaults(dir).withSyncPolicy(SyncPolicy.ALWAYS)
        .withChunkBytes(64 << 10);
    try (TyrServer server = TyrServer.start(ServerConfig.local(engine));
        TyrClient client = new TyrClient(ClientConfig.of("127.0.0.1", server.port())
            .withConnections(4))) {
      List<TxOp> init = new ArrayList<>();
      for (int a = 0; a < ACCOUNTS; a++) {
        init.add(new TxOp.Put(account(a), ByteBuffer.allocate(8).putLong(0, START), true));
      }
      init.add(new TxOp.Put("pattern", filled((byte) 0), true));
      TyrClient.await(client.commit(new TxRequest(List.of(), init)));

      AtomicLong audits = new AtomicLong();
      AtomicLong tornAudits = new AtomicLong();
      AtomicLong patternReads = new AtomicLong();
      AtomicLong tornReads = new AtomicLong();
      AtomicLong conflictsRetried = new AtomicLong();
      ExecutorService pool = Executors.newFixedThreadPool(8);
      List<Future<?>> work = new ArrayList<>();
      for (int t = 0; t < 8; t++) {
        long seed = t;
        work.add(pool.submit(() -> {
          Random rnd = new Random(seed);
          for (int i = 0; i < 250; i++) {
            int kind = rnd.nextInt(4);
            if (kind == 0) {
              int from = rnd.nextInt(ACCOUNTS);
              int to = (from + 1 + rnd.nextInt(ACCOUNTS - 1)) % ACCOUNTS;
              long amount = rnd.nextInt(50);
              int[] attempts = {0};
              client.inTransaction(50, tx -> {
                if (attempts[0]++ > 0) {
                  conflictsRetried.incrementAndGet();
                }
                long a = tx.readLong(account(from), 0);
                long b = tx.readLong(account(to), 0);
                tx.write(account(from), 0, ByteBuffer.allocate(8).putLong(0, a - amount));
                tx.write(account(to), 0, ByteBuffer.allocate(8).putLong(0, b + amount));
                return null;
              });
            } else if (kind == 1) {
              int a = rnd.nextInt(ACCOUNTS);
              int b = (a + 1) % ACCOUNTS;
              long x = rnd.nextInt(100) - 50;
              TyrClient.await(client.commit(TxRequest.of(new TxOp.Add(account(a), 0, x),
                  new TxOp.Add(account(b), 0, -x))));
            } else if (kind == 2) {
              // Retried until it validates: every audit counted saw one snapshot.
              long sum = client.inTransaction(100, tx -> {
                long total = 0;
                for (int a = 0; a < ACCOUNTS; a++) {
                  total += tx.readLong(account(a), 0);
                }
                return total;
              });
              audits.incrementAndGet();
              if (sum != ACCOUNTS * START) {
                tornAudits.incrementAndGet();
              }
            } else {
              if (rnd.nextBoolean()) {
                TyrClient.await(client.commit(TxRequest.of(
                    new TxOp.Put("pattern", filled((byte) rnd.nextInt(256)), false))));
              } else {
                ByteBuffer all = ByteBuffer.allocate(PATTERN_BYTES);
                TyrClient.await(client.read("pattern", 0, all));
                patternReads.incrementAndGet();
                byte first = all.get(0);
                for (int p = 0; p < PATTERN_BYTES; p++) {
                  if (all.get(p) != first) {
                    tornReads.incrementAndGet();
                    break;
                  }
                }
              }
            }
          }
          return null;
        }));
      }
      for (Future<?> f : work) {
        f.get();
      }
      pool.shutdown();
      long total = 0;
      for (int a = 0; a < ACCOUNTS; a++) {
        ByteBuffer b = ByteBuffer.allocate(8);
        TyrClient.await(client.read(account(a), 0, b));
        total += b.getLong(0);
      }
      System.out.printf("Týr concurrency: %d audits validated, %d pattern reads, %d transfer "
          + "retries after conflicts%n", audits.get(), patternReads.get(),
          conflictsRetried.get());
      assertEquals(ACCOUNTS * START, total, "the total balance changed");
      assertEquals(0, tornAudits.get(), "an audit that validated saw a mix of versions");
      assertEquals(0, tornReads.get(), "a read saw a mix of two versions of one blob");
      assertThat(audits.get()).isGreaterThan(10);
      assertThat(patternReads.get()).isGreaterThan(10);
    }
  }

  private static String account(int a) {
    return "account/" + a;
  }

  private static ByteBuffer filled(byte b) {
    byte[] a = new byte[PATTERN_BYTES];
    java.util.Arrays.fill(a, b);
    return ByteBuffer.wrap(a);
  }
}
