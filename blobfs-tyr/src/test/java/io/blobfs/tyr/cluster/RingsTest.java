package io.blobfs.tyr.cluster;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.blobfs.tyr.ring.Member;
import io.blobfs.tyr.ring.Ring;
import io.blobfs.tyr.ring.WrongEpochException;
import io.blobfs.tyr.server.Membership;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The cluster ITs' replica check under a ring the monitor may change (review should-fix
 * 5): a node answering with a newer ring redoes the check under it, a bounded number of
 * times; anything else fails the check at once. No process: the "nodes" are the check.
 */
class RingsTest {
  private static final Member A = new Member("127.0.0.1", 7401);
  private static final Member B = new Member("127.0.0.1", 7402);
  private static final Duration WAIT = Duration.ofSeconds(30);

  @TempDir
  Path dir;

  private Path ringFile(Ring r) throws Exception {
    return Files.writeString(dir.resolve("ring"), Membership.ringFileText(r));
  }

  /** A false DOWN and back during the check: redone under the ring with every member UP. */
  @Test
  void aRingChangeDuringTheCheckRedoesItUnderTheNewRing() throws Exception {
    Ring first = new Ring(1, List.of(A, B), 8, 2);
    Ring upAgain = new Ring(3, List.of(A, B), 8, 2);
    Path file = ringFile(first);
    List<Long> checkedUnder = new ArrayList<>();
    long result = Rings.underStableRing(file, WAIT, ring -> {
      checkedUnder.add(ring.epoch());
      if (ring.epoch() == 1) {
        ringFile(upAgain); // the monitor: B DOWN (2), then UP again (3)
        throw new WrongEpochException("node has epoch 2", first.withState(B, Ring.State.DOWN,
            2));
      }
      return ring.epoch();
    });
    assertThat(result).isEqualTo(3);
    assertThat(checkedUnder).containsExactly(1L, 3L);
  }

  @Test
  void aRingThatKeepsChangingFailsAfterTheLastRound() throws Exception {
    Path file = ringFile(new Ring(1, List.of(A, B), 8, 2));
    List<Long> checkedUnder = new ArrayList<>();
    assertThatThrownBy(() -> Rings.underStableRing(file, WAIT, ring -> {
      checkedUnder.add(ring.epoch());
      Ring next = new Ring(ring.epoch() + 1, List.of(A, B), 8, 2);
      ringFile(next);
      throw new WrongEpochException("node has epoch " + next.epoch(), next);
    })).isInstanceOf(WrongEpochException.class);
    assertThat(checkedUnder).hasSize(Rings.ROUNDS);
  }

  /** A real difference, or a node behind the ring, is not papered over by a redo. */
  @Test
  void aFailureThatIsNotANewerRingIsNotRedone() throws Exception {
    Ring ring = new Ring(2, List.of(A, B), 8, 2);
    Path file = ringFile(ring);
    List<Long> checkedUnder = new ArrayList<>();
    assertThatThrownBy(() -> Rings.underStableRing(file, WAIT, r -> {
      checkedUnder.add(r.epoch());
      throw new AssertionError("k/1 differs");
    })).hasMessage("k/1 differs");
    assertThatThrownBy(() -> Rings.underStableRing(file, WAIT, r -> {
      checkedUnder.add(r.epoch());
      throw new WrongEpochException("node has epoch 1", new Ring(1, List.of(A, B), 8, 2));
    })).isInstanceOf(WrongEpochException.class);
    assertThat(checkedUnder).containsExactly(2L, 2L);
  }
}
