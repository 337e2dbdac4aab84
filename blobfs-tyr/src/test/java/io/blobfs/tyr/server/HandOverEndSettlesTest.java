package io.blobfs.tyr.server;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.blobfs.tyr.ring.Member;
import io.blobfs.tyr.ring.Ring;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.Test;

/**
 * A node handing over answers no full barrier until its hand-over ends; the end runs the
 * takeover of its shares first. When that takeover fails, the barrier must still complete:
 * otherwise the next ring change waits on this node for ever (review of tyr-handover, S3).
 */
class HandOverEndSettlesTest {
  @Test
  void aFullBarrierCompletesAtTheEndOfAHandOverEvenWhenTheTakeoverFails() throws Exception {
    Member a = new Member("127.0.0.1", 20001);
    Member b = new Member("127.0.0.1", 20002);
    Ring one = new Ring(1, List.of(a, b), 16, 2);
    Membership m = new Membership(a, one);
    Ring down = one.withState(a, Ring.State.DOWN, 2);
    m.install(down);
    Ring recovering = down.withState(a, Ring.State.RECOVERING, 3);
    m.install(recovering);
    m.caughtUp(3);
    m.install(recovering.withState(a, Ring.State.UP, 4)); // a takes its keys back
    CompletableFuture<Ring> full = m.settled(4, false);
    assertThat(full).as("no full barrier while handing over").isNotDone();
    m.onHandedOver(r -> {
      throw new IllegalStateException("takeover failed");
    });
    assertThatThrownBy(() -> m.handedOver(4)).isInstanceOf(IllegalStateException.class);
    assertThat(full).as("full barrier once the hand-over ended").isDone();
  }
}
