package io.blobfs.tyr.engine;

import static io.blobfs.tyr.engine.TyrEngineTest.commit;
import static io.blobfs.tyr.engine.TyrEngineTest.read;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;

import io.blobfs.tyr.api.ErrorCode;
import io.blobfs.tyr.api.LocalGrant;
import io.blobfs.tyr.api.TxOp;
import io.blobfs.tyr.api.TyrException;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.util.Arrays;
import java.util.Random;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Grants for local readers: their pieces, and the pins that keep compaction off them. */
class LocalGrantTest {
  private static final Duration LEASE = Duration.ofMinutes(1);

  @TempDir
  Path dir;

  private TyrEngine open() throws IOException {
    // 4 KiB chunks and 64 KiB segments: blobs span chunks, and overwrites roll segments.
    return TyrEngine.open(new EngineConfig(dir, 4096, 64 << 10, SyncPolicy.NONE,
        Duration.ofMillis(20), 256, 1L << 30, 8, Duration.ZERO, 0.5));
  }

  private static byte[] random(int n, long seed) {
    byte[] b = new byte[n];
    new Random(seed).nextBytes(b);
    return b;
  }

  /** What a local reader does with a grant: the pieces, read from the files. */
  private byte[] readGrant(LocalGrant g) throws IOException {
    ByteBuffer out = ByteBuffer.allocate((int) g.length());
    for (LocalGrant.Piece p : g.pieces()) {
      if (p.isHole()) {
        out.position(out.position() + p.length());
        continue;
      }
      try (FileChannel ch = FileChannel.open(dir.resolve(p.file()), StandardOpenOption.READ)) {
        ByteBuffer part = out.slice(out.position(), p.length());
        while (part.hasRemaining()) {
          assertThat(ch.read(part, p.position() + part.position())).isPositive();
        }
      }
      out.position(out.position() + p.length());
    }
    return out.array();
  }

  @Test
  void piecesHoldTheVersionsBytesWithHolesAndPartialWrites() throws IOException {
    try (TyrEngine e = open()) {
      byte[] base = random(20_000, 1);
      commit(e, new TxOp.Put("k", ByteBuffer.wrap(base), false));
      commit(e, new TxOp.Write("k", 5000, ByteBuffer.wrap(random(3000, 2))));
      commit(e, new TxOp.Truncate("k", 40_000)); // a hole of zeros past the old end
      byte[] expect = read(e, "k");
      LocalGrant whole = e.grant("k", 0, 50_000, LEASE);
      assertThat(whole.stat().version()).isEqualTo(e.stat("k").version());
      assertThat(whole.length()).isEqualTo(40_000); // cut at the blob's size
      assertArrayEquals(expect, readGrant(whole));
      assertThat(whole.pieces().get(whole.pieces().size() - 1).isHole()).isTrue();

      LocalGrant part = e.grant("k", 4000, 2000, LEASE);
      assertArrayEquals(Arrays.copyOfRange(expect, 4000, 6000), readGrant(part));
      // A write that spans chunks is contiguous in its segment: one piece, not one a chunk.
      commit(e, new TxOp.Put("big", ByteBuffer.wrap(random(32_768, 3)), false));
      assertThat(e.grant("big", 0, 32_768, LEASE).pieces()).hasSize(1);

      assertThatThrownBy(() -> e.grant("absent", 0, 10, LEASE))
          .isInstanceOfSatisfying(TyrException.class,
              t -> assertThat(t.code()).isEqualTo(ErrorCode.NOT_FOUND));
    }
  }

  @Test
  void compactionKeepsAPinnedSegmentUntilItsGrantIsReleased() throws IOException {
    try (TyrEngine e = open()) {
      byte[] v1 = random(40_000, 4);
      commit(e, new TxOp.Put("k", ByteBuffer.wrap(v1), false));
      LocalGrant g = e.grant("k", 0, v1.length, LEASE);
      Path segment = dir.resolve(g.pieces().get(0).file());
      overwriteUntilRolled(e, "k");
      TyrEngine.Compaction c = e.compact();
      assertThat(Files.exists(segment)).as("pinned segment after compaction").isTrue();
      assertArrayEquals(v1, readGrant(g)); // the old version, though the blob moved on
      assertThat(c.bytesReclaimed()).isNotNegative();

      assertThat(e.release(g.id())).isTrue();
      assertThat(e.release(g.id())).as("a second release").isFalse();
      e.compact();
      assertThat(Files.exists(segment)).as("segment once released").isFalse();
    }
  }

  @Test
  void anExpiredLeaseNoLongerPins() throws IOException, InterruptedException {
    try (TyrEngine e = open()) {
      commit(e, new TxOp.Put("k", ByteBuffer.wrap(random(40_000, 5)), false));
      LocalGrant g = e.grant("k", 0, 40_000, Duration.ofMillis(1));
      Path segment = dir.resolve(g.pieces().get(0).file());
      overwriteUntilRolled(e, "k");
      Thread.sleep(5);
      e.compact();
      assertThat(Files.exists(segment)).isFalse();
      assertThat(e.pinnedGrants()).isZero();
    }
  }

  /** Overwrites a blob until the log has moved two segments on: the old ones are dead. */
  private static void overwriteUntilRolled(TyrEngine e, String key) throws IOException {
    for (int i = 0; i < 8; i++) {
      commit(e, new TxOp.Put(key, ByteBuffer.wrap(random(40_000, 100 + i)), false));
    }
  }
}
