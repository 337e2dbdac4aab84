package io.blobfs.tyr.protocol;

import io.netty.buffer.ByteBuf;
import io.netty.channel.ChannelHandlerContext;
import io.netty.handler.codec.LengthFieldBasedFrameDecoder;

/**
 * Bytes to {@link Frame}s. A frame over {@code maxFrameBytes} raises Netty's
 * {@link io.netty.handler.codec.TooLongFrameException} before any of it is buffered; the
 * handler then closes the connection, since the stream cannot be resynchronised.
 */
public final class FrameDecoder extends LengthFieldBasedFrameDecoder {

  public FrameDecoder(int maxFrameBytes) {
    super(maxFrameBytes, 0, 4, 0, 4, true);
  }

  @Override
  protected Object decode(ChannelHandlerContext ctx, ByteBuf in) throws Exception {
    ByteBuf body = (ByteBuf) super.decode(ctx, in);
    if (body == null) {
      return null;
    }
    if (body.readableBytes() < Frame.HEADER_BYTES) {
      body.release();
      throw new MalformedFrameException("frame of " + body.readableBytes()
          + " bytes is shorter than its header");
    }
    int version = body.readUnsignedByte();
    int opcode = body.readUnsignedByte();
    body.skipBytes(2); // flags, none defined yet
    long requestId = body.readLong();
    return new Frame(version, opcode, requestId, body);
  }
}
