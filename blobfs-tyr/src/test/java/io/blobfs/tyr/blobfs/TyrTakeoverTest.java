package io.blobfs.tyr.blobfs;

import static org.junit.jupiter.api.Assertions.*;

import io.blobfs.namespace.BaseChangedException;
import io.blobfs.namespace.BlobNamespace;
import io.blobfs.namespace.FileReader;
import io.blobfs.namespace.FileWriter;
import io.blobfs.namespace.FsPath;
import io.blobfs.namespace.NamespaceOptions;
import io.blobfs.namespace.OrphanSweeper;
import io.blobfs.namespace.StoreCallCounters;
import io.blobfs.store.BlobStore;
import io.blobfs.store.Futures;
import io.blobfs.store.ScanPage;
import java.io.FileNotFoundException;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Arrays;
import java.util.BitSet;
import java.util.Random;
import java.util.Set;
import java.util.TreeSet;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Shared stripes, step 3 (issue 16) against a Týr server on loopback TCP: the takeover
 * commit is one Týr transaction (the name's put and check, the ADOPTED lock's put and
 * check, the deletes of what the base named and the new version does not). What the
 * memory store shows in {@code TakeoverCommitTest}, through the real client and server.
 */
class TyrTakeoverTest {
  private static final int S = 4096;
  private static final int LENGTH = 4 * S - 100;
  private static final FsPath F = FsPath.parse("/d/f");

  @TempDir
  Path dir;

  private static BlobNamespace namespace(BlobStore store) {
    return new BlobNamespace(store, new NamespaceOptions(S, S, 64 << 10, 1024, false, 100),
        StoreCallCounters.NONE);
  }

  private static String publish(BlobNamespace ns, byte[] content) throws IOException {
    try (FileWriter w = ns.create(F, true)) {
      w.write(content, 0, content.length);
    }
    return ns.getFileInfo(F).record().fileId();
  }

  /** A version of the file taking every stripe over but {@code s}, rewritten from content. */
  private static String rewrite(BlobNamespace ns, byte[] content, int s) throws IOException {
    FileWriter w = ns.createVersion(F, ns.getFileInfo(F));
    w.setLength(content.length);
    BitSet take = new BitSet();
    take.set(0, 4);
    take.clear(s);
    assertEquals(take, w.takeOver(take));
    w.seek((long) s * S);
    w.write(content, s * S, Math.min(S, content.length - s * S));
    w.close();
    return ns.getFileInfo(F).record().fileId();
  }

  private static byte[] rewritten(byte[] from, int s, int seed) {
    byte[] out = from.clone();
    byte[] fresh = new byte[S];
    new Random(seed).nextBytes(fresh);
    System.arraycopy(fresh, 0, out, s * S, Math.min(S, out.length - s * S));
    return out;
  }

  private static byte[] read(BlobNamespace ns) throws IOException {
    FileReader r = ns.open(F);
    ByteBuffer back = ByteBuffer.allocate((int) r.length());
    while (back.hasRemaining()) {
      assertTrue(Futures.await(r.read(back.position(), back)) > 0);
    }
    return back.array();
  }

  private static Set<String> keys(BlobStore store) throws IOException {
    Set<String> all = new TreeSet<>();
    String cursor = null;
    do {
      ScanPage page = store.scan("d/", cursor, 1000);
      all.addAll(page.keys());
      cursor = page.nextCursor();
    } while (cursor != null);
    return all;
  }

  @Test
  void versionsTakeOverStripesAndADeleteLeavesNoKey() throws Exception {
    try (LocalTyrNode node = new LocalTyrNode(dir); BlobStore store = node.store("t")) {
      BlobNamespace ns = namespace(store);
      byte[] bytes = new byte[LENGTH];
      new Random(7).nextBytes(bytes);
      String a = publish(ns, bytes);
      FileReader old = ns.open(F);
      byte[] v2 = rewritten(bytes, 2, 11);
      String b = rewrite(ns, v2, 2);
      assertEquals(Set.of("d/" + a + "/0", "d/" + a + "/1", "d/" + a + "/3", "d/" + b + "/2",
          "d/" + a + "/lock"), keys(store));
      byte[] lock = store.readWithVersion("d/" + a + "/lock", 64).bytes();
      assertEquals('A', lock[1]); // ADOPTED
      assertArrayEquals(v2, read(ns));
      // The reader of A, open across B: A's bytes or gone, never B's.
      ByteBuffer stripe2 = ByteBuffer.allocate(S);
      try {
        while (stripe2.hasRemaining()) {
          assertTrue(Futures.await(old.read(2L * S + stripe2.position(), stripe2)) > 0);
        }
        assertArrayEquals(Arrays.copyOfRange(bytes, 2 * S, 3 * S), stripe2.array());
      } catch (FileNotFoundException gone) {
        // deleted with the commit: as any replaced file's data
      }
      Thread.sleep(5);
      new OrphanSweeper(ns).sweep(Duration.ZERO, false);
      assertEquals(5, keys(store).size());
      assertArrayEquals(v2, read(ns));

      byte[] v3 = rewritten(v2, 1, 12);
      String c = rewrite(ns, v3, 1);
      assertEquals(Set.of("d/" + a + "/0", "d/" + a + "/3", "d/" + a + "/lock",
          "d/" + b + "/2", "d/" + b + "/lock", "d/" + c + "/1"), keys(store));
      assertArrayEquals(v3, read(ns));
      assertTrue(ns.delete(F, false));
      assertEquals(Set.of(), keys(store));
    }
  }

  @Test
  void aReplacedBaseFailsTypedAndPublishesNothing() throws Exception {
    try (LocalTyrNode node = new LocalTyrNode(dir); BlobStore store = node.store("t")) {
      BlobNamespace ns = namespace(store);
      byte[] bytes = new byte[LENGTH];
      new Random(8).nextBytes(bytes);
      publish(ns, bytes);
      FileWriter w = ns.createVersion(F, ns.getFileInfo(F));
      w.setLength(LENGTH);
      BitSet take = new BitSet();
      take.set(0, 3);
      w.takeOver(take);
      w.seek(3L * S);
      w.write(bytes, 3 * S, LENGTH - 3 * S);
      byte[] theirs = rewritten(bytes, 0, 9);
      String other = publish(ns, theirs);
      assertThrows(BaseChangedException.class, w::close);
      assertArrayEquals(theirs, read(ns));
      assertEquals(Set.of("d/" + other + "/0", "d/" + other + "/1", "d/" + other + "/2",
          "d/" + other + "/3"), keys(store));
    }
  }
}
