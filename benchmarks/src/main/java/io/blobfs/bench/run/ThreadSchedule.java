package io.blobfs.bench.run;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.Map;
import java.util.stream.Stream;

/**
 * What the scheduler did with some of this JVM's threads during a run (Linux only): for
 * the threads whose name starts with a prefix (Spark's {@code Executor task launch
 * worker-N}), their CPU time and their time runnable but waiting for a CPU, from
 * {@code /proc/self/task/TID/schedstat}, polled every 50 ms because the threads end with
 * their SparkContext, before the run is over (they idle in their pool between tasks, so
 * the last poll sees their final figures). A thread that appears during the run counts
 * from zero. A task's run time minus the two is the time it was blocked.
 */
final class ThreadSchedule {
  private static final Path TASKS = Path.of("/proc/self/task");
  private final String prefix;
  private final Map<String, long[]> first = new HashMap<>();
  private final Map<String, long[]> last = new HashMap<>();
  private final Thread poller;
  private volatile boolean running = true;

  ThreadSchedule(String prefix) {
    this.prefix = prefix.length() > 15 ? prefix.substring(0, 15) : prefix; // comm's limit
    this.poller = new Thread(this::poll, "schedstat-poller");
    poller.setDaemon(true);
    sample();
    baselineSet = true;
    poller.start();
  }

  /** Before the first sample is done, threads seen count from their figures then. */
  private boolean baselineSet;

  private void poll() {
    while (running) {
      sample();
      try {
        Thread.sleep(50);
      } catch (InterruptedException e) {
        return;
      }
    }
  }

  private synchronized void sample() {
    try (Stream<Path> tasks = Files.list(TASKS)) {
      tasks.forEach(t -> {
        try {
          if (Files.readString(t.resolve("comm")).startsWith(prefix)) {
            String[] f = Files.readString(t.resolve("schedstat")).trim().split(" ");
            long[] v = {Long.parseLong(f[0]), Long.parseLong(f[1])};
            String tid = t.getFileName().toString();
            first.putIfAbsent(tid, baselineSet ? new long[2] : v);
            last.put(tid, v);
          }
        } catch (IOException | RuntimeException e) {
          // the thread ended between the listing and the read
        }
      });
    } catch (IOException e) {
      // no /proc: nothing to report
    }
  }

  /** Stops polling; returns {CPU ns, run-queue wait ns} summed over the matching threads. */
  synchronized long[] stop() {
    running = false;
    poller.interrupt();
    sample();
    long[] sum = new long[2];
    last.forEach((tid, v) -> {
      long[] f = first.get(tid);
      sum[0] += v[0] - f[0];
      sum[1] += v[1] - f[1];
    });
    return sum;
  }
}
