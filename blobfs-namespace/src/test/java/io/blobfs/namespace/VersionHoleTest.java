package io.blobfs.namespace;

import static org.junit.jupiter.api.Assertions.*;

import java.io.IOException;
import java.util.Arrays;
import org.junit.jupiter.api.Test;

/** What a version must write of a stripe it does not take over: every byte of it (I4). */
class VersionHoleTest extends SharedStripesFixture {
  private static final FsPath F = FsPath.parse("/d/f");

  private void base() throws IOException {
    try (FileWriter w = ns.create(F, true)) {
      w.write(bytes, 0, LENGTH);
    }
  }

  /** Correct writers: out of order, rewritten, short last stripe, grown, shrunk. */
  @Test
  void correctVersionsAreAccepted() throws Exception {
    for (boolean tx : new boolean[] {false, true}) {
      open(tx);
      base();
      // stripe 2 in three out-of-order writes, one range rewritten, short last stripe
      FileWriter w = ns.createVersion(F, ns.getFileInfo(F));
      w.setLength(LENGTH);
      assertEquals(stripes(0, 1), w.takeOver(stripes(0, 1)));
      w.seek(3L * S);
      w.write(bytes, 3 * S, LENGTH - 3 * S); // short last stripe
      w.seek(2L * S + 3000);
      w.write(bytes, 2 * S + 3000, S - 3000);
      w.seek(2L * S);
      w.write(bytes, 2 * S, 1000);
      w.awaitWrites();
      w.seek(2L * S);
      w.write(bytes, 2 * S, 3000);
      w.close();
      assertArrayEquals(Arrays.copyOf(bytes, LENGTH), read(F.toString()), "tx=" + tx);
      // grown by 2 stripes + 7 bytes, then shrunk to 1.5 stripes
      int grown = LENGTH + 100 + 2 * S + 7;
      byte[] g = new byte[grown];
      for (int i = 0; i < grown; i++) {
        g[i] = (byte) (i * 31 + 7);
      }
      System.arraycopy(bytes, 0, g, 0, LENGTH);
      w = ns.createVersion(F, ns.getFileInfo(F));
      w.setLength(grown);
      assertEquals(stripes(0, 1, 2), w.takeOver(stripes(0, 1, 2)));
      w.seek(3L * S);
      w.write(g, 3 * S, grown - 3 * S);
      w.close();
      assertArrayEquals(g, read(F.toString()), "grown tx=" + tx);
      int shrunk = S + S / 2;
      w = ns.createVersion(F, ns.getFileInfo(F));
      w.setLength(shrunk);
      assertEquals(stripes(0), w.takeOver(stripes(0, 1)));
      w.seek(S);
      w.write(g, S, shrunk - S);
      w.close();
      assertArrayEquals(Arrays.copyOf(g, shrunk), read(F.toString()), "shrunk tx=" + tx);
    }
  }

  /**
   * A stripe with a hole is refused even when a range was sent twice (it passed a count
   * of bytes sent, second review of stripes-writer, SF1): stripe 2 gets
   * [0,1024) three times and [3072,4096) once (4096 bytes sent), [1024,3072) never
   * written: close() refuses it and the name keeps the base.
   */
  @Test
  void aStripeWithAHoleAfterARewriteIsRefused() throws Exception {
    open(false);
    base();
    FileWriter w = ns.createVersion(F, ns.getFileInfo(F));
    w.setLength(LENGTH);
    assertEquals(stripes(0, 1, 3), w.takeOver(stripes(0, 1, 3)));
    for (int i = 0; i < 3; i++) {
      w.awaitWrites();
      w.seek(2L * S);
      w.write(bytes, 2 * S, 1024);
    }
    w.seek(2L * S + 3072);
    w.write(bytes, 2 * S + 3072, 1024);
    IOException refused = null;
    try {
      w.close();
    } catch (IOException e) {
      refused = e;
    }
    String served;
    try {
      byte[] got = read(F.toString());
      served = Arrays.equals(bytes, Arrays.copyOf(got, LENGTH)) ? "the base's bytes"
          : "other bytes (hole read as " + got[2 * S + 2000] + ")";
    } catch (IOException e) {
      served = e.toString();
    }
    assertNotNull(refused, "a stripe with a 2048-byte hole was published; a read gives: "
        + served);
    assertTrue(refused.getMessage().contains("its bytes from 1024 of 4096 were never written"),
        refused.toString());
    assertEquals("the base's bytes", served);
  }
}
