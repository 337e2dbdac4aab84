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
 * frame). Here a large frame gets one direct buffer of its exact size, filled once, so
 * its data can go to the log file or the caller without another copy; small frames are
 * slices of what was read.
 */
public final class FrameDecoder extends ByteToMessageDecoder {
  private final int maxFrameBytes;
  private ByteBuf partial;
  private int wanted;

  public FrameDecoder(int maxFrameBytes) {
    this.maxFrameBytes = maxFrameBytes;
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
        if (length < 0 || length > maxFrameBytes) {
          in.skipBytes(in.readableBytes());
          throw new TooLongFrameException("frame of " + Integer.toUnsignedLong(length)
              + " bytes is over the " + maxFrameBytes + "-byte limit");
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
        partial = ctx.alloc().directBuffer(length, length);
        wanted = length;
      }
      partial.writeBytes(in, Math.min(in.readableBytes(), wanted - partial.writerIndex()));
      if (partial.writerIndex() < wanted) {
        return;
      }
      ByteBuf body = partial;
      partial = null;
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
