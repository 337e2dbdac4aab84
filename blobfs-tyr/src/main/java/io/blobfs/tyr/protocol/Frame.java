package io.blobfs.tyr.protocol;

import io.netty.buffer.ByteBuf;
import io.netty.util.AbstractReferenceCounted;
import io.netty.util.ReferenceCounted;

/**
 * One protocol frame; the payload's meaning is {@link Messages}' business.
 *
 * <pre>
 * frame = length u32 (bytes after this field) | version u8 | opcode u8 | flags u16
 *         | requestId u64 | payload
 * </pre>
 *
 * Responses carry the request id of the request they answer, so one connection carries
 * many requests at once, answered in any order. The frame owns its payload.
 */
public final class Frame extends AbstractReferenceCounted {
  /** Bytes of the header after the length field. */
  public static final int HEADER_BYTES = 1 + 1 + 2 + 8;
  public static final int PROTOCOL_VERSION = 1;

  private final int version;
  private final int opcode;
  private final long requestId;
  private final ByteBuf payload;

  public Frame(int version, int opcode, long requestId, ByteBuf payload) {
    this.version = version;
    this.opcode = opcode;
    this.requestId = requestId;
    this.payload = payload;
  }

  public Frame(int opcode, long requestId, ByteBuf payload) {
    this(PROTOCOL_VERSION, opcode, requestId, payload);
  }

  public int version() {
    return version;
  }

  public int opcode() {
    return opcode;
  }

  public long requestId() {
    return requestId;
  }

  public ByteBuf payload() {
    return payload;
  }

  @Override
  protected void deallocate() {
    payload.release();
  }

  @Override
  public ReferenceCounted touch(Object hint) {
    payload.touch(hint);
    return this;
  }

  @Override
  public String toString() {
    return "Frame[v" + version + " op " + opcode + " id " + requestId + ", "
        + payload.readableBytes() + " bytes]";
  }
}
