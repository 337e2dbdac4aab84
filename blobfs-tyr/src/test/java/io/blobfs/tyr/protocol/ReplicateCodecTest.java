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

  private static final Request.Prepare SHARE = new Request.Prepare(
      "2b1e2d3c-4b5a-4978-8695-a4b3c2d1e0f9", "n1", List.of("n1"), new TxRequest(List.of(),
          List.of(new TxOp.Append("k", ByteBuffer.wrap(new byte[] {9})))));

  /** A share, a write that is a repair's first piece: every section main writes. */
  private static Request.Replicate mainsFullFrame() {
    return new Request.Replicate(3, "n1", 77, 5, List.of(new TxRequest(List.of(), List.of()),
        new TxRequest(List.of(), List.of(new TxOp.Write("k", 2, ByteBuffer.wrap(
            new byte[] {1, 2}))))), Map.of(0, SHARE), true,
        Map.of(1, Request.Replicate.PIECE_FIRST));
  }

  private static Request.Replicate mainsPlainFrame() {
    return new Request.Replicate(3, "n1", 77, 5, List.of(new TxRequest(List.of(),
        List.of(new TxOp.Put("k", ByteBuffer.wrap(new byte[] {7}), false)))));
  }

  /** Written by main's encoder (a2958de), before the rebases' section existed. */
  private static final String MAIN_FULL = "000000000000000300026e31000000000000004d000000000000000500000002"
        + "000000000000000000000000000000010300016b000000000000000200000002"
        + "0102000000010000000000000043002432623165326433632d346235612d3439"
        + "37382d383639352d61346233633264316530663900026e310000000100026e31"
        + "00000000000000010400016b0000000109000000010000000101";
  private static final String MAIN_PLAIN = "000000000000000300026e31000000000000004d000000000000000500000001"
        + "00000000000000010200016b00000000010700000000";

  /**
   * Issue 13, bug 3: a frame without rebases is byte for byte what main's encoder wrote
   * (golden bytes, pinned from main: an older backup decodes it), and main's bytes decode
   * here with no rebases.
   */
  @Test
  void aFrameWithoutRebasesIsMainsFrameByteForByte() throws Exception {
    assertThat(io.netty.buffer.ByteBufUtil.hexDump(Messages.encode(mainsFullFrame(), ALLOC)))
        .isEqualTo(MAIN_FULL);
    assertThat(io.netty.buffer.ByteBufUtil.hexDump(Messages.encode(mainsPlainFrame(),
        ALLOC))).isEqualTo(MAIN_PLAIN);
    Request.Replicate back = decode(io.netty.buffer.Unpooled.wrappedBuffer(
        io.netty.buffer.ByteBufUtil.decodeHexDump(MAIN_FULL)));
    assertThat(back.rebases()).isEmpty();
    assertThat(back.prepares().get(0)).isEqualTo(SHARE);
    assertThat(back.pieces()).isEqualTo(Map.of(1, Request.Replicate.PIECE_FIRST));
    assertThat(decode(io.netty.buffer.Unpooled.wrappedBuffer(io.netty.buffer.ByteBufUtil
        .decodeHexDump(MAIN_PLAIN))).rebases()).isEmpty();
  }

  /**
   * The rebases' section, last (after the prepares' and the pieces' counts, 0 here), round
   * trips; an index past the batch is a malformed frame.
   */
  @Test
  void rebasesRoundTripAfterThePiecesCount() throws Exception {
    Map<Integer, Map<String, List<String>>> rebases = Map.of(0, Map.of(
        "0f1e2d3c-4b5a-4978-8695-a4b3c2d1e0f9", List.of("k", "j")));
    Request.Replicate r = new Request.Replicate(3, "n1", 77, 5, mainsPlainFrame().txs(),
        Map.of(), true, Map.of(), rebases);
    ByteBuf bytes = Messages.encode(r, ALLOC);
    assertThat(io.netty.buffer.ByteBufUtil.hexDump(bytes)).as("main's frame, then a pieces "
        + "count of 0, then the section").startsWith(MAIN_PLAIN + "00000000");
    Request.Replicate back = decode(bytes);
    assertThat(back.rebases()).isEqualTo(rebases);
    assertThat(back.readsRefusals()).isTrue();
    assertThat(back.pieces()).isEmpty();
    Request.Replicate bad = new Request.Replicate(3, "n1", 77, 5, mainsPlainFrame().txs(),
        Map.of(), true, Map.of(), Map.of(1, rebases.get(0)));
    org.assertj.core.api.Assertions.assertThatThrownBy(() -> decode(Messages.encode(bad,
        ALLOC))).isInstanceOf(MalformedFrameException.class);
  }
}
