package io.blobfs.rados;

import static org.junit.jupiter.api.Assertions.*;

import java.io.IOException;
import org.junit.jupiter.api.Test;

/** The index description every client reads at open: what it says, and what it refuses. */
class RadosIndexMetaTest {
  @Test
  void aDescriptionReadsBackAsWritten() throws IOException {
    for (boolean ready : new boolean[] {true, false}) {
      RadosIndexes.Meta m = new RadosIndexes.Meta(16, ready);
      assertEquals(m, RadosIndexes.Meta.decode(m.encode()));
    }
    assertEquals("blobfs-index 1\nshards=8\nstate=ready\n",
        new RadosIndexes.Meta(8, true).encode());
  }

  @Test
  void anythingElseIsRefusedRatherThanGuessed() {
    for (String bad : new String[] {"", "blobfs-index 2\nshards=8\nstate=ready\n",
        "blobfs-index 1\nstate=ready\n", "blobfs-index 1\nshards=0\nstate=ready\n",
        "blobfs-index 1\nshards=x\n"}) {
      assertThrows(IOException.class, () -> RadosIndexes.Meta.decode(bad), bad);
    }
  }

  @Test
  void anUnknownStateIsNotReady() throws IOException {
    assertFalse(RadosIndexes.Meta.decode("blobfs-index 1\nshards=8\nstate=odd\n").ready());
  }
}
