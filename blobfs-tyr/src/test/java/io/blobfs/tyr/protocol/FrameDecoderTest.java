package io.blobfs.tyr.protocol;

import static org.assertj.core.api.Assertions.assertThat;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.CompositeByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.embedded.EmbeddedChannel;
import java.nio.ByteBuffer;
import org.junit.jupiter.api.Test;

/**
 * How a large frame's bytes get from what arrives to the decoded {@link Frame}: copied
 * once into one buffer, or kept in place. Copies are seen by changing the sender's
 * buffer after decoding: a frame in place sees the change, a copy does not.
 */
public class FrameDecoderTest {
  private static final int DATA = 1 << 20;

  /**
   * As the in-JVM transport delivers a frame: the encoder's small header buffer, then the
   * payload as the sender composed it (a buffer of fields, then the writer's own data).
   */
  public static ByteBuf[] framedAsSent(ByteBuffer data) {
    ByteBuf fields = Unpooled.buffer(8).writeLong(42);
    CompositeByteBuf payload = Unpooled.compositeBuffer()
        .addComponents(true, fields, Unpooled.wrappedBuffer(data.duplicate()));
    ByteBuf header = Unpooled.buffer(4 + Frame.HEADER_BYTES)
        .writeInt(Frame.HEADER_BYTES + payload.readableBytes())
        .writeByte(Frame.PROTOCOL_VERSION).writeByte(7).writeShort(0).writeLong(99);
    return new ByteBuf[] {header, payload};
  }

  public static ByteBuffer directData() {
    ByteBuffer data = ByteBuffer.allocateDirect(DATA);
    for (int i = 0; i < DATA; i++) {
      data.put(i, (byte) i);
    }
    return data;
  }

  /** Decodes what {@link #framedAsSent} makes, then changes the sender's data. */
  static Frame decodeThenChangeSender(FrameDecoder decoder, ByteBuffer data) {
    EmbeddedChannel ch = new EmbeddedChannel(decoder);
    for (ByteBuf b : framedAsSent(data)) {
      ch.writeInbound(b);
    }
    Frame frame = ch.readInbound();
    assertThat(frame).isNotNull();
    assertThat(frame.opcode()).isEqualTo(7);
    assertThat(frame.requestId()).isEqualTo(99);
    data.put(1000, (byte) 0x55); // was (byte) 1000 = -24
    return frame;
  }

  @Test
  void aCompositePayloadIsKeptInPlaceNotMergedIntoACopy() {
    ByteBuffer data = directData();
    Frame frame = decodeThenChangeSender(new FrameDecoder(DATA * 2, true, true), data);
    try {
      ByteBuf p = frame.payload();
      assertThat(p.readableBytes()).isEqualTo(8 + DATA);
      assertThat(p.getLong(p.readerIndex())).isEqualTo(42);
      assertThat(p.getByte(p.readerIndex() + 8 + 999)).isEqualTo((byte) 999);
      assertThat(p.getByte(p.readerIndex() + 8 + 1000)).isEqualTo((byte) 0x55);
      // the data is one piece of the payload, so the log can write a view of it
      assertThat(p.nioBuffers(p.readerIndex() + 8, DATA)).hasSize(1);
    } finally {
      frame.release();
    }
  }

  @Test
  void gatheringIntoOneBufferCopiesOnceAndKeepsEveryByte() {
    ByteBuffer data = directData();
    Frame frame = decodeThenChangeSender(new FrameDecoder(DATA * 2, true, false), data);
    try {
      ByteBuf p = frame.payload();
      assertThat(p.nioBufferCount()).isEqualTo(1);
      assertThat(p.isDirect()).isTrue();
      assertThat(p.getLong(p.readerIndex())).isEqualTo(42);
      for (int i = 0; i < DATA; i++) {
        assertThat(p.getByte(p.readerIndex() + 8 + i)).isEqualTo((byte) i);
      }
    } finally {
      frame.release();
    }
  }

  @Test
  void framesSplitAnywhereOverSocketReadsDecodeWhole() {
    // Over TCP: contiguous reads, cut through the length field and the header.
    ByteBuffer data = directData();
    ByteBuf[] sent = framedAsSent(data);
    ByteBuf all = Unpooled.wrappedBuffer(sent[0], sent[1]);
    byte[] bytes = new byte[all.readableBytes() * 2];
    all.getBytes(0, bytes, 0, all.readableBytes());
    all.getBytes(0, bytes, all.readableBytes(), all.readableBytes()); // two frames back to back
    EmbeddedChannel ch = new EmbeddedChannel(new FrameDecoder(DATA * 2, true, false));
    int[] cuts = {2, 9, 70_000, all.readableBytes() + 3, all.readableBytes() + 20, bytes.length};
    int from = 0;
    for (int cut : cuts) {
      ch.writeInbound(Unpooled.wrappedBuffer(bytes, from, cut - from));
      from = cut;
    }
    for (int f = 0; f < 2; f++) {
      Frame frame = ch.readInbound();
      try {
        ByteBuf p = frame.payload();
        assertThat(p.readableBytes()).isEqualTo(8 + DATA);
        assertThat(p.getByte(p.readerIndex() + 8 + DATA - 1)).isEqualTo((byte) (DATA - 1));
      } finally {
        frame.release();
      }
    }
    assertThat((Object) ch.readInbound()).isNull();
  }
}
