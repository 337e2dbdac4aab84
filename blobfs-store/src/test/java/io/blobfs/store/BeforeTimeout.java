package io.blobfs.store;

import java.time.Duration;

/**
 * Runs a check that holds only until a timeout runs out (a lease, a transaction timeout, an
 * idle limit), so that a loaded machine cannot fail it by being slow. On two cores at a
 * load of 30, a step of a few milliseconds can take a second, and a short timeout then
 * runs out before the checks that need it running, which fail although the code is right.
 *
 * <p>The check is given the timeout to configure and a {@link Window}, on which it marks
 * when the timeout began and when the checks that need it running are done. If the check
 * fails and more than the timeout passed between the two marks (or from the first to the
 * failure), the failure may be the machine's: the check runs again, from scratch, with a
 * timeout four times as long, up to the last try, whose failure is thrown whatever it is.
 * A failure within the timeout is thrown at once, so the check still fails on the bug it
 * was written for; a quiet machine runs it once, with the short timeout.
 */
public final class BeforeTimeout {
  private BeforeTimeout() {
  }

  /** A check run with a given timeout; it must build its own fixture each time. */
  public interface Check {
    void run(Duration timeout, Window window) throws Exception;
  }

  /** The span that must fit in the timeout, by the check's own marks. */
  public static final class Window {
    private long beganNanos = System.nanoTime(); // by default: when the try began
    private Long doneNanos;

    /**
     * Marks that the timeout begins now (call it just before the timed step). A check with
     * several timed steps marks each: the last span marked is the one judged.
     */
    public void began() {
      beganNanos = System.nanoTime();
      doneNanos = null;
    }

    /**
     * Marks that the checks that need the timeout running are done: a later failure (of
     * the checks after it ran out, say) is thrown at once unless the window had run out.
     */
    public void done() {
      doneNanos = System.nanoTime();
    }

    boolean ranOut(Duration timeout) {
      long end = doneNanos != null ? doneNanos : System.nanoTime();
      return end - beganNanos > timeout.toNanos();
    }
  }

  /**
   * Runs {@code check} with {@code first}, then with four times as long after each failure
   * that came once the timeout had run out, at most {@code tries} times in all.
   *
   * @return the timeout of the try that passed
   */
  public static Duration check(Duration first, int tries, Check check) throws Exception {
    Duration timeout = first;
    for (int i = 1; ; i++) {
      Window window = new Window();
      try {
        check.run(timeout, window);
        return timeout;
      } catch (Exception | AssertionError e) {
        if (i >= tries || !window.ranOut(timeout)) {
          throw e;
        }
        System.err.println("BeforeTimeout: failed after the timeout of " + timeout
            + " had run out (a loaded machine?); trying again with "
            + timeout.multipliedBy(4) + ": " + e);
        timeout = timeout.multipliedBy(4);
      }
    }
  }
}
