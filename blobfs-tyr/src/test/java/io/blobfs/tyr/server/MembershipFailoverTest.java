package io.blobfs.tyr.server;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.junit.jupiter.api.Assertions.assertEquals;

import io.blobfs.tyr.protocol.Messages;
import io.blobfs.tyr.ring.Member;
import io.blobfs.tyr.ring.Ring;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Member states in a node's membership: files, the wire, the install rules, the barrier. */
class MembershipFailoverTest {
  private static final List<Member> THREE = Member.parseList("h1:1,h2:1,h3:1");

  @TempDir
  Path dir;

  @Test
  void statesSurviveTheRingFileAndTheWire() throws Exception {
    Ring r = new Ring(7, THREE, 16, 2).withState(THREE.get(0), Ring.State.DOWN, 7)
        .withState(THREE.get(2), Ring.State.RECOVERING, 7);
    Path file = dir.resolve("ring.properties");
    Files.writeString(file, Membership.ringFileText(r));
    assertEquals(r, Membership.readRingFile(file));
    ByteBuf b = Messages.encodeRing(r, Unpooled.buffer());
    int withStates = b.readableBytes();
    assertEquals(r, Messages.decodeRing(b));
    Ring plain = new Ring(7, THREE, 16, 2);
    ByteBuf p = Messages.encodeRing(plain, Unpooled.buffer());
    int before = p.readableBytes();
    assertEquals(plain, Messages.decodeRing(p));
    // Two states add a count and two (index, state) pairs; none, nothing at all.
    assertEquals(withStates - 2 - 2 * 3, before);
  }

  /** A member DOWN must be RECOVERING (catching up) before it is UP again. */
  @Test
  void downToUpInOneEpochIsRefused() {
    Ring one = new Ring(1, THREE, 16, 2);
    Membership m = new Membership(THREE.get(1), one);
    Ring down = one.withState(THREE.get(0), Ring.State.DOWN, 2);
    m.install(down);
    assertThatThrownBy(() -> m.install(down.withState(THREE.get(0), Ring.State.UP, 3)))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("RECOVERING");
    m.install(down.withState(THREE.get(0), Ring.State.RECOVERING, 3));
    m.install(m.ring().withState(THREE.get(0), Ring.State.UP, 4));
    assertEquals(Ring.State.UP, m.ring().state(THREE.get(0)));
  }

  /**
   * The barrier a recovering peer waits for: not before the node is at the epoch, and not
   * while a commit let in under an older ring runs.
   */
  @Test
  void settledWaitsForCommitsAdmittedUnderOlderRings() throws Exception {
    Ring one = new Ring(1, THREE, 16, 2);
    Membership m = new Membership(THREE.get(1), one);
    Ring old = m.admit();
    assertEquals(1, old.epoch());
    assertThat(m.settled(2)).isCompletedExceptionally(); // not at epoch 2 yet
    m.install(one.withState(THREE.get(0), Ring.State.RECOVERING, 2));
    CompletableFuture<Ring> settled = m.settled(2);
    Ring current = m.admit(); // one under the new ring does not hold it back
    assertThat(settled).isNotDone();
    m.release(old);
    assertEquals(2, settled.get().epoch());
    m.release(current);
    assertThat(m.settled(2)).isCompleted();
  }
}
