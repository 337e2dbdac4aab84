package io.blobfs.rados;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.blobfs.namespace.CrashLoop;
import io.blobfs.store.BlobStore;
import io.blobfs.store.ScanPage;
import io.blobfs.store.StoreOptions;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Paths;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * The crash test of issue 14 on RADOS: a child JVM ({@link CrashWorker}) runs file and
 * directory renames, recursive deletes and overwrites ({@link CrashLoop}) and is killed
 * with SIGKILL at a random moment, {@code blobfs.crash.kills} times (24 by default); after
 * each kill the recovery runs (the recovery command and a sweep, past the dead worker's
 * lease) and every invariant is checked: each name reads back bytes it was given, no two
 * names share a file id, no name lacks data, no directory is split or short, no orphan,
 * lock or intent is left.
 */
@ExtendWith(CephClusterExtension.class)
class RadosCrashIT {
  private static final Duration LEASE = Duration.ofMillis(1500);

  @Test
  void killedAtRandomPointsNothingIsLostSplitOrShared(CephTestCluster.Env env) throws Exception {
    int kills = Integer.getInteger("blobfs.crash.kills", 24);
    long seed = Long.getLong("blobfs.crash.seed", System.nanoTime() & 0xffffff);
    Map<String, String> options =
        CephTestCluster.storeOptions(env, env.pool(), "crash-" + System.nanoTime());
    Random rnd = new Random(seed);
    CrashLoop.Log log = new CrashLoop.Log();
    int recoveries = 0;
    int finished = 0;
    int swept = 0;
    List<String> problems = new ArrayList<>();
    CrashLoop.Check last = null;
    try (BlobStore store = new RadosBlobStoreProvider().open("crash",
        new StoreOptions("fs.blob.store.crash.", options))) {
      try {
        for (int kill = 1; kill <= kills; kill++) {
          log.run(runAndKill(seed * 100 + kill, options, 300 + rnd.nextInt(2500)));
          last = CrashLoop.recoverAndCheck(store, LEASE, log.groups());
          recoveries++;
          finished += last.finished().size();
          swept += last.sweptBlobs();
          for (String p : last.problems()) {
            problems.add("after kill " + kill + ": " + p);
            System.out.println("[crash] PROBLEM after kill " + kill + ": " + p);
          }
          System.out.printf("[crash] kill %d: %d ops so far; recovery finished %s, swept %d"
              + " blob(s); %d files in %d groups%n", kill, log.operations(), last.finished(),
              last.sweptBlobs(), last.files(), last.groups());
        }
      } finally {
        removeAll(store);
      }
    }
    System.out.printf("[crash] seed %d: %d kills (SIGKILL; %d mid-operation), %d operations"
        + " completed, %d recoveries (%d interrupted operations finished or settled, %d orphan"
        + " blobs swept), %d groups that must exist, %d problem(s)%n", seed, kills,
        log.killedMidOperation(), log.operations(), recoveries, finished, swept,
        log.groups().size(), problems.size());
    assertEquals(List.of(), problems, "seed " + seed);
    assertTrue(log.operations() > kills,
        "the worker got work done between kills: " + log.operations());
    assertTrue(last != null && last.files() > 0, "files remain to check");
  }

  /**
   * Starts a worker, waits until it is ready, lets it run {@code millis}, kills it; returns
   * its output.
   */
  private static List<String> runAndKill(long seed, Map<String, String> options, int millis)
      throws Exception {
    List<String> cmd = new ArrayList<>(List.of(
        Paths.get(System.getProperty("java.home"), "bin", "java").toString(), "-cp",
        System.getProperty("java.class.path"), CrashWorker.class.getName(),
        Long.toString(seed), Long.toString(LEASE.toMillis())));
    options.forEach((k, v) -> cmd.add(k + "=" + v));
    Process worker = new ProcessBuilder(cmd).redirectErrorStream(true).start();
    CountDownLatch ready = new CountDownLatch(1);
    List<String> tail = new ArrayList<>();
    List<String> lines = java.util.Collections.synchronizedList(new ArrayList<>());
    Thread reader = new Thread(() -> {
      try (BufferedReader r = new BufferedReader(
          new InputStreamReader(worker.getInputStream(), StandardCharsets.UTF_8))) {
        for (String line; (line = r.readLine()) != null; ) {
          if (line.startsWith("READY")) {
            ready.countDown();
          }
          lines.add(line);
          synchronized (tail) {
            tail.add(line);
            if (tail.size() > 20) {
              tail.remove(0);
            }
          }
        }
      } catch (IOException e) {
        // the worker died
      }
    });
    reader.start();
    try {
      if (!ready.await(60, TimeUnit.SECONDS)) {
        throw new AssertionError("the worker did not start: " + tail);
      }
      Thread.sleep(millis);
      if (!worker.isAlive()) {
        throw new AssertionError("the worker stopped by itself: " + tail);
      }
    } finally {
      worker.destroyForcibly(); // SIGKILL
      worker.waitFor(30, TimeUnit.SECONDS);
      reader.join(10_000);
    }
    synchronized (lines) {
      return List.copyOf(lines);
    }
  }

  private static void removeAll(BlobStore store) throws IOException {
    String cursor = null;
    do {
      ScanPage page = store.scan("", cursor, 1000);
      for (String k : page.keys()) {
        store.delete(k);
      }
      cursor = page.nextCursor();
    } while (cursor != null);
  }
}
