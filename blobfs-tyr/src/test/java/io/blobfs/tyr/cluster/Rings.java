package io.blobfs.tyr.cluster;

import static org.assertj.core.api.Assertions.assertThat;

import io.blobfs.tyr.client.TyrClient;
import io.blobfs.tyr.ring.HandingOverException;
import io.blobfs.tyr.ring.Ring;
import io.blobfs.tyr.ring.WrongEpochException;
import io.blobfs.tyr.server.Membership;
import java.io.IOException;
import java.io.InterruptedIOException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.function.Predicate;
import java.util.function.Supplier;

/**
 * Test helpers for reading a process cluster's ring file and each node alone under it:
 * one copy of the waits the cluster ITs (and blobfs-e2e's) share.
 *
 * <p>The monitor may change the ring at any time, a false DOWN under load included, and
 * a node then refuses requests made under the old epoch. A check that reads every replica
 * therefore runs under {@link #underStableRing}: redone from the start under the new ring
 * (every member UP again) a bounded number of times, so that a ring change during the
 * check does not fail it, while a real difference still does.
 */
public final class Rings {
  /** How many times a check is redone after the ring changed under it. */
  public static final int ROUNDS = 5;

  private Rings() {}

  /** The check run under one ring. */
  @FunctionalInterface
  public interface Check<T> {
    T under(Ring ring) throws Exception;
  }

  /** The ring file's ring once {@code p} holds of it; fails after {@code timeout}. */
  public static Ring await(Path ringFile, Predicate<Ring> p, String what, Duration timeout)
      throws Exception {
    long deadline = System.nanoTime() + timeout.toNanos();
    while (true) {
      Ring r = Membership.readRingFile(ringFile);
      if (p.test(r)) {
        return r;
      }
      assertThat(System.nanoTime()).as("waiting for " + what + "; ring " + r)
          .isLessThan(deadline);
      Thread.sleep(100);
    }
  }

  /** Every member UP: no DOWN or RECOVERING listed. */
  public static boolean allUp(Ring r) {
    return r.states().isEmpty();
  }

  /**
   * {@code check}'s result under a ring with every member UP, redone under the new ring
   * when a node answers with a newer one than it was started under (up to {@link #ROUNDS}
   * times, waiting up to {@code timeout} each time for every member UP again).
   */
  public static <T> T underStableRing(Path ringFile, Duration timeout, Check<T> check)
      throws Exception {
    for (int round = 1; ; round++) {
      Ring ring = await(ringFile, Rings::allUp, "every member UP", timeout);
      try {
        return check.under(ring);
      } catch (WrongEpochException changed) {
        if (changed.ring() == null || changed.ring().epoch() <= ring.epoch()
            || round >= ROUNDS) {
          throw changed;
        }
        System.out.println("RINGS the ring changed from epoch " + ring.epoch() + " to "
            + changed.ring().epoch() + " (" + changed.ring().states() + ") during a check; "
            + "redoing it under the new ring (round " + (round + 1) + " of " + ROUNDS + ")");
      }
    }
  }

  /**
   * {@code call}'s result, retried (bounded, about 30 s) while the node has not yet loaded
   * {@code ring}'s epoch from the ring file (it rereads it about once a second). A node
   * ahead of {@code ring} fails it with its {@link WrongEpochException}: see
   * {@link #underStableRing}.
   */
  public static <T> T underEpoch(Ring ring, Supplier<CompletableFuture<T>> call)
      throws IOException {
    for (int attempt = 0; ; attempt++) {
      try {
        return TyrClient.await(call.get());
      } catch (WrongEpochException behind) {
        // A node handing over (just UP again) serves within seconds: waited for as behind.
        if (attempt >= 300 || behind.ring() == null || (behind.ring().epoch() >= ring.epoch()
            && !(behind instanceof HandingOverException))) {
          throw behind;
        }
        try {
          Thread.sleep(100);
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
          throw new InterruptedIOException("waiting for epoch " + ring.epoch());
        }
      }
    }
  }
}
