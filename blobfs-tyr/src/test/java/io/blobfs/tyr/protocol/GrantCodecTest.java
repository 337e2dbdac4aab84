package io.blobfs.tyr.protocol;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.blobfs.tyr.api.BlobStat;
import io.blobfs.tyr.api.LocalGrant;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.UnpooledByteBufAllocator;
import java.util.List;
import org.junit.jupiter.api.Test;

/** A grant on the wire, and answers a client must not follow out of the node's directory. */
class GrantCodecTest {
  private static final UnpooledByteBufAllocator ALLOC = UnpooledByteBufAllocator.DEFAULT;

  @Test
  void roundTripKeepsPiecesAndHoles() throws Exception {
    LocalGrant g = new LocalGrant(7, new BlobStat("k", true, 5000, 42, 0), List.of(
        new LocalGrant.Piece("00000000000000000003.tyrlog", 4096, 1000),
        new LocalGrant.Piece(null, 0, 24),
        new LocalGrant.Piece("00000000000000000004.tyrlog", 0, 3976)));
    ByteBuf b = Messages.encodeGrant(g, ALLOC);
    LocalGrant back = Messages.decodeGrant("k", b);
    assertThat(back.id()).isEqualTo(7);
    assertThat(back.stat().version()).isEqualTo(42);
    assertThat(back.stat().size()).isEqualTo(5000);
    assertThat(back.pieces()).isEqualTo(g.pieces());
    assertThat(back.length()).isEqualTo(5000);
  }

  @Test
  void aPieceNamingAPathOutsideTheDirectoryIsRefused() {
    for (String file : List.of("../secret", "sub/file", "..", "/etc/passwd")) {
      LocalGrant g = new LocalGrant(1, new BlobStat("k", true, 10, 1, 0),
          List.of(new LocalGrant.Piece(file, 0, 10)));
      assertThatThrownBy(() -> Messages.decodeGrant("k", Messages.encodeGrant(g, ALLOC)))
          .as(file).isInstanceOf(MalformedFrameException.class);
    }
  }
}
