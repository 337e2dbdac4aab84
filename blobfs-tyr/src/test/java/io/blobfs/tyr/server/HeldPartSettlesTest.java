package io.blobfs.tyr.server;

import static org.assertj.core.api.Assertions.assertThat;

import io.blobfs.tyr.ring.Member;
import io.blobfs.tyr.ring.Ring;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.Test;

/**
 * Membership.held moves a prepare's admission from the running commits
 * to the held parts, but does not look at the waiters: a hand-over barrier
 * (settled(epoch, true)) waiting only for that admission stays pending although nothing
 * it waits for runs any more, until some other release or install happens.
 */
class HeldPartSettlesTest {
  @Test
  void aCommitsOnlyBarrierCompletesOnceTheLastRunningCommitBecomesAHeldPart() {
    Member a = new Member("127.0.0.1", 20001);
    Member b = new Member("127.0.0.1", 20002);
    Ring one = new Ring(1, List.of(a, b), 16, 2);
    Membership m = new Membership(a, one);
    Ring admitted = m.admit(); // a prepare admitted under epoch 1
    m.install(one.withState(b, Ring.State.DOWN, 2));
    CompletableFuture<Ring> barrier = m.settled(2, true);
    assertThat(barrier).isNotDone(); // the prepare still runs as a commit
    m.held(admitted); // now a held part: what a commits-only barrier leaves out
    assertThat(barrier).as("commits-only barrier after the last commit became a part")
        .isDone();
    CompletableFuture<Ring> full = m.settled(2, false);
    assertThat(full).isNotDone(); // a catch-up barrier still waits for the part
    m.release(admitted.epoch());
    assertThat(full).isDone();
  }
}
