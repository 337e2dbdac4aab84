package io.blobfs.tyr.server;

import static org.assertj.core.api.Assertions.assertThat;

import io.blobfs.tyr.ring.Member;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.function.LongPredicate;
import org.junit.jupiter.api.Test;

/**
 * The primary's repairs of keys its backups did not confirm (session 8's review: one pass
 * started every owed key at once, each holding its blob in memory, and one key that kept
 * failing held every other key to its back-off). Time is the test's own: timers run when
 * the test moves its clock, and each repair ends when the test says.
 */
class OwedKeysTest {
  private static final Member B = new Member("127.0.0.1", 20001);
  private static final Member C = new Member("127.0.0.1", 20002);

  /** Timers run by hand, on a clock the test moves. */
  private static final class Clock implements OwedKeys.Timer {
    long nowMs;
    private final List<long[]> at = new ArrayList<>();
    private final List<Runnable> tasks = new ArrayList<>();

    @Override
    public synchronized void after(long delayMs, Runnable task) {
      at.add(new long[] {nowMs + delayMs});
      tasks.add(task);
    }

    /** Moves to {@code t}, running each timer due by then (and those they set) in order. */
    void advanceTo(long t) {
      while (true) {
        Runnable next = null;
        synchronized (this) {
          int first = -1;
          for (int i = 0; i < at.size(); i++) {
            if (at.get(i)[0] <= t && (first < 0 || at.get(i)[0] < at.get(first)[0])) {
              first = i;
            }
          }
          if (first < 0) {
            nowMs = t;
            return;
          }
          nowMs = Math.max(nowMs, at.remove(first)[0]);
          next = tasks.remove(first);
        }
        next.run();
      }
    }
  }

  /** A repair made: which key, and the future the test completes. */
  private record Call(Member backup, String key, long atMs, CompletableFuture<Boolean> done) {}

  private final Clock clock = new Clock();
  private final List<Call> calls = new ArrayList<>();

  private OwedKeys owedKeys(int maxRunning, long maxHeldBytes, long blobBytes) {
    return new OwedKeys((backup, key, hold) -> {
      CompletableFuture<Boolean> done = new CompletableFuture<>();
      if (!hold.test(blobBytes)) {
        done.complete(false);
      }
      synchronized (calls) {
        calls.add(new Call(backup, key, clock.nowMs, done));
      }
      return done;
    }, clock, () -> clock.nowMs, maxRunning, maxHeldBytes);
  }

  private List<Call> running() {
    synchronized (calls) {
      return calls.stream().filter(c -> !c.done().isDone()).toList();
    }
  }

  @Test
  void owingManyKeysRunsAtMostTheBoundOfRepairsAtOnce() {
    try (OwedKeys o = owedKeys(4, Long.MAX_VALUE, 100)) {
      List<String> keys = new ArrayList<>();
      for (int i = 0; i < 100; i++) {
        keys.add("k/" + i);
      }
      o.owe(B, keys);
      clock.advanceTo(OwedKeys.FIRST_DELAY_MS);
      assertThat(calls).as("repairs started").hasSize(4);
      int repaired = 0;
      while (!running().isEmpty()) {
        assertThat(running()).hasSizeLessThanOrEqualTo(4);
        assertThat(o.running()).isEqualTo(running().size());
        running().get(0).done().complete(true); // ends one: the next due one starts,
        clock.advanceTo(clock.nowMs); // on the timer's thread
        repaired++;
      }
      assertThat(repaired).isEqualTo(100);
      assertThat(calls).extracting(Call::key).containsExactlyInAnyOrderElementsOf(keys);
      assertThat(o.owedTo(B)).isEmpty();
    }
  }

