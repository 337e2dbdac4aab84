package io.blobfs.tyr.protocol;

import static org.assertj.core.api.Assertions.assertThat;

import io.blobfs.tyr.api.TxOp;
import io.blobfs.tyr.api.TxRequest;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.UnpooledByteBufAllocator;
import java.nio.ByteBuffer;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * A replication batch's declaration that its primary reads the answer's list of commits
 * refused as fenced (issue 13's review, M2): the prepares count written even when it is 0.
 * A frame without it (a primary from before session 13) decodes as not reading the list,
 * and the new frame is one an older backup decodes (a count of 0: no prepares).
 */
class ReplicateCodecTest {
  private static final UnpooledByteBufAllocator ALLOC = UnpooledByteBufAllocator.DEFAULT;

  private static Request.Replicate batch(boolean readsRefusals) {
    return new Request.Replicate(3, "n1", 77, 5, List.of(new TxRequest(List.of(),
        List.of(new TxOp.Write("k", 2, ByteBuffer.wrap(new byte[] {1, 2}))))), Map.of(),
        readsRefusals);
  }

  private static Request.Replicate decode(ByteBuf b) throws MalformedFrameException {
    return (Request.Replicate) Messages.decodeRequest(Opcode.REPLICATE, b);
  }

  @Test
  void thisVersionsBatchSaysItReadsRefusalsAndAnOlderOneDoesNot() throws Exception {
    ByteBuf now = Messages.encode(batch(true), ALLOC);
    ByteBuf before = Messages.encode(batch(false), ALLOC); // as main's encoder wrote it
    assertThat(now.readableBytes()).isEqualTo(before.readableBytes() + 4);
    assertThat(now.getInt(now.writerIndex() - 4)).as("a prepares count of 0, which an "
        + "older backup reads as no prepares").isZero();
    Request.Replicate a = decode(now);
    assertThat(a.readsRefusals()).isTrue();
    assertThat(a.txs()).hasSize(1);
    assertThat(a.firstSeq()).isEqualTo(5);
    assertThat(decode(before).readsRefusals()).isFalse();
    assertThat(new Request.Replicate(3, "n1", 77, 5, List.of()).readsRefusals())
        .as("made by this version").isTrue();
  }

  @Test
  void aBatchWithAShareCannotSayItAndIsTakenAsNotReading() throws Exception {
    Request.Prepare share = new Request.Prepare("2b1e2d3c-4b5a-4978-8695-a4b3c2d1e0f9", "n1",
        List.of("n1"), new TxRequest(List.of(), List.of(new TxOp.Append("k",
            ByteBuffer.wrap(new byte[] {9})))));
    Request.Replicate r = new Request.Replicate(3, "n1", 77, 5,
        List.of(new TxRequest(List.of(), List.of())), Map.of(0, share));
    Request.Replicate back = decode(Messages.encode(r, ALLOC));
    assertThat(back.prepares()).containsOnlyKeys(0);
    assertThat(back.readsRefusals()).isFalse();
  }
}
