package io.blobfs.store;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/** No clock is waited on: a timeout of an hour never runs out, one of a nanosecond always. */
class BeforeTimeoutTest {
  @Test
  void aFailureWithinTheTimeoutIsThrownAtOnce() {
    List<Duration> tried = new ArrayList<>();
    AssertionError bug = new AssertionError("the bug");
    AssertionError thrown = assertThrows(AssertionError.class,
        () -> BeforeTimeout.check(Duration.ofHours(1), 3, (timeout, w) -> {
          tried.add(timeout);
          throw bug;
        }));
    assertSame(bug, thrown);
    assertEquals(List.of(Duration.ofHours(1)), tried);
  }

  @Test
  void aFailureAfterTheTimeoutRanOutIsTriedAgainWithFourTimesAsLong() throws Exception {
    List<Duration> tried = new ArrayList<>();
    Duration passed = BeforeTimeout.check(Duration.ofNanos(1), 3, (timeout, w) -> {
      tried.add(timeout);
      if (tried.size() < 3) {
        w.began();
        throw new java.io.IOException("ran out");
      }
    });
    assertEquals(List.of(Duration.ofNanos(1), Duration.ofNanos(4), Duration.ofNanos(16)),
        tried);
    assertEquals(Duration.ofNanos(16), passed);
  }

  @Test
  void aFailureAfterAWindowThatFitIsThrownAtOnce() {
    List<Duration> tried = new ArrayList<>();
    assertThrows(IllegalStateException.class,
        () -> BeforeTimeout.check(Duration.ofHours(1), 3, (timeout, w) -> {
          tried.add(timeout);
          w.began();
          w.done();
          throw new IllegalStateException("after the window");
        }));
    assertEquals(1, tried.size());
  }

  @Test
  void theLastTrysFailureIsThrownWhatever() {
    List<Duration> tried = new ArrayList<>();
    assertThrows(IllegalStateException.class,
        () -> BeforeTimeout.check(Duration.ofNanos(1), 2, (timeout, w) -> {
          tried.add(timeout);
          throw new IllegalStateException("still");
        }));
    assertEquals(2, tried.size());
  }
}
