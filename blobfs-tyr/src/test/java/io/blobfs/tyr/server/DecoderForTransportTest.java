package io.blobfs.tyr.server;

import static org.assertj.core.api.Assertions.assertThat;

import io.blobfs.tyr.engine.EngineConfig;
import io.blobfs.tyr.protocol.Frame;
import io.blobfs.tyr.protocol.FrameDecoder;
import io.blobfs.tyr.protocol.FrameDecoderTest;
import io.netty.buffer.ByteBuf;
import io.netty.channel.embedded.EmbeddedChannel;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * An embedded node's server takes a write's data in place (the log writes from the
 * writer's buffer); a TCP server gathers it into one buffer of its own.
 */
class DecoderForTransportTest {
  @TempDir Path dir;

  @Test
  void inTheJvmTheFrameIsTheWritersBuffer() {
    ServerConfig config = ServerConfig.inJvm(EngineConfig.defaults(dir));
    assertThat(byte1000AfterTheSenderChangedIt(TyrServer.decoderFor(config)))
        .isEqualTo((byte) 0x55);
  }

  @Test
  void overTcpTheFrameIsACopy() {
    ServerConfig config = ServerConfig.local(EngineConfig.defaults(dir));
    assertThat(byte1000AfterTheSenderChangedIt(TyrServer.decoderFor(config)))
        .isEqualTo((byte) 1000);
  }

  /** Decodes an authenticated peer's frame as sent in the JVM; byte 1000 of its data after. */
  private static byte byte1000AfterTheSenderChangedIt(FrameDecoder decoder) {
    decoder.trust();
    ByteBuffer data = FrameDecoderTest.directData();
    EmbeddedChannel ch = new EmbeddedChannel(decoder);
    for (ByteBuf b : FrameDecoderTest.framedAsSent(data)) {
      ch.writeInbound(b);
    }
    Frame frame = ch.readInbound();
    data.put(1000, (byte) 0x55);
    try {
      return frame.payload().getByte(frame.payload().readerIndex() + 8 + 1000);
    } finally {
      frame.release();
    }
  }
}
