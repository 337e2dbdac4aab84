package io.blobfs.tyr.protocol;

import io.netty.buffer.ByteBuf;
import io.netty.channel.ChannelHandler;
import io.netty.channel.ChannelHandlerContext;
import io.netty.handler.codec.MessageToMessageEncoder;
import java.util.List;

/** {@link Frame}s to bytes: a small header buffer, then the payload itself, never copied. */
@ChannelHandler.Sharable
public final class FrameEncoder extends MessageToMessageEncoder<Frame> {
  public static final FrameEncoder INSTANCE = new FrameEncoder();

  @Override
  protected void encode(ChannelHandlerContext ctx, Frame frame, List<Object> out) {
    ByteBuf header = ctx.alloc().buffer(4 + Frame.HEADER_BYTES);
    header.writeInt(Frame.HEADER_BYTES + frame.payload().readableBytes())
        .writeByte(frame.version()).writeByte(frame.opcode()).writeShort(0)
        .writeLong(frame.requestId());
    out.add(header);
    out.add(frame.payload().retain());
  }
}
