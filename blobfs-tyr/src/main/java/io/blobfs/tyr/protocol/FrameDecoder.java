package io.blobfs.tyr.protocol;

import io.netty.buffer.ByteBuf;
import io.netty.channel.Channel;
import io.netty.channel.ChannelConfig;
import io.netty.channel.ChannelHandlerContext;
import io.netty.handler.codec.ByteToMessageDecoder;
import io.netty.handler.codec.TooLongFrameException;
import java.util.List;

/**
 * Bytes to {@link Frame}s. A frame over {@code maxFrameBytes} raises
 * {@link TooLongFrameException} as soon as its length is read, before any of it is
 * buffered; the handler then closes the connection, since the stream cannot be
 * resynchronised.
 *
 * <p>Why not Netty's LengthFieldBasedFrameDecoder: it gathers a large frame by growing
 * one buffer, copying what it holds at each step (some 40 MiB copied for a 16 MiB
 * frame). Here a large frame is gathered in one of three ways:
 * <ul>
 *   <li>read in place (a server over plain TCP, {@link #readInPlace}, for a frame with at
 *       least {@link #IN_PLACE_MIN_BYTES} still to come while {@link FrameBuffers} has
 *       room): once a frame's length is known, the socket reads the rest of it straight
 *       into one direct buffer of its exact size, so a write's data reaches the log in one
 *       piece and is copied by no one on the way (the kernel's copy out of the socket is
 *       the only one);
 *   <li>contiguous (a server under TLS, whose socket bytes are not the frame's, or any
 *       other frame a server does not read in place): the
 *       buffers the bytes arrived in are kept as a composite, so memory grows only with
 *       the bytes that actually arrived, and copied once into one direct buffer when the
 *       frame is whole;
 *   <li>in place (the client): handed on as the composite, so read data is copied once,
 *       straight into the caller's buffer.
 * </ul>
 * Small frames are slices of what was read in every case. On the in-JVM transport what
 * "was read" is the sender's own buffers, so a server there gathers in place too: a
 * write's data reaches the log straight from the writer's buffer.
 */
public final class FrameDecoder extends ByteToMessageDecoder {
  /** Frame limit before a server has authenticated its peer: a HELLO is tiny. */
  public static final int UNAUTHENTICATED_MAX_FRAME = 64 << 10;
  /** The least of a frame still to come for it to be read in place. */
  static final int IN_PLACE_MIN_BYTES = 256 << 10;

  private final int maxFrameBytes;
  private final boolean inPlace;
  private volatile boolean trusted;
  private io.netty.buffer.CompositeByteBuf partial;
  private int wanted;
  /**
   * Where the buffers of frames read in place come from; null unless the channel reads
   * large frames' bytes straight into {@link #whole}.
   */
  private FrameBuffers frameBuffers;
  /** The frame being read in place; its writer index is where the next byte goes. */
  private ByteBuf whole;
  /** What {@link #readTarget} last handed out: bytes arriving in it are in place already. */
  private ByteBuf target;

  /**
   * @param trusted whether the full limit applies from the start (a client trusts its
   *     server); a server's decoder starts at {@link #UNAUTHENTICATED_MAX_FRAME} until
   *     {@link #trust()}, so an anonymous peer cannot make it reserve large buffers
   */
  public FrameDecoder(int maxFrameBytes, boolean trusted) {
    this(maxFrameBytes, trusted, false);
  }

  /** @param inPlace gather large frames from the read buffers themselves (see above) */
  public FrameDecoder(int maxFrameBytes, boolean trusted, boolean inPlace) {
    this.maxFrameBytes = maxFrameBytes;
    this.trusted = trusted;
    this.inPlace = inPlace;
    // Netty's default (merging) cumulator copies every buffer that is not contiguous into
    // one it allocates, even when nothing is left over to merge with: on the in-JVM
    // transport a frame's payload arrives as the sender's composite (header + the
    // writer's own buffer), so each 8 MiB write was copied into a fresh 12 MiB heap array
    // (a humongous allocation, a G1 collection each) before this decoder even saw it.
    // Composing keeps what arrives as it is; this decoder takes everything it is given
    // (see decode), so the composite never grows past a few bytes of a split header.
    setCumulator(COMPOSITE_CUMULATOR);
  }

  /** The peer has authenticated: frames up to the full limit are accepted from now on. */
  public void trust() {
    trusted = true;
  }

  /** Whether a frame has begun and not yet arrived whole. */
  public boolean midFrame() {
    return partial != null || whole != null;
  }