  @Test
  void repairsHoldNoMoreBlobBytesThanTheBoundButOneMayRunAlone() {
    try (OwedKeys o = owedKeys(16, 64, 30)) { // 30 bytes a blob, 64 held at most
      o.owe(B, List.of("a", "b", "c"));
      clock.advanceTo(OwedKeys.FIRST_DELAY_MS);
      // Two hold 60 bytes; the third may not hold 30 more, and does not run now.
      assertThat(running()).hasSize(2);
      assertThat(calls).hasSize(3);
      assertThat(o.owedTo(B)).containsExactlyInAnyOrder("a", "b", "c");
      running().forEach(c -> c.done().complete(true));
      clock.advanceTo(10 * OwedKeys.MAX_DELAY_MS);
      running().forEach(c -> c.done().complete(true));
      assertThat(o.owedTo(B)).isEmpty();
    }
    calls.clear();
    try (OwedKeys o = owedKeys(16, 64, 1000)) { // larger than the bound: alone it runs
      o.owe(B, List.of("big"));
      clock.advanceTo(clock.nowMs + OwedKeys.FIRST_DELAY_MS);
      assertThat(running()).hasSize(1);
      running().get(0).done().complete(true);
      assertThat(o.owedTo(B)).isEmpty();
    }
  }

  /**
   * Key a keeps failing, and backs off to 8 s; key b, owed later, is tried a second after
   * it is owed, not at a's next try. Before, one back-off held every key.
   */
  @Test
  void eachKeyBacksOffOnItsOwn() {
    try (OwedKeys o = owedKeys(16, Long.MAX_VALUE, 1)) {
      o.owe(B, List.of("a"));
      long t = 0;
      long delay = OwedKeys.FIRST_DELAY_MS;
      for (int i = 0; i < 4; i++) { // a fails at 1, 3, 7 and 15 s
        t += delay;
        clock.advanceTo(t);
        assertThat(running()).extracting(Call::key).containsExactly("a");
        running().get(0).done().complete(false);
        delay = Math.min(OwedKeys.MAX_DELAY_MS, delay * 2);
      }
      long aNext = t + OwedKeys.MAX_DELAY_MS; // 23 s
      long bOwed = t + 1;
      clock.advanceTo(bOwed);
      o.owe(C, List.of("b"));
      clock.advanceTo(bOwed + OwedKeys.FIRST_DELAY_MS);
      assertThat(running()).extracting(Call::key).containsExactly("b");
      running().get(0).done().complete(true);
      assertThat(o.owedTo(C)).isEmpty();
      clock.advanceTo(aNext - 1);
      assertThat(running()).as("a before its back-off ended").isEmpty();
      clock.advanceTo(aNext);
      assertThat(running()).extracting(Call::key).containsExactly("a");
      running().get(0).done().complete(true);
      assertThat(o.owedTo(B)).isEmpty();
    }
  }

  /** A key owed again while its repair runs is repaired again: that one read the older state. */
  @Test
  void aKeyOwedAgainWhileItsRepairRunsIsRepairedAgain() {
    try (OwedKeys o = owedKeys(16, Long.MAX_VALUE, 1)) {
      o.owe(B, List.of("a"));
      clock.advanceTo(OwedKeys.FIRST_DELAY_MS);
      Call first = running().get(0);
      o.owe(B, List.of("a"));
      first.done().complete(true);
      assertThat(o.owedTo(B)).containsExactly("a");
      clock.advanceTo(2 * OwedKeys.FIRST_DELAY_MS);
      assertThat(running()).extracting(Call::key).containsExactly("a");
      running().get(0).done().complete(true);
      assertThat(o.owedTo(B)).isEmpty();
    }
  }

  /**
   * Repairs that end at once (the backup is no longer one, a blob too large) pumped again
   * within themselves before: a stack frame per owed key, until the stack overflowed and
   * the running count leaked, which stopped every repair for good (a review's finding).
   */
  @Test
  void manyRepairsThatEndAtOnceAreAllEndedWithoutNesting() {
    List<Integer> depths = new ArrayList<>();
    try (OwedKeys o = new OwedKeys((backup, key, hold) -> {
      depths.add(Thread.currentThread().getStackTrace().length);
      return CompletableFuture.completedFuture(true);
    }, clock, () -> clock.nowMs, 16, 64L << 20)) {
      List<String> keys = new ArrayList<>();
      for (int i = 0; i < 20_000; i++) {
        keys.add("k/" + i);
      }
      o.owe(B, keys);
      clock.advanceTo(OwedKeys.FIRST_DELAY_MS);
      assertThat(o.running()).isZero();
      assertThat(o.owedTo(B)).isEmpty();
      assertThat(depths).hasSize(20_000);
      assertThat(depths.stream().mapToInt(Integer::intValue).max().getAsInt())
          .isLessThan(depths.get(0) + 50); // no deeper for the 20,000th than the first
    }
  }
}
