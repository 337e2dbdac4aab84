package io.blobfs.tyr.protocol;

import static org.assertj.core.api.Assertions.assertThat;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.CompositeByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.RecvByteBufAllocator;
import io.netty.channel.embedded.EmbeddedChannel;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * How a large frame's bytes get from what arrives to the decoded {@link Frame}: copied
 * once into one buffer, kept in place, or read by the socket straight into the frame's
 * buffer. Copies are seen by changing the sender's buffer after decoding: a frame in place
 * sees the change, a copy does not; reads in place by where each read's buffer lies.
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

  /** Data bytes of the large frame of {@link #threeFrames}. */
  private static final int BIG = 400_000; // above IN_PLACE_MIN_BYTES: read in place

  /** Three frames back to back: a small one, one of {@code BIG} data bytes, a small one. */
  private static byte[] threeFrames() {
    ByteBuf[] big = framedAsSent(directData().limit(BIG));
    ByteBuf stream = Unpooled.buffer();
    stream.writeInt(Frame.HEADER_BYTES + 3).writeByte(Frame.PROTOCOL_VERSION).writeByte(5)
        .writeShort(0).writeLong(1).writeBytes(new byte[] {1, 2, 3});
    stream.writeBytes(big[0]).writeBytes(big[1]);
    stream.writeInt(Frame.HEADER_BYTES).writeByte(Frame.PROTOCOL_VERSION).writeByte(6)
        .writeShort(0).writeLong(3);
    byte[] bytes = new byte[stream.readableBytes()];
    stream.readBytes(bytes);
    return bytes;
  }

  /** Where the large frame of {@link #threeFrames} starts (its length field). */
  private static final int BIG_START = 4 + Frame.HEADER_BYTES + 3;

  /**
   * Netty's read loop over a socket that has {@code bytes} up to each of {@code arrivals}
   * (ascending offsets): each read takes a buffer from the channel's allocator and fills
   * what it can of it from what has arrived. Returns, for each read, its stream offset and
   * its buffer's memory address.
   */
  private static List<long[]> readLoop(EmbeddedChannel ch, byte[] bytes, int[] arrivals) {
    RecvByteBufAllocator.Handle reads = ch.config().getRecvByteBufAllocator().newHandle();
    reads.reset(ch.config());
    List<long[]> made = new ArrayList<>();
    int from = 0;
    for (int arrived : arrivals) {
      while (from < arrived) {
        ByteBuf b = reads.allocate(ch.alloc());
        int n = Math.min(b.writableBytes(), arrived - from);
        made.add(new long[] {from, b.memoryAddress() + b.writerIndex()});
        b.writeBytes(bytes, from, n);
        from += n;
        ch.writeInbound(b);
      }
    }
    return made;
  }

  @Test
  void readsInPlaceFillTheFrameItselfWhereverTheStreamIsCut() {
    byte[] bytes = threeFrames();
    int bigEnd = BIG_START + 4 + Frame.HEADER_BYTES + 8 + BIG;
    List<int[]> cuts = new ArrayList<>();
    // every cut through the small frames, the large frame's length field and header
    for (int c = 1; c < BIG_START + 40; c++) {
      cuts.add(new int[] {c, bytes.length});
    }
    // around the large frame's end and the last frame
    for (int c = bigEnd - 20; c < bytes.length; c++) {
      cuts.add(new int[] {BIG_START + 1000, c, bytes.length});
    }
    cuts.add(new int[] {bytes.length}); // all at once
    List<Integer> steady = new ArrayList<>(); // a steady trickle of 7,777-byte arrivals
    for (int c = 7_777; c < bytes.length; c += 7_777) {
      steady.add(c);
    }
    steady.add(bytes.length);
    cuts.add(steady.stream().mapToInt(Integer::intValue).toArray());
    byte[] expected = new byte[BIG];
    for (int i = 0; i < BIG; i++) {
      expected[i] = (byte) i;
    }

    for (int[] arrivals : cuts) {
      EmbeddedChannel ch = readingInPlace(DATA * 2, new FrameBuffers(0, 64 << 20));
      FrameDecoder decoder = ch.pipeline().get(FrameDecoder.class);
      List<long[]> reads = readLoop(ch, bytes, arrivals);
      assertThat(decoder.midFrame()).isFalse();
      Frame small = ch.readInbound();
      Frame big = ch.readInbound();
      Frame last = ch.readInbound();
      try {
        assertThat(small.requestId()).isEqualTo(1);
        assertThat(small.payload().readableBytes()).isEqualTo(3);
        assertThat(small.payload().getByte(small.payload().readerIndex() + 2)).isEqualTo((byte) 3);
        assertThat(last.requestId()).isEqualTo(3);
        assertThat(last.payload().readableBytes()).isZero();
        assertThat((Object) ch.readInbound()).isNull();

        ByteBuf p = big.payload();
        assertThat(big.requestId()).isEqualTo(99);
        assertThat(p.readableBytes()).isEqualTo(8 + BIG);
        assertThat(p.nioBufferCount()).isEqualTo(1);
        assertThat(p.getLong(p.readerIndex())).isEqualTo(42);
        byte[] got = new byte[BIG];
        p.getBytes(p.readerIndex() + 8, got);
        assertThat(got).isEqualTo(expected);
        // Every read after the one that brought the large frame's length went straight
        // into the frame's buffer, at the frame's offset, never past the frame's end.
        long base = p.memoryAddress(); // the frame's bytes after its length field
        int firstRead = -1;
        for (int i = 0; i < reads.size(); i++) {
          long at = reads.get(i)[0];
          if (at <= BIG_START + 3) {
            firstRead = i;
          }
        }
        int inPlace = 0;
        for (int i = firstRead + 1; i < reads.size(); i++) {
          long at = reads.get(i)[0];
          if (at >= bigEnd) {
            break;
          }
          assertThat(reads.get(i)[1]).as("read at %d", at).isEqualTo(base + at - (BIG_START + 4));
          inPlace++;
        }
        assertThat(inPlace).isGreaterThan(0);
      } finally {
        small.release();
        big.release();
        last.release();
      }
      assertThat(ch.finish()).isFalse();
    }
  }

  @Test
  void aConnectionClosedMidFrameFreesTheFrameBeingReadInPlace() {
    byte[] bytes = threeFrames();
    EmbeddedChannel ch = readingInPlace(DATA * 2, new FrameBuffers(0, 64 << 20));
    FrameDecoder decoder = ch.pipeline().get(FrameDecoder.class);
    readLoop(ch, bytes, new int[] {BIG_START + 100, BIG_START + 90_000});
    assertThat(decoder.midFrame()).isTrue();
    Frame small = ch.readInbound();
    small.release();
    RecvByteBufAllocator.Handle reads = ch.config().getRecvByteBufAllocator().newHandle();
    ByteBuf rest = reads.allocate(ch.alloc()); // a view of the frame's buffer
    assertThat(rest.writableBytes()).isEqualTo(8 + BIG + Frame.HEADER_BYTES - 90_000 + 4);
    ByteBuf frameBuffer = rest.unwrap();
    rest.release();
    assertThat(frameBuffer.refCnt()).isEqualTo(1);
    ch.close();
    assertThat(decoder.midFrame()).isFalse();
    assertThat(frameBuffer.refCnt()).isZero();
  }

  @Test
  void aFrameReadIntoAKeptBufferHasOnlyItsOwnBytes() {
    FrameBuffers buffers = new FrameBuffers(64 << 20, 64 << 20);
    EmbeddedChannel ch = readingInPlace(DATA * 2, buffers);
    long firstAddress = 0;
    for (int round = 0; round < 3; round++) {
      // the same frame size each time, other bytes: round r's data byte i is i + r
      ByteBuffer data = ByteBuffer.allocateDirect(BIG);
      for (int i = 0; i < BIG; i++) {
        data.put(i, (byte) (i + round));
      }
      ByteBuf[] sent = framedAsSent(data);
      ByteBuf all = Unpooled.wrappedBuffer(sent[0], sent[1]);
      byte[] bytes = new byte[all.readableBytes()];
      all.readBytes(bytes);
      all.release();
      readLoop(ch, bytes, new int[] {100, 50_000, bytes.length - 1, bytes.length});
      Frame frame = ch.readInbound();
      ByteBuf p = frame.payload();
      if (round == 0) {
        firstAddress = p.memoryAddress();
      } else {
        assertThat(p.memoryAddress()).isEqualTo(firstAddress); // the kept buffer, again
      }
      for (int i = 0; i < BIG; i++) {
        assertThat(p.getByte(p.readerIndex() + 8 + i)).isEqualTo((byte) (i + round));
      }
      frame.release(); // as a worker does once the log has it: kept for the next frame
    }
    assertThat(buffers.keptBytes()).isGreaterThan(0);
    assertThat(ch.finish()).isFalse();
  }

  /**
   * A review found a peer announcing large frames and sending nothing made the server hold
   * each frame whole (13 connections took 1 GiB of direct memory): past the bound on
   * buffers out, a frame is gathered as it arrives, and a header alone costs little.
   */
  @Test
  void aHeaderAloneTakesNoFrameBufferPastTheBound() {
    FrameBuffers buffers = new FrameBuffers(0, 1 << 20);
    EmbeddedChannel ch = readingInPlace(64 << 20, buffers);
    FrameDecoder decoder = ch.pipeline().get(FrameDecoder.class);
    long before = jdkDirect();
    RecvByteBufAllocator.Handle reads = ch.config().getRecvByteBufAllocator().newHandle();
    reads.reset(ch.config());
    ByteBuf first = reads.allocate(ch.alloc());
    first.writeInt(64 << 20).writeByte(Frame.PROTOCOL_VERSION).writeByte(Opcode.COMMIT)
        .writeShort(0).writeLong(1);
    ch.writeInbound(first);
    assertThat(decoder.midFrame()).isTrue();
    assertThat(buffers.takenBytes()).isZero();
    assertThat(jdkDirect() - before).isLessThan(1 << 20);
    ByteBuf next = reads.allocate(ch.alloc()); // Netty's own read buffer, not the frame's
    assertThat(next.capacity()).isLessThan(1 << 20);
    next.release();
    ch.finishAndReleaseAll();
  }

  @Test
  void aFrameWhoseRestIsSmallIsGatheredNotReadInPlace() {
    FrameBuffers buffers = new FrameBuffers(0, 64 << 20);
    EmbeddedChannel ch = readingInPlace(64 << 20, buffers);
    FrameDecoder decoder = ch.pipeline().get(FrameDecoder.class);
    ch.writeInbound(Unpooled.buffer().writeInt(Frame.HEADER_BYTES + 100_000)
        .writeByte(Frame.PROTOCOL_VERSION).writeByte(Opcode.COMMIT).writeShort(0).writeLong(1));
    assertThat(decoder.midFrame()).isTrue();
    assertThat(buffers.takenBytes()).isZero();
    ch.writeInbound(Unpooled.wrappedBuffer(new byte[100_000]));
    Frame f = ch.readInbound();
    assertThat(f.payload().readableBytes()).isEqualTo(100_000);
    f.release();
    assertThat(ch.finish()).isFalse();
  }

  /**
   * A channel whose decoder, a server's (frames up to {@code maxFrame}), reads large
   * frames in place into buffers from {@code buffers}.
   */
  private static EmbeddedChannel readingInPlace(int maxFrame, FrameBuffers buffers) {
    FrameDecoder decoder = new FrameDecoder(maxFrame, true, false);
    EmbeddedChannel ch = new EmbeddedChannel(decoder);
    decoder.readInPlace(ch, buffers);
    return ch;
  }

  private static long jdkDirect() {
    return java.lang.management.ManagementFactory
        .getPlatformMXBeans(java.lang.management.BufferPoolMXBean.class).stream()
        .filter(b -> b.getName().equals("direct")).mapToLong(
            java.lang.management.BufferPoolMXBean::getMemoryUsed).sum();
  }
}
