package io.blobfs.e2e;

import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.spark.scheduler.SparkListener;
import org.apache.spark.scheduler.SparkListenerTaskEnd;

/**
 * A listener on the driver (named in {@code spark.extraListeners}; the driver of
 * {@code SparkSubmitRunner} runs in the test JVM, so its state is this class's statics):
 * counts the tasks that ended, failed or succeeded, and lets a test wait until a shuffle
 * map task has succeeded, which is a job observably under way.
 */
public final class TaskCounter extends SparkListener {
  private static final AtomicInteger SUCCEEDED = new AtomicInteger();
  private static final AtomicInteger FAILED = new AtomicInteger();
  private static volatile CountDownLatch mapTaskDone = new CountDownLatch(1);

  /** Spark makes it through this constructor. */
  public TaskCounter() {}

  /** Before an application: counts from zero, and a new latch. */
  static void reset() {
    SUCCEEDED.set(0);
    FAILED.set(0);
    mapTaskDone = new CountDownLatch(1);
  }

  static int succeeded() {
    return SUCCEEDED.get();
  }

  /** Task attempts that failed (and were retried, or failed the job). */
  static int failed() {
    return FAILED.get();
  }

  /** Whether a shuffle map task succeeded within {@code seconds}. */
  static boolean awaitMapTask(long seconds) throws InterruptedException {
    return mapTaskDone.await(seconds, TimeUnit.SECONDS);
  }

  @Override
  public void onTaskEnd(SparkListenerTaskEnd end) {
    if (end.taskInfo().successful()) {
      SUCCEEDED.incrementAndGet();
      if ("ShuffleMapTask".equals(end.taskType())) {
        mapTaskDone.countDown();
      }
    } else {
      FAILED.incrementAndGet();
    }
  }
}
