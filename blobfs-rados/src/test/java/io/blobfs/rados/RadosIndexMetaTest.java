package io.blobfs.rados;

import static org.junit.jupiter.api.Assertions.*;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.time.Duration;
import org.junit.jupiter.api.Test;

/** The index description every client reads at open: what it says, and what it refuses. */
class RadosIndexMetaTest {
  @Test
  void aDescriptionReadsBackAsWritten() throws IOException {
    for (boolean ready : new boolean[] {true, false}) {
      RadosIndexes.Meta m = new RadosIndexes.Meta(16, ready, Duration.ofMinutes(30));
      assertEquals(m, RadosIndexes.Meta.decode(m.encode()));
    }
    assertEquals("blobfs-index 1\nshards=8\nstate=ready\ngrace-ms=600000\n",
        new RadosIndexes.Meta(8, true, Duration.ofMinutes(10)).encode());
  }

  @Test
  void aDescriptionWrittenBeforeTheGraceWasRecordedHasTheDefault() throws IOException {
    assertEquals(Duration.ofMinutes(10),
        RadosIndexes.Meta.decode("blobfs-index 1\nshards=8\nstate=ready\n").grace());
  }

  @Test
  void theToolRefusesANamespaceWithASlashBeforeConnecting() throws IOException {
    ByteArrayOutputStream err = new ByteArrayOutputStream();
    assertEquals(2, RadosIndexTool.run(new String[] {"fsck", "--pool", "p", "--namespace",
        "a/index", "--conf", "/nonexistent/ceph.conf"}, System.out, new PrintStream(err)));
    assertTrue(err.toString().contains("without '/'"), err.toString());
  }

  @Test
  void theToolRefusesAShardCountOutOfRangeBeforeConnecting() throws IOException {
    for (String bad : new String[] {"0", "x", "2000"}) {
      ByteArrayOutputStream err = new ByteArrayOutputStream();
      assertEquals(2, RadosIndexTool.run(new String[] {"build", "--pool", "p", "--shards", bad,
          "--conf", "/nonexistent/ceph.conf"}, System.out, new PrintStream(err)), bad);
      assertTrue(err.toString().contains("--shards"), err.toString());
    }
  }

  @Test
  void anythingElseIsRefusedRatherThanGuessed() {
    for (String bad : new String[] {"", "blobfs-index 2\nshards=8\nstate=ready\n",
        "blobfs-index 1\nstate=ready\n", "blobfs-index 1\nshards=0\nstate=ready\n",
        "blobfs-index 1\nshards=x\n", "blobfs-index 1\nshards=8\ngrace-ms=-1\n"}) {
      assertThrows(IOException.class, () -> RadosIndexes.Meta.decode(bad), bad);
    }
  }

  @Test
  void anUnknownStateIsNotReady() throws IOException {
    assertFalse(RadosIndexes.Meta.decode("blobfs-index 1\nshards=8\nstate=odd\n").ready());
  }
}