  /**
   * Makes {@code channel} read the rest of each large frame straight into the frame's own
   * buffer: its reads ask this decoder where to go before taking a buffer of their own.
   * Only for a decoder that sees the socket's bytes as they are (no TLS in front of it),
   * and before the channel's first read. The frames' buffers come from {@code buffers}.
   */
  public void readInPlace(Channel channel, FrameBuffers buffers) {
    ChannelConfig config = channel.config();
    config.setRecvByteBufAllocator(
        new InPlaceReads(config.getRecvByteBufAllocator(), this::readTarget));
    frameBuffers = buffers;
  }

  /**
   * Where the channel's next read should go: the unfilled rest of the frame being read in
   * place, or null (then it takes a buffer of its own). Called on the event loop, between
   * reads, so the decoder has taken every byte of the read before.
   */
  private ByteBuf readTarget() {
    if (whole == null) {
      return null;
    }
    // A view of the rest: the read fills it from its start, that is, from whole's writer
    // index on, and can never run past the frame's end into the next frame's header.
    target = whole.retainedSlice(whole.writerIndex(), whole.writableBytes()).clear();
    return target;
  }

  @Override
  protected void decode(ChannelHandlerContext ctx, ByteBuf in, List<Object> out)
      throws Exception {
    while (true) {
      if (partial == null && whole == null) {
        if (in.readableBytes() < 4) {
          return;
        }
        int length = in.readInt();
        int limit = trusted ? maxFrameBytes : Math.min(maxFrameBytes, UNAUTHENTICATED_MAX_FRAME);
        if (length < 0 || length > limit) {
          in.skipBytes(in.readableBytes());
          throw new TooLongFrameException("frame of " + Integer.toUnsignedLong(length)
              + " bytes is over the " + limit + "-byte limit"
              + (trusted ? "" : " before authentication"));
        }
        if (length < Frame.HEADER_BYTES) {
          in.skipBytes(in.readableBytes());
          throw new MalformedFrameException("frame of " + length
              + " bytes is shorter than its header");
        }
        if (in.readableBytes() >= length) {
          out.add(toFrame(in.readRetainedSlice(length)));
          continue;
        }
        wanted = length;
        // Small frames gain nothing from a read of their own (and Netty's read-size guess
        // shrinks on such exact fills); anonymous peers' frames are all small.
        whole = frameBuffers != null && length - in.readableBytes() >= IN_PLACE_MIN_BYTES
            ? frameBuffers.take(ctx.alloc(), length) : null;
        if (whole == null) {
          partial = ctx.alloc().compositeBuffer(Integer.MAX_VALUE);
        }
      }
      if (whole != null) {
        int n = Math.min(in.readableBytes(), whole.writableBytes());
        if (in == target) {
          // The socket read these bytes into the frame itself: nothing to copy. (It is
          // handed on as it was read: the decoder takes all of every read, so Netty has no
          // leftover to merge it with.)
          in.skipBytes(n);
          whole.writerIndex(whole.writerIndex() + n);
        } else {
          whole.writeBytes(in, n); // what came with the frame's header, in a buffer of its own
        }
        target = null;
        if (whole.isWritable()) {
          return;
        }
        ByteBuf body = whole;
        whole = null;
        out.add(toFrame(body));
        continue;
      }
      int n = Math.min(in.readableBytes(), wanted - partial.writerIndex());
      // Everything read is taken, so the decoder never copies its cumulation either.
      partial.addComponent(true, in.readRetainedSlice(n));
      if (partial.writerIndex() < wanted) {
        return;
      }
      ByteBuf body = partial;
      partial = null;
      if (!inPlace) {
        ByteBuf contiguous = ctx.alloc().directBuffer(wanted, wanted);
        try {
          contiguous.writeBytes(body);
        } finally {
          body.release();
        }
        body = contiguous;
      }
      out.add(toFrame(body));
    }
  }

  private static Frame toFrame(ByteBuf body) {
    int version = body.readUnsignedByte();
    int opcode = body.readUnsignedByte();
    body.skipBytes(2); // flags, none defined yet
    long requestId = body.readLong();
    return new Frame(version, opcode, requestId, body);
  }

  @Override
  protected void handlerRemoved0(ChannelHandlerContext ctx) {
    if (partial != null) {
      partial.release();
      partial = null;
    }
    if (whole != null) {
      whole.release();
      whole = null;
    }
    target = null;
  }
}
