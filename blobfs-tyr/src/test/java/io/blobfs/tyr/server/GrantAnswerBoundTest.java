package io.blobfs.tyr.server;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assertions.assertThrows;

import io.blobfs.tyr.api.ErrorCode;
import io.blobfs.tyr.api.LocalGrant;
import io.blobfs.tyr.api.TxOp;
import io.blobfs.tyr.api.TxRequest;
import io.blobfs.tyr.api.TyrException;
import io.blobfs.tyr.engine.EngineConfig;
import io.blobfs.tyr.engine.TyrEngine;
import io.blobfs.tyr.protocol.Messages;
import io.blobfs.tyr.protocol.Request;
import io.netty.buffer.ByteBufAllocator;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A local-read grant whose answer would pass the node's bound is refused TOO_LARGE and
 * pins nothing: the answer must fit every client's frame (an answer over a client's frame
 * closes its connection and fails every call on it), while the range may be a whole
 * stripe, far over that frame. Clients read a refused range over the connection
 * ({@code LocalReadsTest.aLocalReadThatFailsFallsBackToTheConnection}).
 */
class GrantAnswerBoundTest {
  @TempDir
  Path dir;

  @Test
  void aGrantWhoseAnswerPassesTheBoundIsRefusedAndPinsNothing() throws Exception {
    try (TyrEngine engine = TyrEngine.open(EngineConfig.defaults(dir))) {
      // Three writes with holes between: five pieces (data, hole, data, hole, data).
      for (int i = 0; i < 3; i++) {
        engine.commit(TxRequest.of(new TxOp.Write("k", i * 100L,
            ByteBuffer.wrap(new byte[] {(byte) (i + 1), 2, 3, 4})))).get(30, TimeUnit.SECONDS);
      }
      LocalGrant probe = engine.grant("k", 0, 204, TyrService.LOCAL_READ_LEASE);
      long answer = Messages.grantAnswerBytes(probe);
      assertThat(probe.pieces()).hasSize(5);
      engine.release(probe.id());
      assertThat(Messages.encodeGrant(probe, ByteBufAllocator.DEFAULT).readableBytes())
          .as("the size the bound is checked on is the size sent").isEqualTo((int) answer);

      TyrService tight = new TyrService(engine, 1 << 20, (int) answer - 1, null, null, null);
      ConnectionGrants grants = tight.grantsFor();
      ExecutionException e = assertThrows(ExecutionException.class, () -> tight.handle(
          new Request.Grant("k", 0, 204), ByteBufAllocator.DEFAULT, grants)
          .get(30, TimeUnit.SECONDS));
      assertThat(e.getCause()).isInstanceOf(TyrException.class);
      assertThat(((TyrException) e.getCause()).code()).isEqualTo(ErrorCode.TOO_LARGE);
      assertThat(engine.pinnedGrants()).as("the refused grant's pin").isZero();

      TyrService fits = new TyrService(engine, 1 << 20, (int) answer, null, null, null);
      Object granted = fits.handle(new Request.Grant("k", 0, 204), ByteBufAllocator.DEFAULT,
          fits.grantsFor()).get(30, TimeUnit.SECONDS);
      assertThat(((LocalGrant) granted).pieces()).hasSize(5);
      assertThat(engine.pinnedGrants()).isEqualTo(1);
    }
  }
}
