package io.blobfs.tyr.protocol;

import io.netty.buffer.ByteBuf;
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
 * frame). Here a large frame is gathered as a composite of the very buffers the socket
 * was read into, so memory grows only with the bytes that actually arrived (a peer that
 * announces 80 MiB and sends nothing costs nothing), and then:
 * <ul>
 *   <li>contiguous (the server): copied once into one direct buffer of its exact size, so
 *       write data reaches the log file in one piece;
 *   <li>in place (the client): handed on as the composite, so read data is copied once,
 *       straight into the caller's buffer.
 * </ul>
 * Small frames are slices of what was read either way. On the in-JVM transport what
 * "was read" is the sender's own buffers, so a server there gathers in place too: a
 * write's data reaches the log straight from the writer's buffer.
 */
public final class FrameDecoder extends ByteToMessageDecoder {
  /** Frame limit before a server has authenticated its peer: a HELLO is tiny. */
  public static final int UNAUTHENTICATED_MAX_FRAME = 64 << 10;

  private final int maxFrameBytes;
  private final boolean inPlace;
  private volatile boolean trusted;
  private io.netty.buffer.CompositeByteBuf partial;
  private int wanted;

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
    return partial != null;
  }

  @Override
  protected void decode(ChannelHandlerContext ctx, ByteBuf in, List<Object> out)
      throws Exception {
    while (true) {
      if (partial == null) {
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
        partial = ctx.alloc().compositeBuffer(Integer.MAX_VALUE);
        wanted = length;
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
        ByteBuf whole = ctx.alloc().directBuffer(wanted, wanted);
        try {
          whole.writeBytes(body);
        } finally {
          body.release();
        }
        body = whole;
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
  }
}
